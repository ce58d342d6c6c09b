/**
 * Tracing's workflow interceptors (issue 28) are part of the workflow bundle, whatever is
 * configured. Two consequences, tested on a real dev server:
 *
 * - Their spans take ids from the workflow's random numbers, in update validators and
 *   queries too, which a replay does not run again: the workflow's random numbers are not
 *   replay-stable around them, so nothing the plane names comes from them (a snapshot's id
 *   is named by the store's activity). A worker without a workflow cache, where every task
 *   replays the history first, snapshots, restores, pauses and resumes a sandbox.
 * - A build that adds them is a new build: pinned lifecycles stay on theirs, but sweeps and
 *   store commands follow the current build (AUTO_UPGRADE, DESIGN §16), so histories of the
 *   build before, whose bundle had no interceptors, must replay on this one.
 *
 * And a run loads them only when a traced caller started it (workflows/tracing-interceptors.ts):
 * an untraced run holds none of OpenTelemetry while it is cached (docs/performance.md, P5).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { context, propagation, trace } from '@opentelemetry/api';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { Client } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import { bundleWorkflowCode } from '@temporalio/worker';
import { SandboxClient } from '../src/client/sandbox-client';
import { StoreClient } from '../src/client/store-client';
import { workflowIdFor } from '../src/domain/contract-names';
import { workflowsPath } from '../src/worker/workflow-code';
import { TRACE_HEADER } from '../src/workflows/tracing-interceptors';
import { assertReplays, fetchHistories, type RecordedHistory } from './helpers/replay-histories';
import { testTemporalAddress } from './harness/test-temporal';
import { startTestWorker, testDataConverter, type TestWorker } from './harness/test-worker';

const noop = () => undefined;
const silentLogger = { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: noop };

describe('snapshot ids survive replays with the interceptors in the bundle (no workflow cache)', () => {
  let worker: TestWorker;
  before(async () => {
    worker = await startTestWorker(await testTemporalAddress(), { maxCachedWorkflows: 0 });
    await new StoreClient({ client: worker.client, taskQueue: worker.config.taskQueue }).addPolicy({ principalPattern: 'agent-replay', capability: 'cloud.sandbox', effect: 'allow' });
  });
  after(() => worker?.stop());

  test('pause then resume finds the snapshot the pause kept; a snapshot restores by the id it was given', async () => {
    const sandbox = await worker.sandboxes.create({ principal: 'agent-replay', services: ['s3'], adapter: 'memory' }, { wait: 'ready' });
    // Queries and validated updates between the steps: each makes spans in the workflow.
    await worker.sandboxes.status(sandbox.id);
    const taken = await worker.sandboxes.snapshot(sandbox.id);
    assert.deepEqual(
      (await worker.sandboxes.snapshots({ sandboxId: sandbox.id })).map((kept) => kept.snapshotId),
      [taken.snapshotId],
      'the id the update answered is the one kept',
    );
    await worker.sandboxes.status(sandbox.id);
    assert.equal((await worker.sandboxes.restore(sandbox.id, taken.snapshotId)).state, 'READY');

    const paused = await worker.sandboxes.pause(sandbox.id);
    assert.equal(paused.state, 'PAUSED');
    await worker.sandboxes.status(sandbox.id);
    const resumed = await worker.sandboxes.resume(sandbox.id);
    assert.equal(resumed.state, 'READY', `resumed: ${resumed.waitingFor}`);
    await worker.sandboxes.destroy(sandbox.id);
  });
});

describe('histories of the build without tracing interceptors replay on this one (real dev server)', () => {
  let worker: TestWorker;

  before(async () => {
    // The build before issue 28: the same workflows, no interceptor modules.
    const untraced = await bundleWorkflowCode({ workflowsPath: workflowsPath(), logger: silentLogger });
    worker = await startTestWorker(await testTemporalAddress(), { workflowBundle: untraced });
  });
  after(() => worker?.stop());

  test('a sandbox lifecycle, store commands and a cleanup sweep with its host sweeps replay with the interceptors in the bundle', async () => {
    const store = new StoreClient({ client: worker.client, taskQueue: worker.config.taskQueue });
    await store.addPolicy({ principalPattern: 'agent-up', capability: 'cloud.sandbox', effect: 'allow' });
    assert.equal((await store.listPolicies()).length, 1);
    const created = await worker.sandboxes.create({ principal: 'agent-up', services: ['s3'], adapter: 'memory' }, { wait: 'ready' });
    await worker.sandboxes.extend(created.id, { ttlSeconds: 60 });
    await worker.sandboxes.destroy(created.id);
    await worker.client.workflow.execute('cleanupSweep', { taskQueue: worker.config.taskQueue, workflowId: `sweep-${randomUUID()}` });

    const histories: RecordedHistory[] = [];
    for await (const execution of worker.client.workflow.list({ query: `TaskQueue = "${worker.config.taskQueue}"` })) {
      histories.push({ workflowId: execution.workflowId, history: await worker.client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory() });
    }
    const types = new Set(histories.map(({ history }) => history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name));
    for (const type of ['sandboxLifecycle', 'storeCommand', 'cleanupSweep']) assert.ok(types.has(type), `recorded a ${type}: ${[...types].join(', ')}`);
    await assertReplays(histories);
  });
});

describe('only a run a traced caller started carries the OpenTelemetry interceptors (real dev server)', () => {
  let worker: TestWorker;
  let provider: BasicTracerProvider;
  before(async () => {
    // The caller's tracing: spans made and propagated in this process, exported nowhere.
    provider = new BasicTracerProvider();
    provider.register();
    worker = await startTestWorker(await testTemporalAddress());
    await new StoreClient({ client: worker.client, taskQueue: worker.config.taskQueue }).addPolicy({ principalPattern: 'agent-traced', capability: 'cloud.sandbox', effect: 'allow' });
  });
  after(async () => {
    await worker?.stop();
    await provider?.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
  });

  test("a traced create's activities carry its trace, an untraced one's carry none; both replay", async () => {
    const tracedClient = new Client({
      connection: worker.client.connection,
      namespace: worker.client.options.namespace,
      dataConverter: testDataConverter(),
      interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] },
    });
    const traced = new SandboxClient({ client: tracedClient, taskQueue: worker.config.taskQueue });
    const tracedId = (await traced.create({ principal: 'agent-traced', services: ['s3'], adapter: 'memory' }, { wait: 'ready' })).id;
    const plainId = (await worker.sandboxes.create({ principal: 'agent-traced', services: ['s3'], adapter: 'memory' }, { wait: 'ready' })).id;
    await traced.destroy(tracedId);
    await worker.sandboxes.destroy(plainId);

    const histories = await fetchHistories(worker.client, [workflowIdFor(tracedId), workflowIdFor(plainId)]);
    const scheduledHeaders = ({ history }: RecordedHistory) =>
      (history.events ?? []).flatMap((event) => {
        const scheduled = event.activityTaskScheduledEventAttributes;
        return scheduled === null || scheduled === undefined ? [] : [Object.keys(scheduled.header?.fields ?? {})];
      });
    const [tracedScheduled, plainScheduled] = histories.map(scheduledHeaders) as [string[][], string[][]];
    assert.ok(tracedScheduled.length > 0 && plainScheduled.length > 0, 'both scheduled activities');
    assert.ok(
      tracedScheduled.every((keys) => keys.includes(TRACE_HEADER)),
      `every activity of the traced run carries ${TRACE_HEADER}: ${JSON.stringify(tracedScheduled)}`,
    );
    assert.deepEqual(
      plainScheduled.filter((keys) => keys.includes(TRACE_HEADER)),
      [],
      'no activity of the untraced run carries a trace',
    );
    await assertReplays(histories);
  });
});
