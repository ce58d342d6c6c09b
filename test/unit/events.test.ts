import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { agentActor, eventIdOf, kindMatches } from '../../src/domain/events';
import type { OperationRecord } from '../../src/domain/lifecycle-record';
import { Store } from '../../src/store';
import { projectionSnapshot } from '../helpers/projection-row';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-events-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
let counter = 0;
const freshStore = () => Store.open(path.join(dir, `store-${(counter += 1)}`, 'plane.sqlite'));

let step = 0;
function row(action: string, actor: string, extra: Partial<OperationRecord> = {}): OperationRecord {
  step += 1;
  return { runId: 'run-1', step, action, actor, effect: action, reason: null, summary: {}, ...extra };
}

describe('events derived from audit rows', () => {
  test('a sandbox requested, ready, extended by its agent and expired by its TTL says so, in order, with the states before and after', () => {
    const store = freshStore();
    try {
      const sandbox = (state: Parameters<typeof projectionSnapshot>[0]['state']) => projectionSnapshot({ id: 'sbx-1', state });
      store.sandboxes.record(sandbox('REQUESTED'), row('requested', 'agent-1', { summary: { services: ['s3'], adapter: 'memory', capability: 'cloud.sandbox' } }));
      store.sandboxes.record(sandbox('PROVISIONING'), row('screened', 'policy', { effect: 'allow' }));
      store.sandboxes.record(sandbox('READY'), row('ready', 'worker', { summary: { endpoint: 'http://127.0.0.1:1', credentials: 'never' } }));
      store.sandboxes.record(sandbox('READY'), row('extended', agentActor('key:k-1'), { summary: { bySeconds: 600, from: '2029-12-31T23:50:00.000Z', to: '2030-01-01T00:00:00.000Z' } }));
      store.sandboxes.record(sandbox('READY'), row('expiring', 'timer'));
      store.sandboxes.atomically(() => {
        store.sandboxes.record(sandbox('DESTROYED'), row('destroying', 'timer', { reason: 'TTL expired' }));
        store.sandboxes.record(sandbox('DESTROYED'), row('destroyed', 'worker'));
      });
      const events = store.events.list({ limit: 100 });
      assert.deepEqual(
        events.map((event) => [event.kind, event.reason, event.from, event.to]),
        [
          ['sandbox.requested', 'agent', null, 'REQUESTED'],
          ['sandbox.ready', 'agent', 'REQUESTED', 'READY'],
          ['sandbox.extended', 'agent', 'READY', 'READY'],
          ['sandbox.destroyed', 'ttl', 'READY', 'DESTROYED'],
        ],
      );
      assert.deepEqual(events[1]?.detail, { endpoint: 'http://127.0.0.1:1' }, 'only the facts a receiver acts on');
      assert.deepEqual(events[2]?.detail, { bySeconds: 600, expiresAt: '2030-01-01T00:00:00.000Z' });
      assert.equal(events[3]?.detail.why, 'TTL expired');
      assert.equal(events[3]?.actor, 'timer', 'the one who ended it, not the worker that tore it down');
      assert.ok(events.every((event) => event.principal === 'agent-1' && event.sandboxId === 'sbx-1'));
      assert.deepEqual(
        store.events.list({ afterSeq: events[1]?.seq, limit: 1 }).map((event) => event.kind),
        ['sandbox.extended'],
        'read on from a place in the order',
      );
    } finally {
      store.close();
    }
  });

  test('a retried write adds no second event, and the event id is the row’s however often it is written', () => {
    const store = freshStore();
    try {
      const requested = row('requested', 'agent-1');
      store.sandboxes.record(projectionSnapshot({ id: 'sbx-2', state: 'REQUESTED' }), requested);
      store.sandboxes.record(projectionSnapshot({ id: 'sbx-2', state: 'REQUESTED' }), requested);
      const events = store.events.list({ limit: 10 });
      assert.equal(events.length, 1);
      assert.equal(events[0]?.eventId, eventIdOf({ stream: 'sandbox', workflowId: 'sandbox-sbx-2', runId: 'run-1', step: requested.step }));
    } finally {
      store.close();
    }
  });

  test('an operator’s destroy, a denial by policy and an emulator death each name their reason', () => {
    const store = freshStore();
    try {
      store.sandboxes.record(projectionSnapshot({ id: 'op', state: 'READY' }), row('ready', 'worker'));
      store.sandboxes.record(projectionSnapshot({ id: 'op', state: 'DESTROYED' }), row('destroying', 'cli:alice', { reason: 'done' }));
      store.sandboxes.record(projectionSnapshot({ id: 'op', state: 'DESTROYED' }), row('destroyed', 'worker'));
      store.sandboxes.record(projectionSnapshot({ id: 'no', state: 'DENIED' }), row('screened', 'policy', { effect: 'deny', summary: { decision: { code: 'QUOTA_EXCEEDED' } } }));
      store.sandboxes.record(projectionSnapshot({ id: 'dead', state: 'READY' }), row('emulator_restarted', 'worker'));
      store.sandboxes.record(projectionSnapshot({ id: 'dead', state: 'FAILED' }), row('destroying', 'worker', { reason: 'the emulator stopped serving' }));
      store.sandboxes.record(projectionSnapshot({ id: 'dead', state: 'FAILED' }), row('destroyed', 'worker'));
      const seen = store.events.list({ limit: 100 }).map((event) => `${event.sandboxId} ${event.kind} ${event.reason}`);
      assert.deepEqual(seen, ['op sandbox.ready agent', 'op sandbox.destroyed operator', 'no sandbox.failed policy', 'dead sandbox.unhealthy health', 'dead sandbox.failed health']);
      assert.deepEqual(store.events.list({ principal: 'someone-else', limit: 100 }), [], 'another principal sees none of it');
    } finally {
      store.close();
    }
  });

  test('filters take kinds and families', () => {
    assert.ok(kindMatches('sandbox.ready', []));
    assert.ok(kindMatches('sandbox.ready', ['sandbox.*']));
    assert.ok(!kindMatches('iac.applied', ['sandbox.*', 'snapshot.created']));
    assert.ok(kindMatches('snapshot.created', ['sandbox.*', 'snapshot.created']));
  });
});
