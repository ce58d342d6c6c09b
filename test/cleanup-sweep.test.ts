import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { ensureCleanupSchedule, triggerSweep } from '../src/client/cleanup-schedule';
import { CLEANUP_SCHEDULE_ID, CLEANUP_WORKFLOW } from '../src/domain/contract-names';
import { DEFAULT_HOST_ID } from '../src/domain/task-queues';
import { SandboxClient } from '../src/client/sandbox-client';
import { PLANE_LABEL, sandboxContainerLabels, SANDBOX_ID_LABEL } from '../src/domain/docker-labels';
import { SandboxPlaneError } from '../src/domain/errors';
import { NETWORK_POOL_LABEL } from '../src/domain/network-pool';
import type { SweepReport } from '../src/domain/leaks';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import { DockerContainerBroker, type ContainerBroker } from '../src/docker';
import { Store } from '../src/store';
import { eventually } from './harness/eventually';
import { assertReplays, fetchHistories } from './helpers/replay-histories';
import { runCli, spawnCli, stopChild } from './harness/cli';
import { testTemporalAddress } from './harness/test-temporal';
import { createTestNamespace } from './helpers/test-namespace';
import { projectionSnapshot } from './helpers/projection-row';
import { startTestWorker, type TestWorker } from './harness/test-worker';

const MIB = 1024 * 1024;
const motoImage = process.env.SANDBOXPLANE_MOTO_IMAGE as string;
const testImage = process.env.SANDBOXPLANE_TEST_IMAGE ?? 'local/sandboxplane-testhttp:1';

/** A container that looks like ours (labels, limits) but belongs to no sandbox. */
async function strayContainer(broker: ContainerBroker, imageId: string, sandboxId: string, extraLabels: Record<string, string> = {}): Promise<string> {
  const info = await broker.run({
    image: imageId,
    labels: { ...extraLabels, ...sandboxContainerLabels(sandboxId, 'moto') },
    limits: { memoryBytes: 32 * MIB, pidsLimit: 16, nanoCpus: 500_000_000, logMaxBytes: MIB, logFiles: 2 },
  });
  return info.id;
}

async function sweepOnce(worker: TestWorker): Promise<SweepReport> {
  return worker.client.workflow.execute(CLEANUP_WORKFLOW, {
    taskQueue: worker.config.taskQueue,
    workflowId: `test-sweep-${randomUUID()}`,
    workflowExecutionTimeout: '2 minutes',
  });
}

describe('cleanup sweep on a real dev server and engine', () => {
  const broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
  let address: string;
  let namespace: string;
  let imageId: string;
  let worker: TestWorker;
  const strays: string[] = [];

  before(async () => {
    assert.ok(motoImage, 'the test runner exports SANDBOXPLANE_MOTO_IMAGE');
    address = await testTemporalAddress();
    namespace = await createTestNamespace(address, 'sweep');
    imageId = execFileSync('docker', ['image', 'inspect', '--format', '{{.Id}}', testImage], { encoding: 'utf8' }).trim();
    worker = await startTestWorker(address, {
      // An hourly health watch: what it does in the mismatch test, it does because the sweep handed it over.
      env: { TEMPORAL_NAMESPACE: namespace, SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1', SANDBOXPLANE_MOTO_IMAGE: motoImage, SANDBOXPLANE_HEALTH_INTERVAL: '1h' },
      // The worker's own broker: a container this test stops or removes through it is one the
      // engine's death watch takes for the worker's own doing and leaves alone, so the deaths
      // here are the ones that watch misses, and only the sweep can find them.
      broker,
    });
    worker.store.policies.add({ principalPattern: '*', capability: 'cloud.sandbox', effect: 'allow' });
  });

  /** The worker's broker with some verbs replaced: a test's view of (or fault in) the engine calls a sweep makes. */
  function brokerWith(overrides: Partial<ContainerBroker>): ContainerBroker {
    return {
      run: (spec) => broker.run(spec),
      inspect: (id, options) => broker.inspect(id, options),
      stats: (id) => broker.stats(id),
      list: (labels) => broker.list(labels),
      ping: () => broker.ping(),
      engineId: () => broker.engineId(),
      engineMemoryBytes: () => broker.engineMemoryBytes(),
      rename: (current, newName) => broker.rename(current, newName),
      listNetworks: (labels) => broker.listNetworks(labels),
      removeNetwork: (name) => broker.removeNetwork(name),
      stop: (id, options) => broker.stop(id, options),
      remove: (id, options) => broker.remove(id, options),
      ...overrides,
    };
  }

  after(async () => {
    for (const id of strays) await broker.remove(id, { force: true }).catch(() => undefined);
    for (const container of await broker.list({})) {
      const sandboxId = container.labels[SANDBOX_ID_LABEL] ?? '';
      if (sandboxId.startsWith('sweep-')) await broker.remove(container.id, { force: true });
    }
    await worker?.stop();
  });

  test('starting twice leaves exactly one schedule; a changed interval updates it', async () => {
    const options = { taskQueue: worker.config.taskQueue, intervalSeconds: 3600 };
    assert.equal(await ensureCleanupSchedule(worker.client, options), 'created');
    assert.equal(await ensureCleanupSchedule(worker.client, options), 'unchanged');
    assert.equal(await ensureCleanupSchedule(worker.client, { ...options, intervalSeconds: 1800 }), 'updated');
    const ids: string[] = [];
    for await (const schedule of worker.client.schedule.list()) ids.push(schedule.scheduleId);
    assert.deepEqual(ids, [CLEANUP_SCHEDULE_ID]);
    const description = await worker.client.schedule.getHandle(CLEANUP_SCHEDULE_ID).describe();
    assert.equal(description.spec.intervals?.[0]?.every, 1_800_000);
    assert.equal(description.policies.overlap, 'SKIP');
  });

  test('an orphan is removed; a live sandbox is untouched; a stranded row is closed with a reconciled audit row', async () => {
    const live = await worker.sandboxes.create({ id: 'sweep-live', principal: 'agent-1', adapter: 'moto', services: ['s3'], ttlSeconds: 600 }, { wait: 'ready' });
    const [liveContainer] = await broker.list({ [SANDBOX_ID_LABEL]: 'sweep-live' });
    assert.ok(liveContainer);

    const ours = { [PLANE_LABEL]: worker.plane.planeId };
    const orphan = await strayContainer(broker, imageId, 'sweep-ghost', ours);
    strays.push(orphan);
    const foreign = await strayContainer(broker, imageId, 'sweep-foreign', { [PLANE_LABEL]: 'elsewhere@10.0.0.1:7233' });
    strays.push(foreign);
    const unlabelled = await strayContainer(broker, imageId, 'sweep-unlabelled');
    strays.push(unlabelled);
    worker.store.sandboxes.record(projectionSnapshot({ id: 'sweep-stranded', runId: 'run-that-never-was', adapter: 'moto' }), {
      step: 1,
      action: 'requested',
      actor: 'test',
      effect: 'requested',
      reason: null,
      summary: {},
    });

    const { report } = await triggerSweep(worker.client, { wait: true });
    assert.ok(report);
    assert.equal(report.counts.removed, 1);
    assert.deepEqual(
      report.removed.map((finding) => [finding.kind, finding.subject, finding.sandboxId]),
      [['orphan_container', orphan, 'sweep-ghost']],
    );
    assert.deepEqual(await broker.list({ [SANDBOX_ID_LABEL]: 'sweep-ghost' }), [], 'the orphan is gone');
    assert.equal((await broker.list({ [SANDBOX_ID_LABEL]: 'sweep-foreign' })).length, 1, "another plane's container is not ours to judge");
    assert.equal((await broker.list({ [SANDBOX_ID_LABEL]: 'sweep-unlabelled' })).length, 1, 'a container without a plane label is foreign too');
    assert.ok(![...report.removed, ...report.remaining].some((finding) => finding.subject === foreign || finding.subject === unlabelled));
    const [liveLabels] = await broker.list({ [SANDBOX_ID_LABEL]: 'sweep-live' });
    assert.match(worker.plane.planeId, new RegExp(`^${namespace}-[0-9a-f]{16}$`), "derived from Temporal's cluster and namespace ids");
    assert.equal(liveLabels?.labels[PLANE_LABEL], worker.plane.planeId, 'our containers carry our plane');

    assert.deepEqual(
      (await broker.list({ [SANDBOX_ID_LABEL]: 'sweep-live' })).map((c) => c.id),
      [liveContainer.id],
      'live work untouched',
    );
    assert.equal((await worker.sandboxes.status('sweep-live')).state, 'READY');
    assert.equal(live.state, 'READY');

    assert.deepEqual(report.reconciled, [{ sandboxId: 'sweep-stranded', state: 'DESTROYED' }]);
    assert.equal(worker.store.sandboxes.state('sweep-stranded'), 'DESTROYED', 'Temporal has no workflow for it: the row is closed');
    const reconciled = worker.store.sandboxes.audit('sweep-stranded').at(-1);
    assert.deepEqual([reconciled?.action, reconciled?.actor], ['reconciled', 'sweep']);
    assert.match(reconciled?.reason ?? '', /projection says PROVISIONING but no workflow runs for it/);
    assert.deepEqual(worker.store.leaks.outstanding(), []);

    const cliEnv = { ...worker.env, TEMPORAL_NAMESPACE: namespace };
    const sweep = await runCli(['sweep', '--wait', '--json'], cliEnv);
    assert.equal(sweep.code, 0, sweep.stderr);
    const cliReport = JSON.parse(sweep.stdout) as SweepReport;
    assert.equal(cliReport.counts.removed, 0);
    assert.equal(cliReport.counts.stranded, 0, 'a closed row is not stranded again');
    assert.ok(cliReport.counts.containers >= 1);
    const leaks = await runCli(['leaks', '--json'], cliEnv);
    assert.equal(leaks.code, 0, leaks.stderr);
    assert.deepEqual((JSON.parse(leaks.stdout) as { leaks: { subject: string }[] }).leaks, []);
    await worker.sandboxes.destroy('sweep-live');
  });

  test('terminate leaves a READY sandbox behind; the next sweep removes its container and closes its row', async () => {
    await worker.sandboxes.create({ id: 'sweep-terminated', principal: 'agent-1', adapter: 'moto', services: ['s3'], ttlSeconds: 600 }, { wait: 'ready' });
    assert.equal((await broker.list({ [SANDBOX_ID_LABEL]: 'sweep-terminated' })).length, 1);
    await worker.client.workflow.getHandle('sandbox-sweep-terminated').terminate('test: an operator pressed Terminate');
    assert.equal(worker.store.sandboxes.state('sweep-terminated'), 'READY', 'nothing of the run closed it');

    const { report } = await triggerSweep(worker.client, { wait: true });
    assert.ok(report);
    assert.deepEqual(await broker.list({ [SANDBOX_ID_LABEL]: 'sweep-terminated' }), [], 'the container is gone');
    assert.ok(report.removed.some((finding) => finding.sandboxId === 'sweep-terminated'));
    assert.deepEqual(report.reconciled, [{ sandboxId: 'sweep-terminated', state: 'DESTROYED' }]);
    assert.equal(worker.store.sandboxes.state('sweep-terminated'), 'DESTROYED');
    assert.deepEqual(
      worker.store.sandboxes
        .audit('sweep-terminated')
        .slice(-2)
        .map((op) => op.action),
      ['orphan_removed', 'reconciled'],
    );
  });

  test('a container whose removal fails stays an outstanding leak after re-measuring', async () => {
    const stubborn = await strayContainer(broker, imageId, 'sweep-stubborn', { [PLANE_LABEL]: worker.plane.planeId });
    strays.push(stubborn);
    const refusing = brokerWith({
      stop: async (id, options) => {
        if (id === stubborn) throw new SandboxPlaneError('DOCKER_ENGINE_ERROR', 'device or resource busy (test)');
        return broker.stop(id, options);
      },
      remove: async (id, options) => {
        if (id === stubborn) throw new SandboxPlaneError('DOCKER_ENGINE_ERROR', 'device or resource busy (test)');
        return broker.remove(id, options);
      },
    });
    const sweeper = await startTestWorker(address, { env: { TEMPORAL_NAMESPACE: namespace }, broker: refusing });
    try {
      const report = await sweepOnce(sweeper);
      const kept = report.remaining.find((finding) => finding.subject === stubborn);
      assert.equal(kept?.kind, 'orphan_container');
      assert.match(kept?.detail ?? '', /still present after removal/);
      assert.ok(!report.removed.some((finding) => finding.subject === stubborn), 'never counted as removed');
      assert.ok(sweeper.store.leaks.outstanding().some((leak) => leak.subject === stubborn));
      assert.equal((await broker.list({ [SANDBOX_ID_LABEL]: 'sweep-stubborn' })).length, 1);
    } finally {
      await sweeper.stop();
    }
  });

  test('many orphans: all removed, at most SANDBOXPLANE_SWEEP_REMOVE_CONCURRENCY at once; one that fails is reported and the rest still go', async () => {
    const bound = 3;
    const orphans: string[] = [];
    for (let index = 0; index < 12; index += 1) orphans.push(await strayContainer(broker, imageId, `sweep-many-${index}`, { [PLANE_LABEL]: worker.plane.planeId }));
    strays.push(...orphans);
    const failing = orphans[4] as string;
    let inFlight = 0;
    let most = 0;
    const counting = brokerWith({
      remove: async (id, options) => {
        inFlight += 1;
        most = Math.max(most, inFlight);
        try {
          // Long enough for the removals the sweep lets run together to overlap here.
          await new Promise((resolve) => setTimeout(resolve, 50));
          if (id === failing) throw new SandboxPlaneError('DOCKER_ENGINE_ERROR', 'device or resource busy (test)');
          return await broker.remove(id, options);
        } finally {
          inFlight -= 1;
        }
      },
    });
    const sweeper = await startTestWorker(address, { env: { TEMPORAL_NAMESPACE: namespace, SANDBOXPLANE_SWEEP_REMOVE_CONCURRENCY: String(bound) }, broker: counting });
    try {
      const report = await sweepOnce(sweeper);
      assert.equal(most, bound, `removals ran ${bound} at once, never more`);
      const removed = new Set(report.removed.map((finding) => finding.subject));
      assert.deepEqual(
        orphans.filter((id) => !removed.has(id)),
        [failing],
        'every other orphan was removed',
      );
      const kept = report.remaining.find((finding) => finding.subject === failing);
      assert.equal(kept?.kind, 'orphan_container');
      assert.match(kept?.detail ?? '', /still present after removal \(.*device or resource busy \(test\)/);
      const left = (await broker.list({ [PLANE_LABEL]: worker.plane.planeId })).filter((container) => orphans.includes(container.id));
      assert.deepEqual(
        left.map((container) => container.id),
        [failing],
      );
      await assertReplays(await fetchHistories(sweeper.client, [`${report.workflowId}-${DEFAULT_HOST_ID}`]));
    } finally {
      await sweeper.stop();
    }
  });

  test('a host sweep the last landed build started (patched batched removal) replays on this build, where the patch is deprecated', async () => {
    // Recorded from 7e5fb15 (payloads decoded, so any key replays it): a sweep is AUTO_UPGRADE,
    // so this build's worker may take one up mid-run; its marker must still match.
    const history = historyFromJSON(JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', 'histories', 'host-sweep-patched.json'), 'utf8')));
    const events = history.events ?? [];
    assert.ok(
      events.some((event) => event.markerRecordedEventAttributes?.markerName === 'core_patch'),
      'the recorded sweep carries the patch marker',
    );
    assert.ok(events.some((event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'removeContainers'));
    await assertReplays([{ workflowId: 'host-sweep-patched', history }]);
  });

  test('a worker killed mid-create: the sweep leaves the half-made sandbox alone, and it resumes with one container', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-killed-'));
    const env = {
      TEMPORAL_ADDRESS: address,
      TEMPORAL_NAMESPACE: namespace,
      SANDBOXPLANE_TASK_QUEUE: `killed-${randomUUID()}`,
      SANDBOXPLANE_DB: path.join(dir, 'plane.sqlite'),
      SANDBOXPLANE_FLAG_CLOUD_SANDBOX: '1',
      SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1',
      SANDBOXPLANE_MOTO_IMAGE: motoImage,
    };
    const seed = Store.open(env.SANDBOXPLANE_DB);
    seed.policies.add({ principalPattern: '*', capability: 'cloud.sandbox', effect: 'allow' });
    seed.close();

    const doomed = spawnCli(['worker'], env);
    const creating = worker.client.workflow.getHandle('sandbox-sweep-resume');
    let resumed: TestWorker | undefined;
    try {
      const sandboxes = new SandboxClient({ client: worker.client, taskQueue: env.SANDBOXPLANE_TASK_QUEUE });
      await sandboxes.create({ id: 'sweep-resume', principal: 'agent-1', adapter: 'moto', services: ['s3'], ttlSeconds: 600 });
      const deadline = Date.now() + 60_000;
      while ((await broker.list({ [SANDBOX_ID_LABEL]: 'sweep-resume' })).length === 0) {
        if (Date.now() > deadline) assert.fail('the worker never started the container');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      doomed.kill('SIGKILL');
      await stopChild(doomed);

      resumed = await startTestWorker(address, {
        env: {
          TEMPORAL_NAMESPACE: namespace,
          SANDBOXPLANE_TASK_QUEUE: env.SANDBOXPLANE_TASK_QUEUE,
          SANDBOXPLANE_DB: env.SANDBOXPLANE_DB,
          SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1',
          SANDBOXPLANE_MOTO_IMAGE: motoImage,
        },
      });
      const report = await sweepOnce(resumed);
      assert.ok(!report.removed.some((finding) => finding.sandboxId === 'sweep-resume'), 'nothing live destroyed');
      assert.equal((await broker.list({ [SANDBOX_ID_LABEL]: 'sweep-resume' })).length, 1);

      const readyBy = Date.now() + 120_000;
      for (;;) {
        const status = await resumed.sandboxes.status('sweep-resume');
        if (status.state === 'READY') break;
        if (Date.now() > readyBy) assert.fail(`sandbox is ${status.state}: ${status.waitingFor}`);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      assert.equal((await broker.list({ [SANDBOX_ID_LABEL]: 'sweep-resume' })).length, 1, 'no duplicate container');
      await resumed.sandboxes.destroy('sweep-resume');
      assert.equal((await creating.describe()).status.name, 'COMPLETED');
    } finally {
      await stopChild(doomed, 'SIGKILL');
      await resumed?.stop();
      // What the killed worker left of its pre-made sealed networks, which a sweep of this plane would remove only past their grace.
      for (const network of await broker.listNetworks({ [PLANE_LABEL]: resumed?.plane.planeId ?? '', [NETWORK_POOL_LABEL]: resumed?.config.host.id ?? '' }))
        await broker.removeNetwork(network.id);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a worker restarted under another spelling of the address is the same plane; SANDBOXPLANE_PLANE_ID names another', async () => {
    const respelled = await startTestWorker(address.replace(/^127\.0\.0\.1:/, 'localhost:'), { env: { TEMPORAL_NAMESPACE: namespace } });
    const named = await startTestWorker(address, { env: { TEMPORAL_NAMESPACE: namespace, SANDBOXPLANE_PLANE_ID: 'sweep-ci-job-42' } });
    try {
      assert.equal(respelled.plane.planeId, worker.plane.planeId);
      assert.equal(named.plane.planeId, 'sweep-ci-job-42');
    } finally {
      await respelled.stop();
      await named.stop();
    }
  });

  test('DESTROY_FAILED leftovers are retried: the container goes and the row is closed DESTROYED; a foreign leftover keeps it open', async () => {
    const failedRow = (id: string, runtimeIds: readonly string[]) => {
      const snapshot = projectionSnapshot({ id, runId: `run-of-${id}`, adapter: 'moto', state: 'READY' });
      const write = (step: number, action: string, state: typeof snapshot.state, summary: Record<string, unknown>) =>
        worker.store.sandboxes.record({ ...snapshot, state }, { step, action, actor: 'test', effect: action, reason: null, summary });
      write(1, 'ready', 'READY', { endpoint: 'http://127.0.0.1:1', runtimeIds });
      write(2, 'destroy_failed', 'DESTROY_FAILED', { code: 'DESTROY_FAILED' });
    };
    const leftover = await strayContainer(broker, imageId, 'sweep-destroy-failed', { [PLANE_LABEL]: worker.plane.planeId });
    strays.push(leftover);
    failedRow('sweep-destroy-failed', [leftover]);
    const renamed = await strayContainer(broker, imageId, 'sweep-destroy-failed-foreign', { [PLANE_LABEL]: 'an-older-plane-id' });
    strays.push(renamed);
    failedRow('sweep-destroy-failed-foreign', [renamed]);
    failedRow('sweep-destroy-failed-gone', ['0'.repeat(64)]);

    const report = await sweepOnce(worker);
    assert.deepEqual(await broker.list({ [SANDBOX_ID_LABEL]: 'sweep-destroy-failed' }), [], 'the leftover is removed');
    assert.ok(report.removed.some((finding) => finding.subject === leftover));
    assert.deepEqual(
      report.reconciled.filter((entry) => entry.sandboxId.startsWith('sweep-destroy-failed')).sort((a, b) => a.sandboxId.localeCompare(b.sandboxId)),
      [
        { sandboxId: 'sweep-destroy-failed', state: 'DESTROYED' },
        { sandboxId: 'sweep-destroy-failed-gone', state: 'DESTROYED' },
      ],
    );
    assert.equal(worker.store.sandboxes.state('sweep-destroy-failed'), 'DESTROYED');
    const closing = worker.store.sandboxes.audit('sweep-destroy-failed').at(-1);
    assert.deepEqual([closing?.action, closing?.actor], ['reconciled', 'sweep']);
    assert.match(closing?.reason ?? '', /teardown failed \(DESTROY_FAILED\)/);

    assert.equal(worker.store.sandboxes.state('sweep-destroy-failed-foreign'), 'DESTROY_FAILED', 'never a false DESTROYED');
    assert.equal((await broker.inspect(renamed)).state, 'running', 'a container of another plane is never touched by the sweep');
    const open = report.remaining.find((finding) => finding.subject === 'sweep-destroy-failed-foreign');
    assert.equal(open?.kind, 'stranded_sandbox');
    assert.match(open?.detail ?? '', /recorded container .* is still present, labelled for plane an-older-plane-id/);
    assert.ok(worker.store.leaks.outstanding().some((leak) => leak.subject === 'sweep-destroy-failed-foreign'));

    const again = await sweepOnce(worker);
    assert.ok(!again.reconciled.some((entry) => entry.sandboxId.startsWith('sweep-destroy-failed')), 'nothing to write twice');
    assert.equal(worker.store.sandboxes.audit('sweep-destroy-failed-foreign').filter((op) => op.action === 'reconciled').length, 0);
  });

  test('mismatches under a running workflow are reported, never repaired by the sweep, and handed to the health watch', async () => {
    // The worker's health watch looks only hourly: what it does here, it does because the sweep handed it over.
    await worker.sandboxes.create({ id: 'sweep-mismatch', principal: 'agent-1', adapter: 'moto', services: ['s3'], ttlSeconds: 600 }, { wait: 'ready' });
    const [container] = await broker.list({ [SANDBOX_ID_LABEL]: 'sweep-mismatch' });
    assert.ok(container);
    await broker.stop(container.id, { timeoutSeconds: 0 });

    const exited = await sweepOnce(worker);
    const stopped = exited.remaining.find((finding) => finding.sandboxId === 'sweep-mismatch');
    assert.deepEqual([stopped?.kind, stopped?.subject], ['live_mismatch', container.id]);
    assert.match(stopped?.detail ?? '', /container exited under a READY sandbox/);
    assert.ok(!exited.removed.some((finding) => finding.sandboxId === 'sweep-mismatch'), 'not removed by the sweep');
    const actions = () => worker.store.sandboxes.audit('sweep-mismatch').map((op) => `${op.action}:${op.actor}`);
    assert.ok(!actions().some((action) => action.endsWith(':sweep')), 'the sweep wrote nothing to the sandbox');

    // Handed over: the sandbox's own health watch restarts the emulator, long before its hourly look.
    const restarted = await eventually('the health watch to restart the emulator', async () => {
      const status = await worker.sandboxes.status('sweep-mismatch');
      return status.health.restarts === 1 ? status : undefined;
    });
    assert.equal(restarted.state, 'READY');
    assert.notDeepEqual(restarted.runtimeIds, [container.id]);
    assert.ok(actions().includes('emulator_restarted:health-watch'));
    assert.equal(worker.store.sandboxes.state('sweep-mismatch'), 'READY');

    // Its new container vanishes altogether: READY with no container, reported, handed over
    // again — a second death, so the sandbox ends FAILED, torn down.
    for (const gone of await broker.list({ [SANDBOX_ID_LABEL]: 'sweep-mismatch' })) await broker.remove(gone.id, { force: true });
    const missing = await sweepOnce(worker);
    const none = missing.remaining.find((finding) => finding.sandboxId === 'sweep-mismatch');
    assert.deepEqual([none?.kind, none?.subject], ['live_mismatch', 'sweep-mismatch']);
    assert.match(none?.detail ?? '', /READY with no container/);
    assert.equal(missing.counts.liveMismatches, 1);
    const leaks = await runCli(['leaks', '--json'], { ...worker.env, TEMPORAL_NAMESPACE: namespace });
    assert.ok((JSON.parse(leaks.stdout) as { leaks: { kind: string; subject: string }[] }).leaks.some((leak) => leak.kind === 'live_mismatch' && leak.subject === 'sweep-mismatch'));

    const final = (await worker.client.workflow.getHandle('sandbox-sweep-mismatch').result()) as SandboxStatus;
    assert.equal(final.state, 'FAILED');
    assert.equal(final.error?.code, 'EMULATOR_DIED');
    assert.deepEqual(await broker.list({ [SANDBOX_ID_LABEL]: 'sweep-mismatch' }), []);
    const later = await sweepOnce(worker);
    assert.ok(!later.remaining.some((finding) => finding.sandboxId === 'sweep-mismatch'));
  });
});
