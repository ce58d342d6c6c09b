import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SandboxPlaneError } from '../src/domain/errors';
import { startTestWorker, type TestWorker } from './helpers/test-worker';
import { testTemporalAddress } from './helpers/test-temporal';

async function waitForState(worker: TestWorker, id: string, state: string, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await worker.sandboxes.status(id);
    if (status.state === state) return status;
    if (Date.now() > deadline) assert.fail(`sandbox ${id} is ${status.state}, expected ${state}: ${status.waitingFor}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function actions(worker: TestWorker, id: string): string[] {
  return worker.store.sandboxes.audit(id).map((op) => op.action);
}

describe('sandbox lifecycle', () => {
  let worker: TestWorker;
  before(async () => {
    worker = await startTestWorker(await testTemporalAddress(), { env: { SANDBOXPLANE_EXPIRY_WARNING: '2s' } });
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
  });
  after(async () => worker?.stop());

  test('allow → READY → TTL expiry → DESTROYED, with the audit trail of each step', async () => {
    const ready = await worker.sandboxes.create({ id: 'ttl-1', principal: 'agent-1', services: ['s3'], ttlSeconds: 3 }, { wait: 'ready' });
    assert.equal(ready.state, 'READY');
    assert.equal(ready.endpoint, 'memory://ttl-1');
    assert.equal(ready.clientConfig?.forcePathStyle, true);
    assert.deepEqual(ready.fidelity, { s3: 'PARTIAL' });
    assert.equal(ready.decision?.effect, 'allow');
    assert.ok(ready.timeLeftSeconds !== null && ready.timeLeftSeconds <= 3);
    assert.deepEqual(worker.memory.liveSandboxIds(), ['ttl-1']);

    const gone = await waitForState(worker, 'ttl-1', 'DESTROYED');
    assert.equal(gone.clientConfig, null);
    assert.deepEqual(worker.memory.liveSandboxIds(), []);
    assert.deepEqual(actions(worker, 'ttl-1'), ['requested', 'screened', 'ready', 'expiring', 'destroying', 'destroyed']);
    assert.equal(worker.store.sandboxes.state('ttl-1'), 'DESTROYED');
  });

  test('no policy row: DENIED with POLICY_DENIED and nothing provisioned', async () => {
    await assert.rejects(
      worker.sandboxes.create({ id: 'nopolicy-1', principal: 'stranger', services: ['s3'] }),
      (err: unknown) => err instanceof SandboxPlaneError && err.code === 'POLICY_DENIED' && err.exitCode === 3,
    );
    assert.deepEqual(worker.memory.liveSandboxIds(), []);
  });
});
