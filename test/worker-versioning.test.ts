/**
 * Worker Versioning on a real Temporal dev server (DESIGN §16): a sandbox stays pinned to
 * the build that started it while a new build is rolled out and promoted, and
 * `sandboxctl deployment` says what still runs on each build.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Worker } from '@temporalio/worker';
import type { DeploymentReport } from '../src/domain/deployment';
import { createLogger } from '../src/logging/logger';
import { loadConfig } from '../src/config/config';
import { createPlaneWorker, type PlaneWorker } from '../src/worker/plane-worker';
import { runCli } from './harness/cli';
import { eventually } from './harness/eventually';
import { createTestNamespace } from './helpers/test-namespace';
import { testTemporalAddress } from './harness/test-temporal';
import { startTestWorker, testDataConverter, type TestWorker } from './harness/test-worker';
import { testWorkflowBundle } from './harness/workflow-bundle';

/** The build a run is pinned to, as Temporal's describe says (and its behaviour). */
async function pinOf(client: Client, sandboxId: string): Promise<{ buildId: string | undefined; behavior: number | null | undefined }> {
  const description = await client.workflow.getHandle(`sandbox-${sandboxId}`).describe();
  const info = description.raw.workflowExecutionInfo?.versioningInfo;
  return { buildId: info?.deploymentVersion?.buildId ?? undefined, behavior: info?.behavior };
}

const PINNED = 1; // temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED

/** `sandboxctl deployment --json`, as an operator reads it. */
async function deploymentReport(env: Record<string, string>): Promise<DeploymentReport> {
  const result = await runCli(['deployment', '--json'], env);
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout) as DeploymentReport;
}

describe('rolling out a new lifecycle build with Worker Versioning', () => {
  let a: TestWorker;
  let b: PlaneWorker | undefined;
  let bRunning: Promise<void> | undefined;
  let cliEnv: Record<string, string>;

  const deployment = () => deploymentReport(cliEnv);
  const buildOf = (report: DeploymentReport, buildId: string) => report.builds.find((build) => build.buildId === buildId);

  before(async () => {
    const address = await testTemporalAddress();
    const namespace = await createTestNamespace(address, 'versioning');
    a = await startTestWorker(address, { env: { TEMPORAL_NAMESPACE: namespace, SANDBOXPLANE_BUILD_ID: 'build-a' } });
    a.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
    cliEnv = { TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: namespace, SANDBOXPLANE_TASK_QUEUE: a.config.taskQueue, SANDBOXPLANE_DEPLOYMENT: a.config.deployment.name };
  });
  after(async () => {
    b?.worker.shutdown();
    await bRunning;
    await b?.close();
    await a?.stop();
  });

  test('the first build of a plane makes itself current', async () => {
    const report = await eventually('build-a to be current', async () => {
      const seen = await deployment();
      return seen.current === 'build-a' ? seen : undefined;
    });
    assert.deepEqual(buildOf(report, 'build-a'), { buildId: 'build-a', current: true, pollers: 1, openRuns: 0 });
    assert.equal(report.unversionedOpenRuns, 0);
  });

  test('a sandbox started on A stays pinned to A after B is promoted; a new one runs on B; both extend and end', async () => {
    const first = await a.sandboxes.create({ id: 'on-a', principal: 'agent-1', services: ['s3'], ttlSeconds: 600 }, { wait: 'ready' });
    assert.equal(first.state, 'READY');
    assert.deepEqual(await pinOf(a.client, 'on-a'), { buildId: 'build-a', behavior: PINNED });

    // Build B: a lifecycle worker alone, as a rollout starts it; store and docker stay as they are.
    const config = loadConfig({ ...a.env, SANDBOXPLANE_BUILD_ID: 'build-b', SANDBOXPLANE_WORKER_ROLES: 'lifecycle' });
    b = await createPlaneWorker({ config, logger: createLogger('error'), workflowBundle: await testWorkflowBundle() });
    bRunning = b.worker.run();
    const before = await eventually('build-b to poll', async () => {
      const seen = await deployment();
      return (buildOf(seen, 'build-b')?.pollers ?? 0) > 0 ? seen : undefined;
    });
    assert.equal(before.current, 'build-a', 'a new build does not make itself current while another is');

    const promoted = await runCli(['deployment', 'promote', 'build-b', '--json'], cliEnv);
    assert.equal(promoted.code, 0, promoted.stderr);
    assert.equal((JSON.parse(promoted.stdout) as DeploymentReport).current, 'build-b');

    const second = await a.sandboxes.create({ id: 'on-b', principal: 'agent-2', services: ['s3'], ttlSeconds: 600 }, { wait: 'ready' });
    assert.equal(second.state, 'READY');
    assert.deepEqual(await pinOf(a.client, 'on-b'), { buildId: 'build-b', behavior: PINNED });
    assert.deepEqual(await pinOf(a.client, 'on-a'), { buildId: 'build-a', behavior: PINNED }, 'the first sandbox stays on A');

    const open = await eventually('A to show its one open run', async () => {
      const seen = await deployment();
      return buildOf(seen, 'build-a')?.openRuns === 1 && buildOf(seen, 'build-b')?.openRuns === 1 ? seen : undefined;
    });
    assert.equal(open.current, 'build-b');
    assert.equal(buildOf(open, 'build-a')?.current, false);

    for (const id of ['on-a', 'on-b']) {
      const extended = await a.sandboxes.extend(id, { ttlSeconds: 900 });
      assert.equal(extended.state, 'READY');
      const destroyed = await a.sandboxes.destroy(id, { reason: 'rollout test' });
      assert.equal(destroyed.state, 'DESTROYED');
    }
    assert.deepEqual(await pinOf(a.client, 'on-a'), { buildId: 'build-a', behavior: PINNED }, 'A served its run to the end');

    await eventually('A to have no open run', async () => {
      const seen = await deployment();
      return buildOf(seen, 'build-a')?.openRuns === 0 ? seen : undefined;
    });
  });

  test('promoting a build no lifecycle worker polls with is refused, exit 3, and changes nothing', async () => {
    const result = await runCli(['deployment', 'promote', 'build-z', '--json'], cliEnv);
    assert.equal(result.code, 3, result.stderr);
    assert.equal((JSON.parse(result.stderr) as { error: { code: string } }).error.code, 'PROMOTION_REFUSED');
    assert.equal((await deployment()).current, 'build-b');
    const badId = await runCli(['deployment', 'promote', 'build:x'], cliEnv);
    assert.equal(badId.code, 2, badId.stderr);
  });
});

describe('the first versioned build and runs of a release before Worker Versioning', () => {
  let roles: TestWorker;
  let unversioned: Worker;
  let unversionedRunning: Promise<void>;
  let lifecycle: PlaneWorker;
  let lifecycleRunning: Promise<void>;
  let cliEnv: Record<string, string>;

  before(async () => {
    const address = await testTemporalAddress();
    const namespace = await createTestNamespace(address, 'unversioned');
    roles = await startTestWorker(address, { env: { TEMPORAL_NAMESPACE: namespace, SANDBOXPLANE_WORKER_ROLES: 'store,docker' } });
    roles.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
    cliEnv = { TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: namespace, SANDBOXPLANE_TASK_QUEUE: roles.config.taskQueue, SANDBOXPLANE_DEPLOYMENT: roles.config.deployment.name };
    // The lifecycle worker of an earlier release: the same workflows, no build, no versioning behaviour.
    const connection = await NativeConnection.connect({ address });
    const workflowBundle = await bundleWorkflowCode({ workflowsPath: require.resolve('./helpers/unpinned-workflows'), logger: new DefaultLogger('WARN') });
    unversioned = await Worker.create({ connection, namespace, taskQueue: roles.config.taskQueue, workflowBundle, dataConverter: testDataConverter() });
    unversionedRunning = unversioned.run().finally(() => connection.close());
  });
  after(async () => {
    lifecycle?.worker.shutdown();
    await lifecycleRunning;
    await lifecycle?.close();
    if (unversioned?.getState() === 'RUNNING') unversioned.shutdown();
    await unversionedRunning;
    await roles?.stop();
  });

  test('a first build does not take over their runs; promote refuses (exit 3) until they have ended', async () => {
    const old = await roles.sandboxes.create({ id: 'old-release', principal: 'agent-1', services: ['s3'], ttlSeconds: 600 }, { wait: 'ready' });
    assert.equal(old.state, 'READY');

    const config = loadConfig({ ...roles.env, SANDBOXPLANE_BUILD_ID: 'first-build', SANDBOXPLANE_WORKER_ROLES: 'lifecycle' });
    lifecycle = await createPlaneWorker({ config, logger: createLogger('error'), workflowBundle: await testWorkflowBundle() });
    lifecycleRunning = lifecycle.worker.run();
    const report = await eventually('first-build to poll and the old run to be counted', async () => {
      const seen = await deploymentReport(cliEnv);
      return seen.builds.some((build) => build.buildId === 'first-build' && build.pollers > 0) && seen.unversionedOpenRuns === 1 ? seen : undefined;
    });
    assert.equal(report.current, null, 'the worker did not make itself current over an open run of the earlier release');

    const refused = await runCli(['deployment', 'promote', 'first-build', '--json'], cliEnv);
    assert.equal(refused.code, 3, refused.stderr);
    assert.match(refused.stderr, /PROMOTION_REFUSED.*1 run\(s\)/s);

    // The earlier release's run ends on the earlier release's worker.
    assert.equal((await roles.sandboxes.destroy('old-release')).state, 'DESTROYED');
    await eventually('no run of the earlier release to be open', async () => ((await deploymentReport(cliEnv)).unversionedOpenRuns === 0 ? true : undefined));
    const promoted = await runCli(['deployment', 'promote', 'first-build', '--json'], cliEnv);
    assert.equal(promoted.code, 0, promoted.stderr);
    assert.equal((JSON.parse(promoted.stdout) as DeploymentReport).current, 'first-build');
    const next = await roles.sandboxes.create({ id: 'first-build-run', principal: 'agent-2', services: ['s3'], ttlSeconds: 600 }, { wait: 'ready' });
    assert.equal(next.state, 'READY');
    assert.deepEqual(await pinOf(roles.client, 'first-build-run'), { buildId: 'first-build', behavior: PINNED });
    assert.equal((await roles.sandboxes.destroy('first-build-run')).state, 'DESTROYED');
  });
});
