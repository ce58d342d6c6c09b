/**
 * Placement on docker hosts (DESIGN §10), on a real dev server with a worker of all
 * roles whose host takes one sandbox: a second waits for room, gets it when the first
 * ends, and is refused (NO_CAPACITY, nothing provisioned) when none comes in time.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SandboxPlaneError } from '../src/domain/errors';
import { SandboxHost } from '../src/domain/search-attributes';
import { eventually } from './harness/eventually';
import { startTestWorker, type TestWorker } from './harness/test-worker';
import { testTemporalAddress } from './harness/test-temporal';

describe('placement on a host with room for one sandbox', () => {
  let worker: TestWorker;

  before(async () => {
    worker = await startTestWorker(await testTemporalAddress(), { env: { SANDBOXPLANE_HOST_CAPACITY: '1', SANDBOXPLANE_PLACEMENT_WAIT: '6s' } });
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
  });
  after(async () => {
    await worker?.stop();
  });

  test('the first sandbox is placed on the host: status, search attribute and audit row name it', async () => {
    const first = await worker.sandboxes.create({ id: 'room-1', principal: 'agent-1', services: ['s3'] }, { wait: 'ready' });
    assert.equal(first.host, 'local');
    const description = await worker.client.workflow.getHandle('sandbox-room-1').describe();
    assert.deepEqual(description.typedSearchAttributes.get(SandboxHost), 'local');
    const placed = worker.store.sandboxes.audit('room-1').find((row) => row.action === 'placed');
    assert.equal(placed?.actor, 'placement');
    assert.equal(placed?.summary.hostId, 'local');
    await worker.sandboxes.destroy('room-1');
  });

  test('with room at once, screening places it: no round trip of its own before provisioning, and the audit steps have no gap', async () => {
    await worker.sandboxes.create({ id: 'room-0', principal: 'agent-0', services: ['s3'] }, { wait: 'ready' });
    const history = await worker.client.workflow.getHandle('sandbox-room-0').fetchHistory();
    const activities = (history.events ?? []).flatMap((event) => event.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
    assert.deepEqual(activities.slice(0, 2), ['screenNewRequest', 'provisionSandbox']);
    const rows = worker.store.sandboxes.audit('room-0');
    assert.deepEqual(
      rows.map((row) => row.action),
      ['requested', 'screened', 'placed', 'ready'],
    );
    assert.deepEqual(
      rows.map((row) => row.step),
      [1, 2, 3, 4],
    );
    assert.equal(rows[2]?.summary.hostId, 'local');
    await worker.sandboxes.destroy('room-0');
  });

  test('a full host: the next sandbox waits visibly, and takes the slot once it is free', async () => {
    await worker.sandboxes.create({ id: 'room-2', principal: 'agent-2', services: ['s3'] }, { wait: 'ready' });
    await worker.sandboxes.create({ id: 'room-3', principal: 'agent-3', services: ['s3'] });
    const waiting = await eventually('room-3 waiting for room', async () => {
      const status = await worker.sandboxes.status('room-3');
      return /for a docker host with room: no live docker host has room for a memory sandbox \(local 1\/1\)/.test(status.waitingFor) ? status : undefined;
    });
    assert.equal(waiting.state, 'PROVISIONING');
    assert.equal(waiting.host, null);
    assert.ok(!worker.memory.liveSandboxIds().includes('room-3'), 'nothing provisioned while waiting: no overcommit');
    await worker.sandboxes.destroy('room-2');
    const ready = await eventually('room-3 READY once room-2 is gone', async () => {
      const status = await worker.sandboxes.status('room-3');
      return status.state === 'READY' ? status : undefined;
    });
    assert.equal(ready.host, 'local');
    await worker.sandboxes.destroy('room-3');
  });

  test('no room within the placement wait: DENIED with NO_CAPACITY, nothing provisioned, the refusal audited', async () => {
    await worker.sandboxes.create({ id: 'room-4', principal: 'agent-4', services: ['s3'] }, { wait: 'ready' });
    await assert.rejects(worker.sandboxes.create({ id: 'room-5', principal: 'agent-5', services: ['s3'] }, { wait: 'ready' }), (err: unknown) => {
      assert.ok(err instanceof SandboxPlaneError, String(err));
      assert.equal(err.code, 'NO_CAPACITY', err.message);
      return true;
    });
    const refused = await worker.sandboxes.status('room-5');
    assert.equal(refused.state, 'DENIED');
    assert.equal(refused.error?.code, 'NO_CAPACITY');
    assert.ok(!worker.memory.liveSandboxIds().includes('room-5'));
    assert.deepEqual(
      worker.store.sandboxes.audit('room-5').map((row) => row.action),
      ['requested', 'screened', 'placement_refused'],
    );
    assert.equal(worker.store.hosts.list()[0]?.liveSandboxes, 1, 'the refused sandbox holds no capacity');
    await worker.sandboxes.destroy('room-4');
  });

  test('a destroy ends the wait at once, with nothing provisioned', async () => {
    await worker.sandboxes.create({ id: 'room-6', principal: 'agent-6', services: ['s3'] }, { wait: 'ready' });
    await worker.sandboxes.create({ id: 'room-7', principal: 'agent-7', services: ['s3'] });
    await eventually('room-7 waiting', async () => ((await worker.sandboxes.status('room-7')).waitingFor.includes('for a docker host with room') ? true : undefined));
    const withdrawn = await worker.sandboxes.destroy('room-7');
    assert.equal(withdrawn.state, 'DESTROYED');
    assert.match(withdrawn.waitingFor, /Withdrawn while waiting for a docker host/);
    await worker.sandboxes.destroy('room-6');
  });
});
