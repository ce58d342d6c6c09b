import { kindMatches, type StoredEvent } from '../domain/events';
import type { WebhookDelivery, WebhookOutcome, WebhookRecord } from '../domain/webhooks';
import type { SqliteDatabase } from './database';
import type { EventRepository } from './event-repository';

interface WebhookRow {
  webhook_id: string;
  url: string;
  kinds: string;
  principal: string | null;
  secret: string;
  after_seq: number;
  created_at: string;
  removed_at: string | null;
}

function toRecord(row: WebhookRow): WebhookRecord {
  return {
    webhookId: row.webhook_id,
    url: row.url,
    events: JSON.parse(row.kinds) as string[],
    principal: row.principal,
    createdAt: row.created_at,
    deliveredThrough: row.after_seq,
  };
}

/** A live endpoint with what signing needs: its secret as the store keeps it (sealed). */
export interface WebhookTarget extends WebhookRecord {
  readonly sealedSecret: string;
}

/** Deliveries kept per endpoint: enough to see what happened lately, bounded however many events flow. */
const DELIVERIES_KEPT = 1000;

/**
 * Registered endpoints, each with the place in the event order it has been given up to
 * (so a restarted delivery workflow goes on where the last left off), and the log of
 * deliveries. The store is its only writer.
 */
export class WebhookRepository {
  constructor(
    private readonly db: SqliteDatabase,
    private readonly events: EventRepository,
  ) {}

  /** Registers an endpoint that gets the events written from now on. */
  add(input: { webhookId: string; url: string; kinds: readonly string[]; principal: string | undefined; sealedSecret: string }, now: Date = new Date()): WebhookRecord {
    return this.db
      .transaction(() => {
        this.db
          .prepare('INSERT INTO webhooks (webhook_id, url, kinds, principal, secret, after_seq, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
          .run(input.webhookId, input.url, JSON.stringify(input.kinds), input.principal ?? null, input.sealedSecret, this.events.lastSeq(), now.toISOString());
        return this.get(input.webhookId) as WebhookRecord;
      })
      .immediate();
  }

  /** Live endpoints, oldest first. */
  list(): WebhookRecord[] {
    return (this.db.prepare('SELECT * FROM webhooks WHERE removed_at IS NULL ORDER BY created_at, webhook_id').all() as WebhookRow[]).map(toRecord);
  }

  get(webhookId: string): WebhookRecord | undefined {
    const target = this.target(webhookId);
    if (target === undefined) return undefined;
    const { sealedSecret: _secret, ...record } = target;
    return record;
  }

  /** A live endpoint with its sealed secret; `undefined` once removed (or never added). */
  target(webhookId: string): WebhookTarget | undefined {
    const row = this.db.prepare('SELECT * FROM webhooks WHERE webhook_id = ? AND removed_at IS NULL').get(webhookId) as WebhookRow | undefined;
    return row === undefined ? undefined : { ...toRecord(row), sealedSecret: row.secret };
  }

  /** Stops deliveries to an endpoint; its delivery log stays. `undefined` when it was not live. */
  remove(webhookId: string, now: Date = new Date()): WebhookRecord | undefined {
    const record = this.get(webhookId);
    if (record === undefined) return undefined;
    this.db.prepare('UPDATE webhooks SET removed_at = ? WHERE webhook_id = ?').run(now.toISOString(), webhookId);
    return record;
  }

  /** The next events `webhookId` asks for (its kinds, its principal's), after the place it has been given up to, oldest first. */
  pending(webhookId: string, limit: number): StoredEvent[] {
    const target = this.target(webhookId);
    if (target === undefined) return [];
    const out: StoredEvent[] = [];
    let after = target.deliveredThrough;
    // Filtered here (kinds are families too), in pages, so a filter that skips most events still finds the next it wants.
    while (out.length < limit) {
      const page = this.events.list({ afterSeq: after, limit: 200, ...(target.principal !== null ? { principal: target.principal } : {}) });
      if (page.length === 0) break;
      for (const event of page) if (kindMatches(event.kind, target.events) && out.length < limit) out.push(event);
      after = (page[page.length - 1] as StoredEvent).seq;
      if (out.length === 0) this.advance(webhookId, after);
    }
    return out;
  }

  /** Whether any live endpoint wants an event written after `afterSeq`; which ones. */
  wanting(afterSeq: number): string[] {
    const webhooks = this.list();
    if (webhooks.length === 0) return [];
    const events = this.events.list({ afterSeq, limit: 500 });
    if (events.length === 0) return [];
    // A burst past one look: every endpoint is woken, and each finds what it wants itself.
    if (events.length === 500) return webhooks.map((webhook) => webhook.webhookId);
    return webhooks
      .filter((webhook) => events.some((event) => (webhook.principal === null || event.principal === webhook.principal) && kindMatches(event.kind, webhook.events)))
      .map((webhook) => webhook.webhookId);
  }

  /** Moves an endpoint's place on to `seq` (never back): the event there was delivered or given up on. */
  advance(webhookId: string, seq: number): void {
    this.db.prepare('UPDATE webhooks SET after_seq = ? WHERE webhook_id = ? AND after_seq < ?').run(seq, webhookId, seq);
  }

  /** Logs one attempt, keeping the newest {@link DELIVERIES_KEPT} of the endpoint's. */
  recordDelivery(
    webhookId: string,
    event: Pick<StoredEvent, 'eventId' | 'seq'>,
    attempt: { attempt: number; outcome: WebhookOutcome; status: number | null; error: string | null; durationMs: number },
    now: Date = new Date(),
  ): void {
    this.db.transaction(() => {
      this.db
        .prepare('INSERT INTO webhook_deliveries (webhook_id, event_id, event_seq, attempt, outcome, status, error, duration_ms, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)')
        .run(webhookId, event.eventId, event.seq, attempt.attempt, attempt.outcome, attempt.status, attempt.error, attempt.durationMs, now.toISOString());
      this.db
        .prepare('DELETE FROM webhook_deliveries WHERE webhook_id = ? AND id <= (SELECT id FROM webhook_deliveries WHERE webhook_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)')
        .run(webhookId, webhookId, DELIVERIES_KEPT);
    })();
  }

  /** The newest attempts to `webhookId`, oldest first; `undefined` when it never existed. */
  deliveries(webhookId: string, limit: number): WebhookDelivery[] | undefined {
    if (this.db.prepare('SELECT 1 FROM webhooks WHERE webhook_id = ?').get(webhookId) === undefined) return undefined;
    const rows = this.db
      .prepare(
        `SELECT event_id AS eventId, attempt, outcome, status, error, duration_ms AS durationMs, at FROM
           (SELECT * FROM webhook_deliveries WHERE webhook_id = ? ORDER BY id DESC LIMIT ?) ORDER BY id`,
      )
      .all(webhookId, limit) as WebhookDelivery[];
    return rows;
  }
}
