/**
 * The lifecycle worker's workflow cache is bounded (SANDBOXPLANE_WORKFLOW_CACHE_SIZE, issue
 * 30): past it the least recently used run is evicted, and its next task (a query, an
 * update, a signal) replays its history first. With a cache of 2 and 5 live sandboxes
 * nearly every task finds its run evicted; each sandbox must still answer its status,
 * extend and destroy as one that stayed cached does (real dev server).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { StoreClient } from '../src/client/store-client';
import { testTemporalAddress } from './harness/test-temporal';
import { startTestWorker, type TestWorker } from './harness/test-worker';

const LIVE = 5;

describe('a workflow cache of 2 with 5 live sandboxes (evicted runs replay)', () => {
  let worker: TestWorker;
  before(async () => {
    worker = await startTestWorker(await testTemporalAddress(), { env: { SANDBOXPLANE_WORKFLOW_CACHE_SIZE: '2' } });
    await new StoreClient({ client: worker.client, taskQueue: worker.config.taskQueue }).addPolicy({ principalPattern: 'agent-cache', capability: 'cloud.sandbox', effect: 'allow' });
  });
  after(() => worker?.stop());

  test('the configured size reaches the worker', () => {
    assert.equal(worker.config.workflowCacheSize, 2);
  });

  test('every sandbox answers its status, extends and is destroyed, in turns that evict the others', async () => {
    const ids: string[] = [];
    for (let index = 0; index < LIVE; index += 1) {
      const sandbox = await worker.sandboxes.create({ principal: 'agent-cache', services: ['s3'], adapter: 'memory', ttlSeconds: 600 }, { wait: 'ready' });
      ids.push(sandbox.id);
    }
    // Round robin: by the time a sandbox's turn comes, the two runs after it have pushed it out.
    const cached = () => Math.max(...worker.plane.worker.workers.map((sdkWorker) => sdkWorker.getStatus().numCachedWorkflows));
    for (const id of ids) {
      const status = await worker.sandboxes.status(id);
      assert.equal(status.state, 'READY', `${id}: ${status.waitingFor}`);
      assert.equal(status.id, id);
      assert.ok(cached() <= 2, `the worker holds at most 2 runs, with ${LIVE} live: ${cached()}`);
    }
    const before = new Map<string, string | null>();
    for (const id of ids) before.set(id, (await worker.sandboxes.status(id)).expiresAt);
    for (const id of ids) {
      const extended = await worker.sandboxes.extend(id, { ttlSeconds: 1200, reason: 'evicted run' });
      assert.equal(extended.state, 'READY');
      assert.ok(Date.parse(extended.expiresAt ?? '') > Date.parse(before.get(id) ?? ''), `${id}: the extension moved its expiry (${before.get(id)} → ${extended.expiresAt})`);
    }
    for (const id of ids) {
      const status = await worker.sandboxes.status(id);
      assert.equal(status.state, 'READY');
      assert.ok(Date.parse(status.expiresAt ?? '') > Date.parse(before.get(id) ?? ''), `${id}: the status after a replay keeps the extension`);
    }
    for (const id of ids) {
      const destroyed = await worker.sandboxes.destroy(id);
      assert.equal(destroyed.state, 'DESTROYED', `${id}: ${destroyed.waitingFor}`);
    }
    for (const id of ids) assert.equal((await worker.sandboxes.status(id)).state, 'DESTROYED');
  });
});
