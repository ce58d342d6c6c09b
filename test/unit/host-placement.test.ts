/** Placement in the host registry: least loaded first, never past capacity, only live hosts that run the adapter. */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import type { HostRegistration } from '../../src/domain/hosts';
import { Store } from '../../src/store';
import { projectionSnapshot } from '../helpers/projection-row';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-hosts-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function host(hostId: string, capacity: number, adapters: HostRegistration['adapters'] = ['memory', 'moto']): HostRegistration {
  return { hostId, taskQueue: `q-docker-${hostId}`, adapters, capacity, engineId: null, identity: `w-${hostId}` };
}

function storeWith(...hosts: HostRegistration[]): Store {
  const store = Store.open(path.join(dir, `${Math.random().toString(36).slice(2)}.sqlite`));
  for (const registration of hosts) store.hosts.register(registration);
  return store;
}

function request(store: Store, id: string, state: 'PROVISIONING' | 'DESTROYED' = 'PROVISIONING', step = 1): string {
  store.sandboxes.record(projectionSnapshot({ id, state, adapter: 'moto' }), { step, action: state.toLowerCase(), actor: 'a', effect: 'e', reason: null, summary: {} });
  return id;
}

describe('host placement', () => {
  test('the least-loaded live host with room wins; a retry gets the same host; a full plane is refused, never overcommitted', () => {
    const store = storeWith(host('a', 2), host('b', 1));
    const live = new Set(['a', 'b']);
    const place = (id: string) => store.hosts.place({ sandboxId: request(store, id), adapter: 'moto', liveHostIds: live });
    assert.deepEqual(place('s1'), { placement: { hostId: 'a', taskQueue: 'q-docker-a' }, fresh: true });
    assert.deepEqual(place('s2'), { placement: { hostId: 'b', taskQueue: 'q-docker-b' }, fresh: true });
    assert.deepEqual(store.hosts.place({ sandboxId: 's2', adapter: 'moto', liveHostIds: live }), { placement: { hostId: 'b', taskQueue: 'q-docker-b' }, fresh: false });
    assert.deepEqual(place('s3'), { placement: { hostId: 'a', taskQueue: 'q-docker-a' }, fresh: true });
    assert.deepEqual(place('s4'), { refused: 'no live docker host has room for a moto sandbox (a 2/2, b 1/1)' });
    assert.deepEqual(
      store.hosts.list().map((row) => [row.hostId, row.liveSandboxes]),
      [
        ['a', 2],
        ['b', 1],
      ],
    );
    store.close();
  });

  test('an ended sandbox frees its slot; a host that is not live or lacks the adapter is never chosen', () => {
    const store = storeWith(host('a', 1), host('b', 5, ['memory']), host('c', 5));
    assert.deepEqual(store.hosts.place({ sandboxId: request(store, 'x1'), adapter: 'moto', liveHostIds: new Set(['a', 'b']) }), {
      placement: { hostId: 'a', taskQueue: 'q-docker-a' },
      fresh: true,
    });
    assert.deepEqual(store.hosts.place({ sandboxId: request(store, 'x2'), adapter: 'moto', liveHostIds: new Set(['a', 'b']) }), {
      refused: 'no live docker host has room for a moto sandbox (a 1/1, c not live)',
    });
    request(store, 'x1', 'DESTROYED', 2);
    assert.equal(store.hosts.list().find((row) => row.hostId === 'a')?.liveSandboxes, 0);
    assert.deepEqual(store.hosts.place({ sandboxId: 'x2', adapter: 'moto', liveHostIds: new Set(['a', 'b']) }), { placement: { hostId: 'a', taskQueue: 'q-docker-a' }, fresh: true });
    assert.deepEqual(store.hosts.place({ sandboxId: request(store, 'x3'), adapter: 'floci', liveHostIds: new Set(['a', 'b', 'c']) }), {
      refused: 'no registered docker host runs the floci adapter',
    });
    store.close();
  });

  test("the plane's cap counts placed sandboxes on every host and every host's warm pool; a retry keeps its place; an ended one frees room", () => {
    const store = storeWith({ ...host('a', 10), warmPool: { moto: 2 } }, host('b', 10));
    const live = new Set(['a', 'b']);
    const place = (id: string) => store.hosts.place({ sandboxId: request(store, id), adapter: 'moto', liveHostIds: live, maxSandboxes: 4 });
    assert.ok('placement' in place('c1'));
    assert.ok('placement' in place('c2'));
    assert.deepEqual(place('c3'), { refused: "the plane's cap of 4 live sandboxes is reached (2 placed, 2 kept warm; SANDBOXPLANE_MAX_SANDBOXES)" });
    assert.equal(
      store.hosts.place({ sandboxId: 'c1', adapter: 'moto', liveHostIds: live, maxSandboxes: 4 }).hasOwnProperty('placement'),
      true,
      'a retry of a placed sandbox is not a new one',
    );
    assert.equal(store.hosts.placementOf('c3'), undefined, 'the refused sandbox holds nothing');
    request(store, 'c1', 'DESTROYED', 2);
    assert.ok('placement' in store.hosts.place({ sandboxId: 'c3', adapter: 'moto', liveHostIds: live, maxSandboxes: 4 }));
    store.close();
  });
});
