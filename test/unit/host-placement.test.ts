/** Placement in the host registry: least loaded first, never past capacity, only live hosts that run the adapter. */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { limitCapacity, memoryShortfall, type HostRegistration } from '../../src/domain/hosts';
import { Store } from '../../src/store';
import { memoryHeld, memoryUsed } from '../../src/store/host-repository';
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

function request(store: Store, id: string, state: 'PROVISIONING' | 'READY' | 'DESTROYING' | 'DESTROYED' = 'PROVISIONING', step = 1): string {
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
    assert.deepEqual(place('s4'), { refused: 'no live docker host has room for a moto sandbox (a 2/2, b 1/1)', roomComing: true });
    assert.deepEqual(
      store.hosts.list().map((row) => [row.hostId, row.liveSandboxes]),
      [
        ['a', 2],
        ['b', 1],
      ],
    );
    store.close();
  });

  test('room is coming while a host that runs the adapter starts or tears down a sandbox, not while all it holds are READY', () => {
    const store = storeWith(host('a', 1), host('b', 1, ['memory']));
    const live = new Set(['a', 'b']);
    assert.ok('placement' in store.hosts.place({ sandboxId: request(store, 'k1'), adapter: 'moto', liveHostIds: live }));
    const next = () => store.hosts.place({ sandboxId: 'k2', adapter: 'moto', liveHostIds: live });
    request(store, 'k2');
    assert.deepEqual(next(), { refused: 'no live docker host has room for a moto sandbox (a 1/1)', roomComing: true }, 'k1 is still starting');
    request(store, 'k1', 'READY', 2);
    assert.deepEqual(next(), { refused: 'no live docker host has room for a moto sandbox (a 1/1)', roomComing: false }, 'k1 is READY: nothing frees room');
    request(store, 'k1', 'DESTROYING', 3);
    assert.deepEqual(next(), { refused: 'no live docker host has room for a moto sandbox (a 1/1)', roomComing: true }, 'k1 is being torn down');
    assert.equal(
      (store.hosts.place({ sandboxId: 'k2', adapter: 'moto', liveHostIds: new Set(['b']) }) as { roomComing?: boolean }).roomComing,
      false,
      'a host not live frees nothing anyone can take',
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
      roomComing: true,
    });
    request(store, 'x1', 'DESTROYED', 2);
    assert.equal(store.hosts.list().find((row) => row.hostId === 'a')?.liveSandboxes, 0);
    assert.deepEqual(store.hosts.place({ sandboxId: 'x2', adapter: 'moto', liveHostIds: new Set(['a', 'b']) }), { placement: { hostId: 'a', taskQueue: 'q-docker-a' }, fresh: true });
    assert.deepEqual(store.hosts.place({ sandboxId: request(store, 'x3'), adapter: 'floci', liveHostIds: new Set(['a', 'b', 'c']) }), {
      refused: 'no registered docker host runs the floci adapter',
      roomComing: false,
    });
    store.close();
  });

  test("the plane's cap counts placed sandboxes on every host and every host's warm pool; a retry keeps its place; an ended one frees room", () => {
    const store = storeWith({ ...host('a', 10), warmPool: { moto: 2 } }, host('b', 10));
    const live = new Set(['a', 'b']);
    const place = (id: string) => store.hosts.place({ sandboxId: request(store, id), adapter: 'moto', liveHostIds: live, maxSandboxes: 4 });
    assert.ok('placement' in place('c1'));
    assert.ok('placement' in place('c2'));
    assert.deepEqual(place('c3'), { refused: "the plane's cap of 4 live sandboxes is reached (2 placed, 2 kept warm; SANDBOXPLANE_MAX_SANDBOXES)", roomComing: true });
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

  describe("memory (DESIGN §12): the memory limits of a host's containers add up to no more than its share of the engine", () => {
    const MIB = 1024 * 1024;
    /** An engine of `engineMiB` whose containers may hold `capacityMiB`; moto sandboxes hold 512 MiB, memory ones none. */
    const measured = (capacityMiB: number, engineMiB = capacityMiB) => ({
      engineBytes: engineMiB * MIB,
      capacityBytes: capacityMiB * MIB,
      perSandboxBytes: { memory: 0, moto: 512 * MIB },
    });

    test('a host with slots left but no memory left is refused the way a full one is; a sandbox that holds no memory still fits', () => {
      const store = storeWith({ ...host('a', 10), memory: measured(1024, 1200) });
      const live = new Set(['a']);
      const place = (id: string) => store.hosts.place({ sandboxId: request(store, id), adapter: 'moto', liveHostIds: live });
      assert.ok('placement' in place('m1'));
      assert.ok('placement' in place('m2'));
      assert.deepEqual(place('m3'), {
        refused: 'no live docker host has room for a moto sandbox (a 2/10, memory requests 1 GiB of 1 GiB held and a moto sandbox requests 512 MiB)',
        roomComing: true,
      });
      assert.equal(store.hosts.placementOf('m3'), undefined, 'the refused sandbox holds nothing');
      store.sandboxes.record(projectionSnapshot({ id: 'm4', state: 'PROVISIONING', adapter: 'memory' }), {
        step: 1,
        action: 'provisioning',
        actor: 'a',
        effect: 'e',
        reason: null,
        summary: {},
      });
      assert.ok('placement' in store.hosts.place({ sandboxId: 'm4', adapter: 'memory', liveHostIds: live }), 'the memory adapter runs no container');
      const [row] = store.hosts.list();
      assert.equal(row?.liveSandboxes, 3);
      assert.equal(memoryUsed(row as NonNullable<typeof row>), 1024 * MIB);
      request(store, 'm1', 'DESTROYED', 2);
      assert.deepEqual(
        store.hosts.place({ sandboxId: 'm3', adapter: 'moto', liveHostIds: live }),
        { placement: { hostId: 'a', taskQueue: 'q-docker-a' }, fresh: true },
        'an ended sandbox frees its memory',
      );
      store.close();
    });

    test("a warm pool's idle containers hold memory too", () => {
      const store = storeWith({ ...host('a', 10), warmPool: { moto: 2 }, memory: measured(1536) });
      const live = new Set(['a']);
      assert.equal(memoryUsed(store.hosts.list()[0] as NonNullable<ReturnType<typeof store.hosts.list>[number]>), 1024 * MIB);
      assert.ok('placement' in store.hosts.place({ sandboxId: request(store, 'w1'), adapter: 'moto', liveHostIds: live }));
      assert.deepEqual(store.hosts.place({ sandboxId: request(store, 'w2'), adapter: 'moto', liveHostIds: live }), {
        refused: 'no live docker host has room for a moto sandbox (a 3/10 with 2 kept warm, memory requests 1.5 GiB of 1.5 GiB held and a moto sandbox requests 512 MiB)',
        roomComing: true,
      });
      store.close();
    });

    test('the host with the larger share free wins, by slots or by memory, whichever is fuller; a host not measured is bound by its count alone', () => {
      // a: 1 of 4 slots but 1 of 2 GiB of memory held (half full); b: 2 of 10 slots, memory not measured (a fifth full).
      const store = storeWith({ ...host('a', 4), memory: measured(1024) }, host('b', 10));
      const live = new Set(['a', 'b']);
      const place = (id: string) => store.hosts.place({ sandboxId: request(store, id), adapter: 'moto', liveHostIds: live });
      assert.deepEqual(place('p1'), { placement: { hostId: 'a', taskQueue: 'q-docker-a' }, fresh: true }, 'both empty: the first by id');
      assert.deepEqual(place('p2'), { placement: { hostId: 'b', taskQueue: 'q-docker-b' }, fresh: true }, 'a is half full by memory');
      assert.deepEqual(place('p3'), { placement: { hostId: 'b', taskQueue: 'q-docker-b' }, fresh: true });
      assert.deepEqual(place('p4'), { placement: { hostId: 'b', taskQueue: 'q-docker-b' }, fresh: true }, 'b at 3/10 is still emptier than a');
      const hosts = store.hosts.list();
      assert.deepEqual(
        hosts.map((row) => [row.hostId, row.liveSandboxes, memoryUsed(row), row.memory?.capacityBytes ?? null]),
        [
          ['a', 1, 512 * MIB, 1024 * MIB],
          ['b', 3, 0, null],
        ],
      );
      store.close();
    });

    describe('requests and limits (Kubernetes-style): the requests fill the allocatable memory, the limits its overcommit', () => {
      /** moto requests 128 MiB and is capped at 512 MiB; the host's containers may request `capacityMiB` and be capped at `overcommit` × that. */
      const byRequests = (capacityMiB: number, overcommit: number) => ({
        ...measured(capacityMiB),
        perSandboxRequestBytes: { memory: 0, moto: 128 * MIB },
        overcommit,
      });

      test('a host whose memory holds 2 limits admits 4 by requests when the overcommit allows; past the bound it refuses, naming the limits', () => {
        const store = storeWith({ ...host('a', 10), memory: byRequests(1024, 2) });
        const live = new Set(['a']);
        const place = (id: string) => store.hosts.place({ sandboxId: request(store, id), adapter: 'moto', liveHostIds: live });
        for (const id of ['r1', 'r2', 'r3', 'r4']) assert.ok('placement' in place(id), id);
        assert.deepEqual(place('r5'), {
          refused: 'no live docker host has room for a moto sandbox (a 4/10, memory limits 2 GiB of 2 GiB (2× overcommit) held and a moto sandbox is limited to 512 MiB)',
          roomComing: true,
        });
        const [row] = store.hosts.list();
        assert.deepEqual(memoryHeld(row as NonNullable<typeof row>), { limits: 2048 * MIB, requests: 512 * MIB });
        store.close();
      });

      test('with a generous overcommit the requests bind: the allocatable memory is never promised twice', () => {
        const store = storeWith({ ...host('a', 100), memory: byRequests(512, 10) });
        const live = new Set(['a']);
        const place = (id: string) => store.hosts.place({ sandboxId: request(store, id), adapter: 'moto', liveHostIds: live });
        for (const id of ['q1', 'q2', 'q3', 'q4']) assert.ok('placement' in place(id), id);
        assert.deepEqual(place('q5'), {
          refused: 'no live docker host has room for a moto sandbox (a 4/100, memory requests 512 MiB of 512 MiB held and a moto sandbox requests 128 MiB)',
          roomComing: true,
        });
        store.close();
      });

      test('the host with the smaller share of its requests held wins', () => {
        const store = storeWith({ ...host('a', 100), memory: byRequests(1024, 4) }, { ...host('b', 100), memory: byRequests(2048, 4) });
        const live = new Set(['a', 'b']);
        const place = (id: string) => store.hosts.place({ sandboxId: request(store, id), adapter: 'moto', liveHostIds: live });
        assert.equal((place('h1') as { placement: { hostId: string } }).placement.hostId, 'a', 'both empty: the first by id');
        assert.equal((place('h2') as { placement: { hostId: string } }).placement.hostId, 'b');
        assert.equal((place('h3') as { placement: { hostId: string } }).placement.hostId, 'b', 'a holds 1/8 of its requests, b 1/16');
        store.close();
      });
    });

    test('a registration again replaces the measured memory; one without it (a worker of an earlier build) clears it', () => {
      const store = storeWith({ ...host('a', 4), memory: measured(1024, 2048) });
      assert.equal(store.hosts.list()[0]?.memory?.engineBytes, 2048 * MIB);
      store.hosts.register({ ...host('a', 4), memory: measured(3072, 4096) });
      assert.equal(store.hosts.list()[0]?.memory?.capacityBytes, 3072 * MIB);
      store.hosts.register(host('a', 4));
      assert.equal(store.hosts.list()[0]?.memory, null);
      store.close();
    });
  });
});

describe('the room rule (memoryShortfall): requests within the allocatable memory, limits within allocatable × overcommit', () => {
  const memory = { engineBytes: 1000, capacityBytes: 900, perSandboxBytes: {}, overcommit: 1.5 };
  test('fits up to both bounds exactly', () => {
    assert.equal(memoryShortfall({ requests: 800, limits: 1250 }, { request: 100, limit: 100 }, memory), undefined);
  });
  test('one byte of requests past the allocatable memory is short of requests', () => {
    assert.equal(memoryShortfall({ requests: 801, limits: 0 }, { request: 100, limit: 100 }, memory), 'requests');
  });
  test('one byte of limits past allocatable × overcommit is short of limits', () => {
    assert.equal(memoryShortfall({ requests: 0, limits: 1251 }, { request: 100, limit: 100 }, memory), 'limits');
  });
  test('a row of an earlier build (no overcommit) bounds the limits by the allocatable memory; a host not measured is bound by its count alone', () => {
    assert.equal(memoryShortfall({ requests: 0, limits: 850 }, { request: 10, limit: 100 }, { ...memory, overcommit: undefined }), 'limits');
    assert.equal(limitCapacity({ ...memory, overcommit: undefined }), 900);
    assert.equal(memoryShortfall({ requests: 1e12, limits: 1e12 }, { request: 1, limit: 1 }, null), undefined);
  });
});
