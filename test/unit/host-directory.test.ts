/**
 * Retiring a docker host (`sandboxctl hosts remove`): only once Temporal shows no worker
 * polling its queue and none of its sandboxes is left. Temporal's poller record is a stub here.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import type { WorkflowService } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { SandboxPlaneError } from '../../src/domain/errors';
import { Store } from '../../src/store';
import { TemporalHostDirectory } from '../../src/worker/temporal-host-directory';
import { projectionSnapshot } from '../helpers/projection-row';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-host-directory-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Temporal's answer about pollers: the queues in `polled` were polled just now, the others never. */
function pollersStub(polled: ReadonlySet<string>): WorkflowService {
  return {
    describeTaskQueue: async (request: { taskQueue: { name: string } }) => ({
      pollers: polled.has(request.taskQueue.name) ? [{ identity: 'w', lastAccessTime: msToTs(Date.now()) }] : [],
    }),
  } as unknown as WorkflowService;
}

function refusedWith(code: string, pattern: RegExp) {
  return (err: unknown) => err instanceof SandboxPlaneError && err.code === code && pattern.test(err.message);
}

describe('retiring a docker host', () => {
  test('unknown: NOT_FOUND; live: HOST_IN_USE; silent but holding a sandbox: HOST_IN_USE; silent and empty: removed', async () => {
    const store = Store.open(path.join(dir, 'plane.sqlite'));
    const longAgo = new Date(Date.now() - 10 * 60_000);
    for (const hostId of ['a', 'b', 'c']) {
      store.hosts.register({ hostId, taskQueue: `q-docker-${hostId}`, adapters: ['moto'], capacity: 5, engineId: null, identity: hostId }, longAgo);
    }
    store.sandboxes.record(projectionSnapshot({ id: 'on-b', state: 'READY', adapter: 'moto' }), { step: 1, action: 'ready', actor: 'w', effect: 'ready', reason: null, summary: {} });
    assert.ok('placement' in store.hosts.place({ sandboxId: 'on-b', adapter: 'moto', liveHostIds: new Set(['b']) }));
    const directory = new TemporalHostDirectory(store, pollersStub(new Set(['q-docker-a'])), 'default');

    await assert.rejects(directory.remove('zz'), refusedWith('NOT_FOUND', /no docker host zz/));
    await assert.rejects(directory.remove('a'), refusedWith('HOST_IN_USE', /docker host a is live/));
    await assert.rejects(directory.remove('b'), refusedWith('HOST_IN_USE', /1 sandbox\(es\) placed on docker host b/));
    const removed = await directory.remove('c');
    assert.equal(removed.hostId, 'c');
    assert.deepEqual(
      (await directory.list()).map((host) => host.hostId),
      ['a', 'b'],
    );
    store.close();
  });
});
