/**
 * Many agents at once (issue 11): 200 full lifecycles of memory sandboxes through the
 * SDK, all started together on one dev server and one worker. None may fail, and
 * nothing may be left behind.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { workflowIdFor } from '../src/domain/contract-names';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import { concurrentLifecycles, describeFailures } from './harness/lifecycle-burst';
import { testTemporalAddress } from './harness/test-temporal';
import { startTestWorker, type TestWorker } from './harness/test-worker';

const AGENTS = 200;

describe(`${AGENTS} agents at once`, () => {
  let worker: TestWorker;

  before(async () => {
    worker = await startTestWorker(await testTemporalAddress());
    worker.store.policies.add({ principalPattern: '*', capability: 'cloud.sandbox', effect: 'allow' });
  });
  after(async () => worker?.stop());

  test(`${AGENTS} concurrent create → READY → destroy all end DESTROYED and leave nothing behind`, { timeout: 10 * 60_000 }, async () => {
    const burst = await concurrentLifecycles(worker.sandboxes, AGENTS, 'load');
    assert.deepEqual(describeFailures(burst.failures), [], `${burst.failures.length} of ${AGENTS} lifecycles failed`);

    const results = await Promise.all(burst.outcomes.map(({ id }) => worker.client.workflow.getHandle<() => Promise<SandboxStatus>>(workflowIdFor(id)).result()));
    assert.deepEqual(
      results.filter((status) => status.state !== 'DESTROYED').map(({ id, state }) => `${id}: ${state}`),
      [],
      'every lifecycle workflow ended DESTROYED',
    );
    assert.deepEqual(
      burst.outcomes.filter(({ id }) => worker.store.sandboxes.state(id) !== 'DESTROYED').map(({ id }) => id),
      [],
      'the projection says DESTROYED for every sandbox',
    );
    assert.deepEqual(worker.memory.liveSandboxIds(), [], 'the memory adapter holds no sandbox');
  });
});
