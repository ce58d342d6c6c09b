import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import type { CloudEmulatorAdapter } from '../src/adapters/cloud-emulator-adapter';
import type { MemoryAdapter } from '../src/adapters/memory-adapter';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import { locateTemporalCli } from '../src/temporal-dev/temporal-cli';
import { startTestWorker, type TestWorker } from './harness/test-worker';
import { testTemporalAddress } from './harness/test-temporal';

const PROVISION_DELAY_MS = 2_000;

/** The memory adapter, with a provision slow enough to cancel in the middle of it. */
function slowToProvision(memory: MemoryAdapter): CloudEmulatorAdapter {
  return new Proxy(memory, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (property !== 'provision' || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value;
      return async (...args: unknown[]) => {
        await new Promise((resolve) => setTimeout(resolve, PROVISION_DELAY_MS));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/**
 * The Temporal UI's most prominent button on a sandbox is "Request Cancellation": in
 * every phase it must end in a correct state, with nothing left running (DESIGN §2).
 */
describe('cancelling a lifecycle (Temporal cancellation) on a real dev server', () => {
  let worker: TestWorker;

  before(async () => {
    worker = await startTestWorker(await testTemporalAddress(), { adapters: (memory) => ({ memory: slowToProvision(memory) }) });
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
    worker.store.policies.add({ principalPattern: 'gated-*', capability: 'cloud.sandbox', effect: 'require_approval' });
  });
  after(async () => worker?.stop());

  const cancelAndWait = async (id: string) => {
    const handle = worker.client.workflow.getHandle(`sandbox-${id}`);
    await handle.cancel();
    return (await handle.result()) as SandboxStatus;
  };
  const lastRows = (id: string, n: number) =>
    worker.store.sandboxes
      .audit(id)
      .slice(-n)
      .map((op) => [op.action, op.actor]);

  test('a READY sandbox is torn down and ends DESTROYED, the cancellation recorded as the actor', async () => {
    await worker.sandboxes.create({ id: 'cancel-ready', principal: 'agent-1', services: ['s3'] }, { wait: 'ready' });
    assert.ok(worker.memory.liveSandboxIds().includes('cancel-ready'));
    const final = await cancelAndWait('cancel-ready');
    assert.equal(final.state, 'DESTROYED');
    assert.ok(!worker.memory.liveSandboxIds().includes('cancel-ready'), 'nothing left running');
    assert.equal(worker.store.sandboxes.state('cancel-ready'), 'DESTROYED', 'the row no longer holds quota');
    assert.deepEqual(lastRows('cancel-ready', 2), [
      ['destroying', 'temporal-cancellation'],
      ['destroyed', 'worker'],
    ]);
  });

  test('a request awaiting approval is withdrawn: DESTROYED, nothing provisioned', async () => {
    await worker.sandboxes.create({ id: 'cancel-gated', principal: 'gated-1', services: ['s3'] });
    const final = await cancelAndWait('cancel-gated');
    assert.equal(final.state, 'DESTROYED');
    assert.deepEqual(lastRows('cancel-gated', 1), [['withdrawn', 'temporal-cancellation']]);
    assert.ok(!worker.memory.liveSandboxIds().includes('cancel-gated'));
  });

  test('cancelled in the middle of provisioning: teardown waits for the provision to stop, then nothing is left', async () => {
    await worker.sandboxes.create({ id: 'cancel-prov', principal: 'agent-2', services: ['s3'] });
    assert.equal((await worker.sandboxes.status('cancel-prov')).state, 'PROVISIONING');
    const final = await cancelAndWait('cancel-prov');
    assert.equal(final.state, 'DESTROYED');
    // The provision finished after the cancellation arrived; its sandbox must not outlive the workflow.
    await new Promise((resolve) => setTimeout(resolve, PROVISION_DELAY_MS));
    assert.ok(!worker.memory.liveSandboxIds().includes('cancel-prov'), 'the late provision was torn down');
    assert.equal(worker.store.sandboxes.state('cancel-prov'), 'DESTROYED');
  });

  test('a waiting create hears the end: a cancelled sandbox it waited on is not READY', async () => {
    const waiting = worker.sandboxes.create({ id: 'cancel-wait', principal: 'gated-2', services: ['s3'] }, { wait: 'ready' });
    await new Promise((resolve) => setTimeout(resolve, 500));
    await cancelAndWait('cancel-wait');
    const status = await waiting;
    assert.equal(status.state, 'DESTROYED');
  });
});

/**
 * `temporal workflow reset` (an operator action, docs/operations.md): a new run replays
 * the history to the chosen point and goes on from there. Nothing is provisioned twice,
 * and the new run's audit rows are its own, not mistaken for the old run's.
 */
describe('resetting a lifecycle (temporal workflow reset) on a real dev server', () => {
  let worker: TestWorker;
  let address: string;

  before(async () => {
    address = await testTemporalAddress();
    worker = await startTestWorker(address);
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
  });
  after(async () => worker?.stop());

  const reset = (id: string, type: 'FirstWorkflowTask' | 'LastWorkflowTask') =>
    execFileSync(
      locateTemporalCli(process.env.SANDBOXPLANE_TEMPORAL_CLI),
      ['workflow', 'reset', '--address', address, '--workflow-id', `sandbox-${id}`, '--type', type, '--reason', 'test'],
      { stdio: 'ignore' },
    );

  test('reset to the first workflow task: the sandbox is READY again on the same runtime, and its teardown is fully audited', async () => {
    await worker.sandboxes.create({ id: 'reset-1', principal: 'agent-1', services: ['s3'], ttlSeconds: 600 }, { wait: 'ready' });
    await worker.sandboxes.extend('reset-1', { ttlSeconds: 60 });
    const { runId: before } = await worker.client.workflow.getHandle('sandbox-reset-1').describe();
    reset('reset-1', 'FirstWorkflowTask');

    const ready = await worker.sandboxes.create({ id: 'reset-1', principal: 'agent-1', services: ['s3'], ttlSeconds: 600 }, { wait: 'ready' });
    assert.equal(ready.state, 'READY');
    assert.notEqual((await worker.client.workflow.getHandle('sandbox-reset-1').describe()).runId, before, 'a new run');
    assert.deepEqual(worker.memory.liveSandboxIds(), ['reset-1'], 'provisioning adopted the runtime: one, not two');
    assert.equal(worker.store.sandboxes.state('reset-1'), 'READY');

    const final = await worker.sandboxes.destroy('reset-1');
    assert.equal(final.state, 'DESTROYED');
    assert.deepEqual(worker.memory.liveSandboxIds(), []);
    assert.equal(worker.store.sandboxes.state('reset-1'), 'DESTROYED');
    // Steps of the reset run collide with the old run's numbers; each row must still be kept.
    assert.deepEqual(lastActions(worker, 'reset-1', 2), ['destroying', 'destroyed']);
  });
});

function lastActions(worker: TestWorker, id: string, n: number): string[] {
  return worker.store.sandboxes
    .audit(id)
    .slice(-n)
    .map((op) => op.action);
}
