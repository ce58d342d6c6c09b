import { eventOf, type AuditFacts, type PlaneEvent, type StoredEvent } from '../domain/events';
import type { OperationRecord } from '../domain/lifecycle-record';
import type { SqliteDatabase } from './database';

interface EventRow {
  seq: number;
  event_id: string;
  time: string;
  kind: string;
  sandbox_id: string | null;
  run_id: string | null;
  principal: string;
  actor: string;
  reason: string;
  from_state: string | null;
  to_state: string | null;
  detail: string;
}

function toEvent(row: EventRow): StoredEvent {
  return {
    seq: row.seq,
    eventId: row.event_id,
    time: row.time,
    kind: row.kind as StoredEvent['kind'],
    sandboxId: row.sandbox_id,
    runId: row.run_id,
    principal: row.principal,
    actor: row.actor,
    reason: row.reason as StoredEvent['reason'],
    from: row.from_state,
    to: row.to_state,
    detail: JSON.parse(row.detail) as Record<string, unknown>,
  };
}

/** Which events a reader asks for: after a place in the order, or since a time; one sandbox's, one principal's, some kinds. */
export interface EventQuery {
  readonly afterSeq?: number;
  readonly sinceIso?: string;
  readonly sandboxId?: string;
  /** A principal-bound reader's own only; `undefined`: everyone's (an operator). */
  readonly principal?: string;
  readonly limit: number;
}

/** An audit row just inserted, with where it was written. */
interface WrittenRow {
  readonly workflowId: string;
  readonly operation: OperationRecord;
  readonly at: string;
}

/**
 * The events table: each event derived (domain/events) from the audit row that records
 * its change, inside the transaction that inserts the row. Nothing else writes it.
 */
export class EventRepository {
  constructor(private readonly db: SqliteDatabase) {}

  /** The event of a sandbox's audit row just inserted (if it records a change). */
  fromSandboxRow(sandboxId: string, row: WrittenRow): void {
    const sandbox = this.db.prepare('SELECT principal, state FROM sandboxes WHERE id = ?').get(sandboxId) as { principal: string; state: string } | undefined;
    if (sandbox === undefined) return;
    const last = this.db.prepare('SELECT to_state FROM events WHERE sandbox_id = ? ORDER BY seq DESC LIMIT 1').get(sandboxId) as { to_state: string | null } | undefined;
    const ending =
      row.operation.action === 'destroyed'
        ? (this.db.prepare(`SELECT actor, reason FROM operations WHERE sandbox_id = ? AND action IN ('destroying', 'withdrawn') ORDER BY seq DESC LIMIT 1`).get(sandboxId) as
            { actor: string; reason: string | null } | undefined)
        : undefined;
    this.append({
      ...this.factsOf('sandbox', row),
      sandboxId,
      principal: sandbox.principal,
      from: last?.to_state ?? null,
      to: sandbox.state,
      ...(ending !== undefined ? { ending } : {}),
    });
  }

  /** The event of a target's audit row just inserted (an IaC run against an operator's target): its principal is the one that asked for the run. */
  fromTargetRow(row: WrittenRow): void {
    const requested = this.db.prepare(`SELECT actor FROM target_operations WHERE workflow_id = ? AND action = 'iac_requested' ORDER BY seq LIMIT 1`).get(row.workflowId) as
      { actor: string } | undefined;
    this.append({ ...this.factsOf('target', row), sandboxId: null, principal: requested?.actor ?? 'unknown', from: null, to: null });
  }

  private factsOf(stream: AuditFacts['stream'], row: WrittenRow): Omit<AuditFacts, 'sandboxId' | 'principal' | 'from' | 'to'> {
    const { operation } = row;
    return {
      stream,
      workflowId: row.workflowId,
      runId: operation.runId ?? '',
      step: operation.step,
      action: operation.action,
      actor: operation.actor,
      effect: operation.effect,
      reason: operation.reason,
      summary: operation.summary,
      at: row.at,
    };
  }

  private append(facts: AuditFacts): void {
    const event = eventOf(facts);
    if (event === undefined) return;
    this.insert(event);
  }

  private insert(event: PlaneEvent): void {
    this.db
      .prepare(
        `INSERT OR IGNORE INTO events (event_id, time, kind, sandbox_id, run_id, principal, actor, reason, from_state, to_state, detail)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(event.eventId, event.time, event.kind, event.sandboxId, event.runId, event.principal, event.actor, event.reason, event.from, event.to, JSON.stringify(event.detail));
  }

  /** Events in their one order, oldest first. */
  list(query: EventQuery): StoredEvent[] {
    const rows = this.db
      .prepare(
        `SELECT * FROM events
         WHERE seq > @afterSeq AND (@sinceIso IS NULL OR time >= @sinceIso)
           AND (@sandboxId IS NULL OR sandbox_id = @sandboxId) AND (@principal IS NULL OR principal = @principal)
         ORDER BY seq LIMIT @limit`,
      )
      .all({ afterSeq: query.afterSeq ?? 0, sinceIso: query.sinceIso ?? null, sandboxId: query.sandboxId ?? null, principal: query.principal ?? null, limit: query.limit }) as EventRow[];
    return rows.map(toEvent);
  }

  /** One event by its place in the order. */
  at(seq: number): StoredEvent | undefined {
    const row = this.db.prepare('SELECT * FROM events WHERE seq = ?').get(seq) as EventRow | undefined;
    return row === undefined ? undefined : toEvent(row);
  }

  /** The place of the newest event (0 with none): where a new reader that wants only what comes next starts. */
  lastSeq(): number {
    return (this.db.prepare('SELECT COALESCE(MAX(seq), 0) AS seq FROM events').get() as { seq: number }).seq;
  }
}
