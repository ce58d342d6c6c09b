/**
 * Tracing's workflow interceptors (issue 28) are part of the workflow bundle, so a build
 * that adds them is a new build. Pinned lifecycles stay on the build that started them,
 * but sweeps and store commands follow the current build (AUTO_UPGRADE, DESIGN §16): a
 * history recorded by the build before, whose bundle had no interceptors, must replay on
 * this one. Recorded here on a real dev server by a worker running the workflow code
 * bundled without them, then replayed with this build's bundle.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { bundleWorkflowCode } from '@temporalio/worker';
import { StoreClient } from '../src/client/store-client';
import { workflowsPath } from '../src/worker/workflow-code';
import { assertReplays, type RecordedHistory } from './helpers/replay-histories';
import { testTemporalAddress } from './helpers/test-temporal';
import { startTestWorker, type TestWorker } from './helpers/test-worker';

const noop = () => undefined;
const silentLogger = { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: noop };

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
