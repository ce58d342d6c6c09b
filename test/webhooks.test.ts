/**
 * Webhooks (issue 40, DESIGN §19) on a real dev server, the store's SQLite file, the CLI
 * and a receiver in a process of its own: one sandbox's requested, ready, extended and
 * destroyed arrive in order, each signed as Standard Webhooks says (checked with the
 * `standardwebhooks` library and the secret `webhooks add` printed); with the receiver
 * killed, a sandbox that expires by its TTL is delivered (reason `ttl`) once the receiver
 * is back, and no event id ever comes with two bodies; a dead endpoint beside it leaves
 * creates READY and logs its failures; an endpoint for another principal gets nothing; the
 * delivery workflow's history replays on this build.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import type { WebhookDelivery, WebhookRecord } from '../src/domain/webhooks';
import { webhookWorkflowId } from '../src/domain/webhooks';
import { runCli } from './harness/cli';
import { cliFailure, cliOutput } from './helpers/cli-json';
import { eventually, waitForState } from './harness/eventually';
import { assertReplays, fetchHistories } from './helpers/replay-histories';
import { createTestNamespace } from './helpers/test-namespace';
import { testTemporalAddress } from './harness/test-temporal';
import { startTestWorker, type TestWorker } from './harness/test-worker';
import { WebhookReceiver } from './helpers/webhook-receiver';

describe('webhooks (real dev server, store file, CLI and receiver process)', () => {
  let worker: TestWorker;
  const receiver = new WebhookReceiver();
  const operator = (...args: string[]) => {
    const { SANDBOXPLANE_PRINCIPAL: _bound, ...env } = worker.env;
    return runCli([...args, '--json'], env);
  };
  let main: WebhookRecord & { secret: string };
  let dead: WebhookRecord;
  let other: WebhookRecord;

  before(async () => {
    const address = await testTemporalAddress();
    const namespace = await createTestNamespace(address, 'webhooks');
    worker = await startTestWorker(address, { env: { TEMPORAL_NAMESPACE: namespace } });
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
    await receiver.start();
    main = cliOutput(await operator('webhooks', 'add', receiver.url('/main'), '--events', 'sandbox.*'));
    // Nothing listens on port 9 of loopback: every attempt is refused.
    dead = cliOutput(await operator('webhooks', 'add', 'http://127.0.0.1:9/dead'));
    other = cliOutput(await operator('webhooks', 'add', receiver.url('/other'), '--principal', 'agent-other'));
  });

  after(async () => {
    await receiver.kill();
    await worker?.stop();
  });

  const verified = (pathname: string) => {
    const signer = new Webhook(main.secret);
    return receiver.at(pathname).map((delivery) => {
      signer.verify(delivery.body, delivery.headers);
      assert.equal(delivery.headers['webhook-id'], delivery.event.eventId, 'webhook-id is the event id');
      return delivery.event;
    });
  };

  test('one sandbox’s requested, ready, extended and destroyed arrive in order, signed; a dead endpoint beside it holds nothing back', async () => {
    assert.match(main.secret, /^whsec_[A-Za-z0-9+/=]{40,}$/);
    const created = await worker.sandboxes.create({ id: 'wh-one', principal: 'agent-a', adapter: 'memory', services: ['s3'] }, { wait: 'ready' });
    assert.equal(created.state, 'READY', 'a create is READY with a dead endpoint registered');
    await worker.sandboxes.extend('wh-one', { ttlSeconds: 600, actor: 'cli:operator' });
    await worker.sandboxes.destroy('wh-one', { actor: 'cli:operator', reason: 'done' });

    const kinds = await eventually('four events at the receiver', () => {
      const events = verified('/main').filter((event) => event.sandboxId === 'wh-one');
      return events.length >= 4 ? events : undefined;
    });
    assert.deepEqual(
      kinds.map((event) => [event.kind, event.reason]),
      [
        ['sandbox.requested', 'agent'],
        ['sandbox.ready', 'agent'],
        ['sandbox.extended', 'operator'],
        ['sandbox.destroyed', 'operator'],
      ],
    );
    const listed = await operator('events', '--sandbox', 'wh-one');
    assert.equal(listed.code, 0, listed.stderr);
    const lines = listed.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.deepEqual(kinds, lines, '`events --sandbox` says exactly what was delivered');

    const deadLog = await eventually('failed attempts at the dead endpoint', async () => {
      const { deliveries } = cliOutput<{ deliveries: WebhookDelivery[] }>(await operator('webhooks', 'deliveries', dead.webhookId));
      return deliveries.some((delivery) => delivery.outcome === 'failed' && delivery.attempt >= 2) ? deliveries : undefined;
    });
    assert.ok(deadLog.every((delivery) => delivery.outcome === 'failed' && delivery.status === null));
    assert.deepEqual(receiver.at('/other'), [], "an endpoint for another principal gets none of agent-a's events");
  });

  test('with the receiver killed, a TTL expiry is delivered once it is back, and no id comes with two bodies', async () => {
    await receiver.kill();
    await worker.sandboxes.create({ id: 'wh-ttl', principal: 'agent-a', adapter: 'memory', services: ['s3'], ttlSeconds: 3 }, { wait: 'ready' });
    await waitForState(worker.sandboxes, 'wh-ttl', 'DESTROYED');
    await eventually('a failed attempt while the receiver is down', async () => {
      const { deliveries } = cliOutput<{ deliveries: WebhookDelivery[] }>(await operator('webhooks', 'deliveries', main.webhookId));
      return deliveries.some((delivery) => delivery.outcome === 'failed') ? true : undefined;
    });
    await receiver.start();
    const expired = await eventually('the expiry at the receiver', () => verified('/main').find((event) => event.sandboxId === 'wh-ttl' && event.kind === 'sandbox.destroyed'), 90_000);
    assert.equal(expired.reason, 'ttl');
    assert.deepEqual([expired.from, expired.to], ['READY', 'DESTROYED']);
    const bodies = new Map<string, string>();
    for (const delivery of receiver.at('/main')) {
      const seen = bodies.get(delivery.headers['webhook-id'] as string);
      assert.ok(seen === undefined || seen === delivery.body, `id ${delivery.headers['webhook-id']} came with one body`);
      bodies.set(delivery.headers['webhook-id'] as string, delivery.body);
    }
    const order = verified('/main')
      .filter((event) => event.sandboxId === 'wh-ttl')
      .map((event) => event.kind);
    assert.deepEqual([...new Set(order)], ['sandbox.requested', 'sandbox.ready', 'sandbox.destroyed'], 'in order for the sandbox');
  });

  test('webhooks list, remove and the refusals: a non-loopback http URL, a bound caller, an unknown id', async () => {
    const { webhooks } = cliOutput<{ webhooks: WebhookRecord[] }>(await operator('webhooks', 'list'));
    assert.deepEqual(webhooks.map((webhook) => webhook.webhookId).sort(), [main.webhookId, dead.webhookId, other.webhookId].sort());
    assert.ok(
      webhooks.every((webhook) => !('secret' in webhook)),
      'list never shows a secret',
    );
    cliFailure(await operator('webhooks', 'add', 'http://hooks.example.com/x'), 2, 'INVALID_INPUT');
    cliFailure(await operator('webhooks', 'add', receiver.url('/x'), '--events', 'sandbox.exploded'), 2, 'INVALID_INPUT');
    const bound = await runCli(['webhooks', 'list', '--json'], { ...worker.env, SANDBOXPLANE_PRINCIPAL: 'agent-a' });
    cliFailure(bound, 3, 'PRINCIPAL_MISMATCH');
    const removed = cliOutput<WebhookRecord>(await operator('webhooks', 'remove', dead.webhookId));
    assert.equal(removed.webhookId, dead.webhookId);
    cliFailure(await operator('webhooks', 'remove', dead.webhookId), 4, 'NOT_FOUND');
  });

  test('the delivery workflow’s history replays on this build', async () => {
    await assertReplays(await fetchHistories(worker.client, [webhookWorkflowId(main.webhookId)]));
    const status: SandboxStatus = await worker.sandboxes.status('wh-one');
    assert.equal(status.state, 'DESTROYED');
  });
});
