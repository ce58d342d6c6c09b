import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { deliveryBody } from '../../src/activities/webhook-activities';
import type { OperationRecord } from '../../src/domain/lifecycle-record';
import { webhookUrlSchema } from '../../src/domain/webhooks';
import { Store } from '../../src/store';
import { projectionSnapshot } from '../helpers/projection-row';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-webhooks-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
let counter = 0;
const freshStore = () => Store.open(path.join(dir, `store-${(counter += 1)}`, 'plane.sqlite'));

let step = 0;
function row(action: string, actor: string): OperationRecord {
  step += 1;
  return { runId: 'run-1', step, action, actor, effect: action, reason: null, summary: {} };
}

describe('webhook endpoints in the store', () => {
  test('an endpoint gets only what it asks for, from when it was added, and its place moves on only forward', () => {
    const store = freshStore();
    try {
      store.sandboxes.record(projectionSnapshot({ id: 'before', state: 'REQUESTED' }), row('requested', 'agent-1'));
      store.webhooks.add({ webhookId: 'wh_0000000000000001', url: 'https://a.example/hook', kinds: ['sandbox.ready'], principal: undefined, sealedSecret: 'x' });
      store.webhooks.add({ webhookId: 'wh_0000000000000002', url: 'https://b.example/hook', kinds: [], principal: 'agent-2', sealedSecret: 'x' });
      assert.deepEqual(store.webhooks.wanting(0), [], 'an event from before the endpoints was written before they were: the lookup starts after it');
      const seen = store.events.lastSeq();
      store.sandboxes.record(projectionSnapshot({ id: 'one', state: 'REQUESTED' }), row('requested', 'agent-1'));
      store.sandboxes.record(projectionSnapshot({ id: 'one', state: 'READY' }), row('ready', 'worker'));
      assert.deepEqual(store.webhooks.wanting(seen), ['wh_0000000000000001'], "agent-1's ready is wanted by the first only");
      const pending = store.webhooks.pending('wh_0000000000000001', 10);
      assert.deepEqual(
        pending.map((event) => [event.sandboxId, event.kind]),
        [['one', 'sandbox.ready']],
      );
      assert.deepEqual(store.webhooks.pending('wh_0000000000000002', 10), [], "agent-2's endpoint sees none of agent-1's");
      store.webhooks.advance('wh_0000000000000001', pending[0]?.seq as number);
      store.webhooks.advance('wh_0000000000000001', 1);
      assert.equal(store.webhooks.get('wh_0000000000000001')?.deliveredThrough, pending[0]?.seq, 'never back');
      assert.deepEqual(store.webhooks.pending('wh_0000000000000001', 10), []);
      store.webhooks.remove('wh_0000000000000001');
      assert.equal(store.webhooks.target('wh_0000000000000001'), undefined);
      assert.deepEqual(store.webhooks.deliveries('wh_0000000000000001', 10), [], 'a removed endpoint keeps its log');
    } finally {
      store.close();
    }
  });

  test('the delivery log keeps the newest 1,000 attempts of an endpoint', () => {
    const store = freshStore();
    try {
      store.webhooks.add({ webhookId: 'wh_0000000000000003', url: 'https://c.example/hook', kinds: [], principal: undefined, sealedSecret: 'x' });
      for (let n = 1; n <= 1_005; n += 1) {
        store.webhooks.recordDelivery('wh_0000000000000003', { eventId: `evt_${n}`, seq: n }, { attempt: 1, outcome: 'failed', status: 503, error: 'answered 503', durationMs: 1 });
      }
      const log = store.webhooks.deliveries('wh_0000000000000003', 1000) ?? [];
      assert.equal(log.length, 1000);
      assert.equal(log[0]?.eventId, 'evt_6');
      assert.equal(log.at(-1)?.eventId, 'evt_1005');
    } finally {
      store.close();
    }
  });

  test('a body is the event’s contract fields in their order, and a Standard Webhooks library verifies what is signed over it', () => {
    const store = freshStore();
    try {
      store.sandboxes.record(projectionSnapshot({ id: 'signed', state: 'REQUESTED' }), row('requested', 'agent-1'));
      const [event] = store.events.list({ limit: 1 });
      assert.ok(event);
      const body = deliveryBody(event);
      assert.deepEqual(Object.keys(JSON.parse(body) as object), ['eventId', 'time', 'kind', 'sandboxId', 'runId', 'principal', 'actor', 'reason', 'from', 'to', 'detail']);
      assert.equal(deliveryBody(event), body, 'the same body every time');
      const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
      const signer = new Webhook(secret);
      const at = new Date();
      const headers = { 'webhook-id': event.eventId, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': signer.sign(event.eventId, at, body) };
      assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
    } finally {
      store.close();
    }
  });

  test('an endpoint is https, or http to loopback only, and carries no credentials', () => {
    for (const ok of ['https://hooks.example.com/x', 'http://127.0.0.1:8899/hook', 'http://localhost:1/x', 'http://[::1]:2/x']) assert.ok(webhookUrlSchema.safeParse(ok).success, ok);
    for (const bad of ['http://hooks.example.com/x', 'http://10.0.0.1/x', 'https://user:pw@hooks.example.com/x', 'ftp://127.0.0.1/x', 'not a url']) {
      assert.ok(!webhookUrlSchema.safeParse(bad).success, bad);
    }
  });
});
