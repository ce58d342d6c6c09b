import { SandboxPlaneError } from '../domain/errors';
import { LIVE_STATES, TERMINAL_STATES, type SandboxState } from '../domain/sandbox-states';
import type { InventoryRow } from '../domain/leaks';
import type { Lineage, OperationRecord, SandboxSnapshot } from '../domain/lifecycle-record';
import type { AuditEntry } from '../domain/store-commands';
import type { SqliteDatabase } from './database';

import { AuditChain, auditRowFields, type ChainRow } from './audit-chain';
import { AuditTap } from './audit-tap';
import { EventRepository } from './event-repository';

export type { OperationRecord, SandboxSnapshot } from '../domain/lifecycle-record';

type OperationRow = Omit<ChainRow, 'subject'> & { readonly sandbox_id: string };

function toOperation(row: OperationRow): AuditEntry {
  return { seq: row.seq, sandboxId: row.sandbox_id, workflowId: row.workflow_id, ...auditRowFields(row) };
}

const COUNTED_STATES = LIVE_STATES.filter((state) => state !== 'REQUESTED');
const TERMINAL = [...TERMINAL_STATES];
/** `state NOT IN (?, …)`, to be bound with {@link TERMINAL}: the rows of sandboxes that have not ended. */
const NOT_TERMINAL = `state NOT IN (${TERMINAL.map(() => '?').join(', ')})`;
/** Rows the sweep still has work for: not ended, or ended with a teardown that failed (its leftovers are retried). */
const SWEEPABLE = `(${NOT_TERMINAL} OR state = 'DESTROY_FAILED')`;

/** What provisioning recorded of a sandbox's runtime, as its audit trail holds it. */
export interface RecordedRuntimeIds {
  readonly runtimeIds: readonly string[];
  readonly engineId?: string;
}

/**
 * The sandboxes table and its append-only audit trail. Writes are keyed by workflow
 * id, run and step: an activity that retries writes nothing twice, and an older step
 * of the same run never overwrites a newer snapshot.
 */
export class SandboxRepository {
  constructor(
    private readonly db: SqliteDatabase,
    private readonly audits: AuditTap = new AuditTap(),
    private readonly chain: AuditChain = new AuditChain(db),
    private readonly events: EventRepository = new EventRepository(db),
  ) {}

  /** Writes the snapshot and its audit row in one transaction; `false` when the step was already recorded. */
  record(snapshot: SandboxSnapshot, operation: OperationRecord, now: Date = new Date()): boolean {
    return this.db
      .transaction(() => {
        const at = now.toISOString();
        const owner = this.db.prepare('SELECT run_id AS runId FROM sandboxes WHERE id = ?').get(snapshot.id) as { runId: string | null } | undefined;
        if (owner?.runId != null && owner.runId !== snapshot.runId) {
          throw new SandboxPlaneError('IDEMPOTENCY_CONFLICT', `sandbox id ${snapshot.id} already belongs to an earlier sandbox (run ${owner.runId}) whose workflow history is gone`, {
            details: { sandboxId: snapshot.id },
          });
        }
        this.db
          .prepare(
            `INSERT INTO sandboxes (id, workflow_id, run_id, principal, capability, adapter, services, state, purpose, labels,
                                    request_digest, endpoint, expires_at, last_step, last_run_id, created_at, updated_at)
             VALUES (@id, @workflowId, @runId, @principal, @capability, @adapter, @services, @state, @purpose, @labels,
                     @requestDigest, @endpoint, @expiresAt, @step, @writerRunId, @createdAt, @at)
             ON CONFLICT (id) DO UPDATE SET state = excluded.state, endpoint = excluded.endpoint,
               expires_at = excluded.expires_at, last_step = excluded.last_step, last_run_id = excluded.last_run_id,
               updated_at = excluded.updated_at, run_id = COALESCE(sandboxes.run_id, excluded.run_id),
               -- A PAUSED sandbox runs on no host: its place is free, and a resume is placed anew.
               host = CASE WHEN excluded.state = 'PAUSED' THEN NULL ELSE sandboxes.host END
             -- A newer step of the same run, or any step of another run: the run that took
             -- over (a reset numbers its steps again from the reset point).
             WHERE excluded.last_step > sandboxes.last_step OR excluded.last_run_id IS NOT sandboxes.last_run_id`,
          )
          .run({
            ...snapshot,
            services: JSON.stringify(snapshot.services),
            labels: JSON.stringify(snapshot.labels),
            step: operation.step,
            writerRunId: operation.runId ?? null,
            at,
          });
        return this.appendOperation(snapshot.id, snapshot.workflowId, operation, at);
      })
      .immediate();
  }

  /** The row a run wrote at `step` (`runId` absent: the sweep's). */
  operation(workflowId: string, step: number, runId?: string): AuditEntry | undefined {
    const row = this.db.prepare('SELECT * FROM operations WHERE workflow_id = ? AND run_id = ? AND step = ?').get(workflowId, runId ?? '', step) as OperationRow | undefined;
    return row === undefined ? undefined : toOperation(row);
  }

  /** The audit trail of one sandbox, oldest first. */
  audit(sandboxId: string): AuditEntry[] {
    return (this.db.prepare('SELECT * FROM operations WHERE sandbox_id = ? ORDER BY seq').all(sandboxId) as OperationRow[]).map(toOperation);
  }

  /** The principal that asked for `sandboxId`; `undefined` when the store has never seen it. */
  principalOf(sandboxId: string): string | undefined {
    return (this.db.prepare('SELECT principal FROM sandboxes WHERE id = ?').get(sandboxId) as { principal: string } | undefined)?.principal;
  }

  exists(sandboxId: string): boolean {
    return this.db.prepare('SELECT 1 FROM sandboxes WHERE id = ?').get(sandboxId) !== undefined;
  }

  state(sandboxId: string): SandboxState | undefined {
    const row = this.db.prepare('SELECT state FROM sandboxes WHERE id = ?').get(sandboxId) as { state: SandboxState } | undefined;
    return row?.state;
  }

  /**
   * Records `id` as a fork of `parent` (once: a retried screening finds it there) and
   * returns its family: the parent's root (or the parent itself), and that root's expiry
   * while it has not ended (the fork's TTL is clamped to it).
   */
  recordLineage(id: string, parent: string): Lineage {
    const root = this.lineageOf(parent)?.root ?? parent;
    this.db.prepare('UPDATE sandboxes SET parent = ?, root = ? WHERE id = ? AND parent IS NULL').run(parent, root, id);
    return { parent, root, rootExpiresAt: this.liveExpiry(root) };
  }

  /** The fork's parent and root as recorded; `undefined` for a sandbox that is no fork (or unknown). */
  lineageOf(id: string): { parent: string; root: string } | undefined {
    const row = this.db.prepare('SELECT parent, root FROM sandboxes WHERE id = ? AND root IS NOT NULL').get(id) as { parent: string; root: string } | undefined;
    return row;
  }

  /** `id`'s expiry while it has not ended; `null` once it has (or it has none yet). */
  liveExpiry(id: string): string | null {
    const row = this.db.prepare(`SELECT expires_at FROM sandboxes WHERE id = ? AND ${NOT_TERMINAL}`).get(id, ...TERMINAL) as { expires_at: string | null } | undefined;
    return row?.expires_at ?? null;
  }

  /**
   * The sandboxes of `root`'s tree, the root first, then its forks oldest first, ended
   * ones too: `principal`'s only (all, for an operator's `undefined`). Empty when the
   * root is not the principal's, as for one that never was.
   */
  tree(root: string, principal: string | undefined): string[] {
    const rows = this.db
      .prepare(
        `SELECT id FROM sandboxes WHERE (id = @root OR root = @root) AND (@principal IS NULL OR principal = @principal)
         ORDER BY id = @root DESC, created_at, id`,
      )
      .all({ root, principal: principal ?? null }) as { id: string }[];
    return rows[0]?.id === root ? rows.map((row) => row.id) : [];
  }

  /** Screened sandboxes of `principal` that hold or may hold a runtime, `excludingId` aside. */
  countLive(principal: string, excludingId: string): number {
    const placeholders = COUNTED_STATES.map(() => '?').join(', ');
    const row = this.db.prepare(`SELECT count(*) AS n FROM sandboxes WHERE principal = ? AND id != ? AND state IN (${placeholders})`).get(principal, excludingId, ...COUNTED_STATES) as {
      n: number;
    };
    return row.n;
  }

  /**
   * State and adapter of the sandboxes the sweep has work for (not ended, or
   * DESTROY_FAILED), plus those of `alsoIds` that exist.
   */
  inventoryRows(alsoIds: readonly string[]): Record<string, InventoryRow> {
    const rows: Record<string, InventoryRow> = {};
    const open = this.db.prepare(`SELECT id, state, adapter, host FROM sandboxes WHERE ${SWEEPABLE}`).all(...TERMINAL) as (InventoryRow & { id: string })[];
    for (const { id, state, adapter, host } of open) rows[id] = { state, adapter, host };
    const one = this.db.prepare('SELECT state, adapter, host FROM sandboxes WHERE id = ?');
    for (const id of alsoIds) {
      const row = one.get(id) as InventoryRow | undefined;
      if (row !== undefined) rows[id] = { state: row.state, adapter: row.adapter, host: row.host };
    }
    return rows;
  }

  /** The runtime ids (and engine) of the newest audit row that records them; `undefined` if none does. */
  recordedRuntime(sandboxId: string): RecordedRuntimeIds | undefined {
    const row = this.db.prepare(`SELECT summary FROM operations WHERE sandbox_id = ? AND json_type(summary, '$.runtimeIds') = 'array' ORDER BY seq DESC LIMIT 1`).get(sandboxId) as
      { summary: string } | undefined;
    if (row === undefined) return undefined;
    const summary = JSON.parse(row.summary) as { runtimeIds: unknown[]; engineId?: unknown };
    const runtimeIds = summary.runtimeIds.filter((id): id is string => typeof id === 'string');
    return typeof summary.engineId === 'string' ? { runtimeIds, engineId: summary.engineId } : { runtimeIds };
  }

  /**
   * The promotion gate's proof (DESIGN §14): the newest `iac_applied` row, at or after
   * `sinceIso`, of a run by `principal` that applied `templateDigest` into a sandbox with
   * every supported resource verified (`allVerified` exactly JSON true); `undefined` if none.
   */
  findIacProof(input: { principal: string; templateDigest: string; sinceIso: string }): { sandboxId: string; workflowId: string; iacRunId: string; at: string } | undefined {
    return this.db
      .prepare(
        `SELECT sandbox_id AS sandboxId, workflow_id AS workflowId, json_extract(summary, '$.iacRunId') AS iacRunId, at FROM operations
         WHERE action = 'iac_applied' AND at >= ?
           AND json_extract(summary, '$.principal') = ? AND json_extract(summary, '$.templateDigest') = ?
           AND json_type(summary, '$.allVerified') = 'true' AND json_type(summary, '$.iacRunId') = 'text'
         ORDER BY at DESC, seq DESC LIMIT 1`,
      )
      .get(input.sinceIso, input.principal, input.templateDigest) as { sandboxId: string; workflowId: string; iacRunId: string; at: string } | undefined;
  }

  /**
   * Closes a row whose workflow has ended without closing it (terminated, history lost),
   * or moves a DESTROY_FAILED row on once its leftovers are gone: the sweep's
   * `reconciled` audit row says why. Any other terminal row, or one already in `state`,
   * is left as it is; `false` then.
   */
  reconcile(sandboxId: string, state: SandboxState, workflowId: string, operation: OperationRecord, now: Date = new Date()): boolean {
    return this.db
      .transaction(() => {
        const at = now.toISOString();
        const changed = this.db.prepare(`UPDATE sandboxes SET state = ?, updated_at = ? WHERE id = ? AND state != ? AND ${SWEEPABLE}`).run(state, at, sandboxId, state, ...TERMINAL).changes;
        if (changed === 0) return false;
        this.appendOperation(sandboxId, workflowId, operation, at);
        return true;
      })
      .immediate();
  }

  /** An audit row from outside the sandbox's own workflow (the sweep); ignored if already written. */
  appendAudit(sandboxId: string, workflowId: string, operation: OperationRecord, now: Date = new Date()): boolean {
    return this.exists(sandboxId) && this.appendOperation(sandboxId, workflowId, operation, now.toISOString());
  }

  /** One audit row, keyed by workflow id, run and step, with its event: `false` when that step is already there. */
  private appendOperation(sandboxId: string, workflowId: string, operation: OperationRecord, at: string): boolean {
    return this.db.transaction(() => {
      if (!this.chain.insert('operations', sandboxId, workflowId, operation, at)) return false;
      this.events.fromSandboxRow(sandboxId, { workflowId, operation, at });
      this.audits.written({ sandboxId, workflowId, operation });
      return true;
    })();
  }

  /** Runs `work` in one write transaction, so a read-decide-write sequence is atomic. */
  atomically<T>(work: () => T): T {
    return this.db.transaction(work).immediate();
  }
}
