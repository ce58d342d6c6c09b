/**
 * Placement by memory requests (DESIGN §10, §12) on a real dev server: a host whose
 * allocatable memory holds two sandboxes' limits admits a third by requests, refuses the
 * fourth at the overcommit bound, and a create that waits while the host is still
 * starting a sandbox is queued, not refused, and becomes READY once room frees.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CloudEmulatorAdapter, LaunchPlan } from '../src/adapters/cloud-emulator-adapter';
import type { MemoryAdapter } from '../src/adapters/memory-adapter';
import { SandboxPlaneError } from '../src/domain/errors';
import { memoryHeld } from '../src/store/host-repository';
import { eventually } from './harness/eventually';
import { startTestWorker, type TestWorker } from './harness/test-worker';
import { testTemporalAddress } from './harness/test-temporal';

const MIB = 1024 * 1024;
const PLACEMENT_WAIT_SECONDS = 3;

/** Provisions of sandboxes named `slow-…` wait until `release()`: a host busy starting one. */
function gatedProvision(memory: MemoryAdapter): { adapter: CloudEmulatorAdapter; release(): void } {
  let release = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const adapter = new Proxy(memory, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (property !== 'provision' || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value;
      return async (plan: LaunchPlan, ...rest: unknown[]) => {
        if (plan.sandboxId.startsWith('slow-')) await gate;
        return (value as (...a: unknown[]) => unknown).apply(target, [plan, ...rest]);
      };
    },
  });
  return { adapter, release: () => release() };
}

describe('placement by memory requests, bounded by the overcommit of the limits', () => {
  let worker: TestWorker;
  let gated: ReturnType<typeof gatedProvision> | undefined;

  before(async () => {
    worker = await startTestWorker(await testTemporalAddress(), {
      env: { SANDBOXPLANE_HOST_CAPACITY: '10', SANDBOXPLANE_PLACEMENT_WAIT: `${PLACEMENT_WAIT_SECONDS}s` },
      adapters: (memory) => {
        gated = gatedProvision(memory);
        return { memory: gated.adapter };
      },
    });
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
    // The host as a worker would measure it: 400 MiB allocatable, each sandbox capped at 200 MiB
    // (2 fit by limits) and requesting 100 MiB, limits bounded at 1.5 × 400 = 600 MiB (3 of them).
    const [local] = worker.store.hosts.list();
    assert.ok(local !== undefined, 'the docker role registered its host');
    worker.store.hosts.register({
      ...local,
      memory: { engineBytes: 1024 * MIB, capacityBytes: 400 * MIB, perSandboxBytes: { memory: 200 * MIB }, perSandboxRequestBytes: { memory: 100 * MIB }, overcommit: 1.5 },
    });
  });
  after(async () => {
    gated?.release();
    await worker?.stop();
  });

  const create = (id: string, wait?: 'ready') => worker.sandboxes.create({ id, principal: `agent-${id}`, services: ['s3'] }, wait === undefined ? {} : { wait });
  const ready = (id: string) =>
    eventually(`${id} READY`, async () => {
      const status = await worker.sandboxes.status(id);
      return status.state === 'READY' ? status : undefined;
    });

  test('memory for 2 limits admits 3 by requests; the 4th is refused at the overcommit bound, naming it', async () => {
    for (const id of ['req-1', 'req-2', 'req-3']) assert.equal((await create(id, 'ready')).state, 'READY', id);
    const [local] = worker.store.hosts.list();
    assert.equal(local?.liveSandboxes, 3);
    await assert.rejects(create('req-4', 'ready'), (err: unknown) => {
      assert.ok(err instanceof SandboxPlaneError, String(err));
      assert.equal(err.code, 'NO_CAPACITY', err.message);
      assert.match(err.message, /memory limits 600 MiB of 600 MiB \(1\.5× overcommit\) held and a memory sandbox is limited to 200 MiB/);
      return true;
    });
    assert.ok(!worker.memory.liveSandboxIds().includes('req-4'), 'nothing provisioned past the bound');
    const [held] = worker.store.hosts.list();
    assert.deepEqual(held === undefined ? undefined : memoryHeld(held), { requests: 300 * MIB, limits: 600 * MIB });
    for (const id of ['req-1', 'req-2', 'req-3']) await worker.sandboxes.destroy(id);
  });

  test('a create that waits while the host is starting another is queued past the placement wait, and READY once room frees', async () => {
    await create('busy-1', 'ready');
    await create('busy-2', 'ready');
    await create('slow-1');
    await eventually('slow-1 placed and starting', async () => {
      const status = await worker.sandboxes.status('slow-1');
      return status.state === 'PROVISIONING' && status.host === 'local' ? true : undefined;
    });
    await create('queued-1');
    // Twice the placement wait: refused by then were room not coming.
    await new Promise((resolve) => setTimeout(resolve, 2 * PLACEMENT_WAIT_SECONDS * 1000 + 1000));
    const waiting = await worker.sandboxes.status('queued-1');
    assert.equal(waiting.state, 'PROVISIONING', waiting.waitingFor);
    assert.match(waiting.waitingFor, /for a docker host with room/);
    assert.equal(waiting.host, null);
    await worker.sandboxes.destroy('busy-1');
    assert.equal((await ready('queued-1')).host, 'local');
    gated?.release();
    await ready('slow-1');
    for (const id of ['busy-2', 'slow-1', 'queued-1']) await worker.sandboxes.destroy(id);
  });
});
