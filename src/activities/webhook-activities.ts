import { randomBytes } from 'node:crypto';
import { ApplicationFailure, Context, log } from '@temporalio/activity';
import { Webhook } from 'standardwebhooks';
import { sealTo } from '../crypto/sealed-box';
import { SandboxPlaneError } from '../domain/errors';
import type { PlaneEvent, StoredEvent } from '../domain/events';
import type { SealedText } from '../domain/sealed-text';
import type { WebhookRecord } from '../domain/webhooks';
import type { SecretBox } from '../crypto/secret-box';
import type { Store } from '../store';
import { planeMetrics } from '../telemetry/plane-metrics';
import { withTaxonomy } from './activity-failure';

/** How long one receiver may take to answer one delivery. */
const DELIVERY_TIMEOUT_MS = 10_000;
/** Events one activity delivers before the workflow takes a turn (a heartbeat after each). */
const BATCH = 20;

/** What the secret is bound to when sealed: it opens for its own endpoint only. */
function boundTo(webhookId: string): string {
  return `webhook:${webhookId}`;
}

/**
 * Registers an endpoint under the client's id and returns it with its secret sealed to the
 * caller's one-time key (the result is in history). A retried add finds its own endpoint
 * and hands the same secret again; an id taken by another URL is refused.
 */
export function addWebhook(
  store: Store,
  secrets: SecretBox,
  input: { webhookId: string; url: string; kinds: readonly string[]; principal: string | undefined; recipient: string },
): WebhookRecord & { secret: SealedText } {
  const existing = store.webhooks.target(input.webhookId);
  if (existing !== undefined && existing.url !== input.url) {
    throw new SandboxPlaneError('INVALID_STATE', `webhook id ${input.webhookId} is taken by another endpoint`, { hint: 'Run `sandboxctl webhooks add` again: it draws a new id.' });
  }
  let raw: Buffer;
  let record: WebhookRecord;
  if (existing === undefined) {
    raw = randomBytes(32);
    record = store.webhooks.add({ ...input, sealedSecret: secrets.seal(raw, boundTo(input.webhookId)) });
  } else {
    raw = secrets.open(existing.sealedSecret, boundTo(input.webhookId));
    const { sealedSecret: _sealed, ...rest } = existing;
    record = rest;
  }
  return { ...record, secret: sealTo(input.recipient, `whsec_${raw.toString('base64')}`) };
}

/** The body of a delivery: the event as the contract names it, byte for byte the same on every attempt. */
export function deliveryBody(event: StoredEvent): string {
  const { seq: _seq, ...contract } = event;
  const ordered: PlaneEvent = {
    eventId: contract.eventId,
    time: contract.time,
    kind: contract.kind,
    sandboxId: contract.sandboxId,
    runId: contract.runId,
    principal: contract.principal,
    actor: contract.actor,
    reason: contract.reason,
    from: contract.from,
    to: contract.to,
    detail: contract.detail,
  };
  return JSON.stringify(ordered);
}

interface Answer {
  readonly status: number | null;
  readonly error: string | null;
}

async function post(url: string, headers: Record<string, string>, body: string): Promise<Answer> {
  try {
    const response = await fetch(url, { method: 'POST', headers, body, redirect: 'manual', signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS) });
    // The body is the receiver's business; read it off so the connection is freed.
    await response.arrayBuffer().catch(() => undefined);
    return response.ok ? { status: response.status, error: null } : { status: response.status, error: `answered ${response.status} ${response.statusText}`.trim() };
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    return { status: null, error: cause ?? (err as Error).message };
  }
}

export interface WebhookActivityDeps {
  readonly store: Store;
  readonly secrets: SecretBox;
}

/**
 * The store role's webhook deliveries (DESIGN §19): each signed as Standard Webhooks says
 * (`webhook-id` the event id, `webhook-timestamp`, `webhook-signature` over
 * "id.timestamp.body"), in the one event order, the endpoint's place moved on only once
 * the receiver said 2xx. A failed attempt throws: Temporal retries with backoff, and the
 * retry starts at the same event with the same body.
 */
export function createWebhookActivities(deps: WebhookActivityDeps) {
  const { store, secrets } = deps;

  function attemptOf(webhookId: string, eventId: string): number {
    return (store.db.prepare('SELECT COUNT(*) AS n FROM webhook_deliveries WHERE webhook_id = ? AND event_id = ?').get(webhookId, eventId) as { n: number }).n + 1;
  }

  return {
    /** Delivers what `webhookId` has pending, oldest first; `removed` once the endpoint is gone, `more` when a batch's worth was sent. */
    async deliverWebhookEvents(input: { webhookId: string }): Promise<{ removed: boolean; delivered: number; more: boolean }> {
      const target = store.webhooks.target(input.webhookId);
      if (target === undefined) return { removed: true, delivered: 0, more: false };
      const pending = store.webhooks.pending(input.webhookId, BATCH);
      if (pending.length === 0) return { removed: false, delivered: 0, more: false };
      const signer = new Webhook(secrets.open(target.sealedSecret, boundTo(input.webhookId)).toString('base64'));
      let delivered = 0;
      for (const event of pending) {
        const body = deliveryBody(event);
        const timestamp = new Date();
        const headers = {
          'content-type': 'application/json',
          'user-agent': 'cloud-sandbox-plane-webhooks',
          'webhook-id': event.eventId,
          'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
          'webhook-signature': signer.sign(event.eventId, timestamp, body),
        };
        const started = Date.now();
        const answer = await post(target.url, headers, body);
        const outcome = answer.error === null ? 'delivered' : 'failed';
        await withTaxonomy(() =>
          store.webhooks.recordDelivery(input.webhookId, event, { attempt: attemptOf(input.webhookId, event.eventId), outcome, ...answer, durationMs: Date.now() - started }),
        );
        planeMetrics.webhookDelivered(outcome);
        if (answer.error !== null) {
          throw ApplicationFailure.retryable(`${target.url} did not take ${event.kind} ${event.eventId}: ${answer.error}`, 'WEBHOOK_UNDELIVERED');
        }
        store.webhooks.advance(input.webhookId, event.seq);
        delivered += 1;
        Context.current().heartbeat(delivered);
      }
      return { removed: false, delivered, more: pending.length === BATCH };
    },

    /** After a day of failed attempts: the head event is given up on (logged `gave_up`), and the endpoint moves on. */
    async giveUpWebhookEvent(input: { webhookId: string }): Promise<void> {
      return withTaxonomy(() => {
        const [head] = store.webhooks.pending(input.webhookId, 1);
        if (head === undefined) return;
        store.webhooks.recordDelivery(input.webhookId, head, {
          attempt: attemptOf(input.webhookId, head.eventId),
          outcome: 'gave_up',
          status: null,
          error: 'not taken for a day',
          durationMs: 0,
        });
        store.webhooks.advance(input.webhookId, head.seq);
        planeMetrics.webhookDelivered('gave_up');
        log.warn('webhook event given up after a day', { webhookId: input.webhookId, eventId: head.eventId });
      });
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
