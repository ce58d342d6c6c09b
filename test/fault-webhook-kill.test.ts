/**
 * Fault: the worker that delivers webhooks (the store role, in a real `sandboxctl worker`
 * process) is SIGKILLed while a slow receiver holds a delivery in hand. A fresh worker goes
 * on where the endpoint's place in the store says: every event the store wrote reaches the
 * receiver, none with two bodies, in order per sandbox.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { Webhook } from 'standardwebhooks';
import { ChildProcessPlane } from './helpers/child-process-plane';
import { eventually } from './harness/eventually';
import { WebhookReceiver } from './helpers/webhook-receiver';
import { runSandboxctl, type WorkerProcess } from './harness/worker-process';

describe('fault: SIGKILL of the webhook-delivering worker mid-delivery', () => {
  let plane: ChildProcessPlane;
  let worker: WorkerProcess;
  const receiver = new WebhookReceiver();

  before(async () => {
    plane = await ChildProcessPlane.start({
      namespace: 'fault-webhook',
      env: { SANDBOXPLANE_FLAG_ADAPTER_MEMORY: '1' },
      seed: [['policy', 'add', '--principal', 'agent-*', '--capability', 'cloud.sandbox', '--effect', 'allow']],
    });
    // Each answer takes 1.5 s: the kill finds a delivery in hand.
    await receiver.start({ delayMs: 1_500 });
  });

  after(async () => {
    await receiver.kill();
    await plane?.dispose();
  });

  const storedEvents = (): { eventId: string; sandboxId: string | null; seq: number }[] => {
    const db = new Database(plane.env.SANDBOXPLANE_DB as string, { readonly: true, fileMustExist: true });
    try {
      db.pragma('busy_timeout = 5000');
      return db.prepare('SELECT event_id AS eventId, sandbox_id AS sandboxId, seq FROM events ORDER BY seq').all() as { eventId: string; sandboxId: string | null; seq: number }[];
    } finally {
      db.close();
    }
  };

  test('killed with a delivery in hand, a fresh worker delivers every event: none lost, none with two bodies, in order per sandbox', async () => {
    worker = await plane.startWorker();
    const added = await runSandboxctl(['webhooks', 'add', receiver.url('/hook'), '--json'], plane.env);
    assert.equal(added.code, 0, added.stderr);
    const { secret } = JSON.parse(added.stdout) as { secret: string };

    const ids = ['a', 'b', 'c'].map((name) => plane.id(name));
    for (const id of ids) {
      await plane.sandboxes.create({ id, principal: 'agent-1', adapter: 'memory', services: ['s3'] }, { wait: 'ready' });
      await plane.sandboxes.destroy(id);
    }
    await eventually('two deliveries taken, a third in hand', () => (receiver.at('/hook').length >= 2 ? true : undefined));
    await worker.kill();
    const atKill = receiver.at('/hook').length;
    const written = storedEvents();
    assert.ok(written.length > atKill, `events were still to deliver at the kill (${atKill} of ${written.length} taken)`);

    worker = await plane.startWorker();
    const signer = new Webhook(secret);
    await eventually(
      'every stored event at the receiver',
      () => {
        const seen = new Set(receiver.at('/hook').map((delivery) => delivery.headers['webhook-id']));
        return written.every((event) => seen.has(event.eventId)) ? true : undefined;
      },
      120_000,
    );
    const bodies = new Map<string, string>();
    const firstSeen: string[] = [];
    for (const delivery of receiver.at('/hook')) {
      signer.verify(delivery.body, delivery.headers);
      const id = delivery.headers['webhook-id'] as string;
      const earlier = bodies.get(id);
      assert.ok(earlier === undefined || earlier === delivery.body, `${id} came with one body`);
      if (earlier === undefined) firstSeen.push(id);
      bodies.set(id, delivery.body);
    }
    assert.deepEqual(
      firstSeen.filter((id) => written.some((event) => event.eventId === id)),
      written.map((event) => event.eventId),
      'first deliveries in the order the events were written (so in order per sandbox)',
    );
  });
});
