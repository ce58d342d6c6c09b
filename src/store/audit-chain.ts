import { createHmac } from 'node:crypto';
import {
  AUDIT_STREAMS,
  type AuditBadRow,
  type AuditCursor,
  type AuditExportPage,
  type AuditRecord,
  type AuditStream,
  type AuditStreamHead,
  type AuditVerification,
} from '../domain/audit-evidence';
import { SandboxPlaneError } from '../domain/errors';
import type { OperationRecord } from '../domain/lifecycle-record';
import type { SqliteDatabase } from './database';

/**
 * The `prev_hash` of a stream's first row: keyed like every hash, so the first row too
 * cannot be made without the key (and no run of zeros lands in the file).
 */
export function genesisHash(key: Buffer, stream: AuditStream): string {
  return createHmac('sha256', key).update(`genesis\n${stream}`).digest('hex');
}

/** The column that names each stream's subject. */
const SUBJECT: Readonly<Record<AuditStream, string>> = { operations: 'sandbox_id', target_operations: 'target' };

/** Rows read at a time while chaining or verifying: memory stays flat however long the trail. */
const BATCH = 1000;

/** Summary text one export page carries at most (Temporal payloads stop near 2 MB). */
const EXPORT_PAGE_SUMMARY_BYTES = 1_000_000;

/** An audit row as stored, with its chain columns. */
export interface ChainRow {
  readonly seq: number;
  readonly subject: string;
  readonly workflow_id: string;
  readonly run_id: string;
  readonly step: number;
  readonly action: string;
  readonly actor: string;
  readonly effect: string;
  readonly reason: string | null;
  readonly summary: string;
  readonly at: string;
  readonly prev_hash: string | null;
  readonly row_hash: string | null;
}

/**
 * The one hashing rule of the audit trail (DESIGN §19): HMAC-SHA256 under the plane's chain
 * key of the previous row's hash, a newline, and the row's fields as a JSON array in a fixed
 * order (the stream, seq, subject, workflow, run, step, action, actor, effect, reason, the
 * summary as stored, at). JSON keeps each field's bounds, so no two rows encode alike.
 */
export function auditRowHash(key: Buffer, stream: AuditStream, prevHash: string, row: Omit<ChainRow, 'prev_hash' | 'row_hash'>): string {
  const fields = [stream, row.seq, row.subject, row.workflow_id, row.run_id, row.step, row.action, row.actor, row.effect, row.reason, row.summary, row.at];
  return createHmac('sha256', key).update(prevHash).update('\n').update(JSON.stringify(fields)).digest('hex');
}

/** What every audit row holds besides its subject, workflow and run, as read back: the summary parsed. */
export function auditRowFields(row: Pick<ChainRow, 'step' | 'action' | 'actor' | 'effect' | 'reason' | 'summary' | 'at'>) {
  return { step: row.step, action: row.action, actor: row.actor, effect: row.effect, reason: row.reason, summary: JSON.parse(row.summary) as Record<string, unknown>, at: row.at };
}

const selectRows = (stream: AuditStream) =>
  `SELECT seq, ${SUBJECT[stream]} AS subject, workflow_id, run_id, step, action, actor, effect, reason, summary, at, prev_hash, row_hash FROM ${stream}`;

/**
 * The hash chains over the audit tables, one stream per table: every row carries the hash
 * of the row before it in its table, so a row edited, removed or moved anywhere in the
 * table breaks the chain at that point. The key is not in the SQLite file: the store role
 * derives it from its key file ({@link useKey}), so a chain rewritten from the file alone
 * does not verify. The store stays the single writer: rows are chained as they are
 * inserted, in the insert's transaction.
 */
export class AuditChain {
  private key: Buffer | undefined;

  constructor(private readonly db: SqliteDatabase) {}

  /**
   * Takes the chain key (the store role does at start) and chains, once, the rows of a
   * stream that has never been chained: the trail an earlier build wrote (migration 16 gave
   * the tables their hash columns; SQL cannot compute an HMAC). A stream with any chained
   * row is left as it is: a row written past the store later stays unchained, and
   * `verify` names it. Returns how many rows it chained.
   */
  useKey(key: Buffer): number {
    if (key.length < 32) throw new SandboxPlaneError('CONFIG_INVALID', 'the audit chain key must be at least 32 bytes');
    this.key = key;
    return this.db.transaction(() => AUDIT_STREAMS.reduce((chained, stream) => chained + this.chainNeverChained(stream, key), 0)).immediate();
  }

  /** Whether the chain has its key (the store role's store does; a store opened elsewhere does not). */
  get keyed(): boolean {
    return this.key !== undefined;
  }

  /**
   * Inserts one audit row of `subject` (a sandbox id or a target name) into `stream`, keyed by
   * workflow id, run and step, and chains it, in one transaction (a savepoint inside the
   * caller's): `false` when that step's row is there already, and then nothing is chained.
   * Without the key (a store not opened by the store role) the row is written unchained.
   */
  insert(stream: AuditStream, subject: string, workflowId: string, operation: OperationRecord, at: string): boolean {
    return this.db
      .transaction(() => {
        const result = this.db
          .prepare(`INSERT OR IGNORE INTO ${stream} (${SUBJECT[stream]}, workflow_id, run_id, step, action, actor, effect, reason, summary, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
          .run(subject, workflowId, operation.runId ?? '', operation.step, operation.action, operation.actor, operation.effect, operation.reason, JSON.stringify(operation.summary), at);
        if (result.changes === 1 && this.key !== undefined) this.seal(stream, Number(result.lastInsertRowid), this.key);
        return result.changes === 1;
      })
      .immediate();
  }

  /** Checks every row of every stream under the key; `firstBad` is the first row found wrong, streams in {@link AUDIT_STREAMS} order. */
  verify(): AuditVerification {
    const key = this.requireKey();
    return this.db
      .transaction(() => {
        const streams = AUDIT_STREAMS.map((stream) => this.verifyStream(stream, key));
        const firstBad = streams.find((head) => head.firstBad !== null)?.firstBad ?? null;
        return { ok: firstBad === null, rows: streams.reduce((sum, head) => sum + head.rows, 0), firstBad, streams };
      })
      .deferred();
  }

  /** Up to `limit` rows after `after` (streams in order, then by seq), at or after `since` when given. */
  exportPage(input: { after: AuditCursor | null; since?: string | undefined; limit: number }): AuditExportPage {
    const records: AuditRecord[] = [];
    let bytes = 0;
    let full = false;
    const start = input.after === null ? 0 : AUDIT_STREAMS.indexOf(input.after.stream);
    for (const stream of AUDIT_STREAMS.slice(start)) {
      const afterSeq = input.after !== null && stream === input.after.stream ? input.after.seq : 0;
      const rows = this.db
        .prepare(`${selectRows(stream)} WHERE seq > ? AND (? IS NULL OR at >= ?) ORDER BY seq LIMIT ?`)
        .all(afterSeq, input.since ?? null, input.since ?? null, input.limit - records.length) as ChainRow[];
      for (const row of rows) {
        records.push(toRecord(stream, row));
        bytes += row.summary.length;
        if (records.length >= input.limit || bytes >= EXPORT_PAGE_SUMMARY_BYTES) {
          full = true;
          break;
        }
      }
      if (full) break;
    }
    const last = records[records.length - 1];
    return { records, next: full && last !== undefined ? { stream: last.stream, seq: last.seq } : null };
  }

  private requireKey(): Buffer {
    if (this.key !== undefined) return this.key;
    throw new SandboxPlaneError('INVALID_STATE', "the audit chain's key is not loaded: only the store role (with SANDBOXPLANE_STORE_KEY_FILE) checks or writes the chain", {
      hint: 'Run `sandboxctl audit verify` against a plane whose store worker runs (`sandboxctl worker --role store`).',
    });
  }

  private seal(stream: AuditStream, seq: number, key: Buffer): void {
    const row = this.db.prepare(`${selectRows(stream)} WHERE seq = ?`).get(seq) as ChainRow | undefined;
    if (row === undefined || row.row_hash !== null) return;
    const before = this.db.prepare(`SELECT row_hash FROM ${stream} WHERE seq < ? ORDER BY seq DESC LIMIT 1`).get(seq) as { row_hash: string | null } | undefined;
    // A row before it without a hash was written past the store: verify names that row, and this one still links on.
    const prevHash = before?.row_hash ?? genesisHash(key, stream);
    this.db.prepare(`UPDATE ${stream} SET prev_hash = ?, row_hash = ? WHERE seq = ? AND row_hash IS NULL`).run(prevHash, auditRowHash(key, stream, prevHash, row), seq);
  }

  private chainNeverChained(stream: AuditStream, key: Buffer): number {
    if (this.db.prepare(`SELECT 1 FROM ${stream} WHERE row_hash IS NOT NULL LIMIT 1`).get() !== undefined) return 0;
    const update = this.db.prepare(`UPDATE ${stream} SET prev_hash = ?, row_hash = ? WHERE seq = ? AND row_hash IS NULL`);
    let prevHash = genesisHash(key, stream);
    let chained = 0;
    for (let after = 0; ;) {
      const rows = this.db.prepare(`${selectRows(stream)} WHERE seq > ? ORDER BY seq LIMIT ?`).all(after, BATCH) as ChainRow[];
      if (rows.length === 0) return chained;
      for (const row of rows) {
        const hash = auditRowHash(key, stream, prevHash, row);
        update.run(prevHash, hash, row.seq);
        prevHash = hash;
        chained += 1;
        after = row.seq;
      }
    }
  }

  private verifyStream(stream: AuditStream, key: Buffer): AuditStreamHead {
    let expectedPrev = genesisHash(key, stream);
    let rows = 0;
    let last: ChainRow | undefined;
    let firstBad: AuditBadRow | null = null;
    for (let after = Number.MIN_SAFE_INTEGER; ;) {
      const batch = this.db.prepare(`${selectRows(stream)} WHERE seq > ? ORDER BY seq LIMIT ?`).all(after, BATCH) as ChainRow[];
      if (batch.length === 0) break;
      for (const row of batch) {
        rows += 1;
        last = row;
        after = row.seq;
        firstBad ??= checkRow(stream, row, expectedPrev, key);
        // Go on from the row as it stands: one bad row is reported once, not every row after it.
        expectedPrev = row.row_hash ?? expectedPrev;
      }
    }
    return { stream, rows, lastSeq: last?.seq ?? null, head: last?.row_hash ?? null, firstBad };
  }
}

function checkRow(stream: AuditStream, row: ChainRow, expectedPrev: string, key: Buffer): AuditBadRow | null {
  const bad = (problem: AuditBadRow['problem'], message: string): AuditBadRow => ({ stream, seq: row.seq, problem, message });
  if (row.row_hash === null || row.prev_hash === null) return bad('unchained', 'it carries no hash: it was written past the store (the store chains every row it writes)');
  if (row.prev_hash !== expectedPrev) {
    return bad('removed_or_reordered', 'it is not chained to the row before it: a row before it was removed, or rows were moved');
  }
  if (auditRowHash(key, stream, row.prev_hash, row) !== row.row_hash) {
    return bad('edited', "its fields do not match its hash under the plane's key: it was edited (or the chain was rewritten without the key)");
  }
  return null;
}

function toRecord(stream: AuditStream, row: ChainRow): AuditRecord {
  return {
    stream,
    seq: row.seq,
    sandboxId: stream === 'operations' ? row.subject : null,
    target: stream === 'target_operations' ? row.subject : null,
    workflowId: row.workflow_id,
    runId: row.run_id === '' ? null : row.run_id,
    ...auditRowFields(row),
    prevHash: row.prev_hash,
    hash: row.row_hash,
  };
}
