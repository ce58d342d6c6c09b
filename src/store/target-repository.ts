import { z } from 'zod';
import { SandboxPlaneError } from '../domain/errors';
import type { OperationRecord } from '../domain/lifecycle-record';
import { TARGET_ENVIRONMENTS, type NewTargetInput, type TargetAuditEntry, type TargetRecord } from '../domain/targets';
import type { SqliteDatabase } from './database';
import { AuditChain, auditRowFields, type ChainRow } from './audit-chain';
import { AuditTap } from './audit-tap';
import { EventRepository } from './event-repository';

/** A target row as stored: validated on the way out too, so a hand-edited row fails loudly. */
const storedTargetSchema = z.object({
  name: z.string().min(1),
  environment: z.enum(TARGET_ENVIRONMENTS),
  region: z.string().min(1),
  endpoint: z.string().nullable(),
  profile: z.string().nullable(),
  added_at: z.string(),
});

function toTarget(raw: unknown): TargetRecord {
  const row = storedTargetSchema.parse(raw);
  return { name: row.name, environment: row.environment, region: row.region, endpoint: row.endpoint, profile: row.profile, addedAt: row.added_at };
}

type TargetOperationRow = Omit<ChainRow, 'subject'> & { readonly target: string };

function toOperation(row: TargetOperationRow): TargetAuditEntry {
  return { seq: row.seq, target: row.target, workflowId: row.workflow_id, runId: row.run_id === '' ? null : row.run_id, ...auditRowFields(row) };
}

/**
 * Operator-registered targets (DESIGN §14) and the append-only trail of IaC runs against
 * them. A target row holds the name of a profile on the worker that serves targets, never
 * a secret. Its trail is keyed by workflow id, run and step, as a sandbox's is, and
 * outlives the target.
 */
export class TargetRepository {
  constructor(
    private readonly db: SqliteDatabase,
    private readonly audits: AuditTap = new AuditTap(),
    private readonly chain: AuditChain = new AuditChain(db),
    private readonly events: EventRepository = new EventRepository(db),
  ) {}

  /** Registers a target; INVALID_STATE when one of that name is there already (nothing is overwritten). */
  add(target: NewTargetInput, now: Date = new Date()): TargetRecord {
    const inserted = this.db
      .prepare('INSERT OR IGNORE INTO targets (name, environment, region, endpoint, profile, added_at) VALUES (?, ?, ?, ?, ?, ?)')
      .run(target.name, target.environment, target.region, target.endpoint ?? null, target.profile ?? null, now.toISOString());
    if (inserted.changes === 0) {
      throw new SandboxPlaneError('INVALID_STATE', `target ${target.name} is registered already`, {
        hint: `Remove it first (\`sandboxctl targets remove ${target.name}\`) to register it again with other settings.`,
        details: { target: target.name },
      });
    }
    return this.get(target.name) as TargetRecord;
  }

  /** Every target, by name. */
  list(): TargetRecord[] {
    return this.db.prepare('SELECT * FROM targets ORDER BY name').all().map(toTarget);
  }

  get(name: string): TargetRecord | undefined {
    const raw = this.db.prepare('SELECT * FROM targets WHERE name = ?').get(name);
    return raw === undefined ? undefined : toTarget(raw);
  }

  /** Removes a target and returns it; its audit trail stays. NOT_FOUND when there is none by that name. */
  remove(name: string): TargetRecord {
    return this.db
      .transaction(() => {
        const target = this.get(name);
        if (target === undefined) {
          throw new SandboxPlaneError('NOT_FOUND', `no target ${name}`, { hint: '`sandboxctl targets list` shows the targets.', details: { target: name } });
        }
        this.db.prepare('DELETE FROM targets WHERE name = ?').run(name);
        return target;
      })
      .immediate();
  }

  /** One audit row of an IaC run against `target`, keyed by workflow id, run and step: `false` when that step is already there. */
  appendOperation(target: string, workflowId: string, operation: OperationRecord, now: Date = new Date()): boolean {
    const at = now.toISOString();
    return this.db.transaction(() => {
      if (!this.chain.insert('target_operations', target, workflowId, operation, at)) return false;
      this.events.fromTargetRow({ workflowId, operation, at });
      this.audits.written({ target, workflowId, operation });
      return true;
    })();
  }

  /** Whether the row of `workflowId`'s run at `step` is there. */
  hasOperation(workflowId: string, step: number, runId?: string): boolean {
    return this.db.prepare('SELECT 1 FROM target_operations WHERE workflow_id = ? AND run_id = ? AND step = ?').get(workflowId, runId ?? '', step) !== undefined;
  }

  /** The audit trail of one target, oldest first; a removed target's rows too. */
  audit(target: string): TargetAuditEntry[] {
    return (this.db.prepare('SELECT * FROM target_operations WHERE target = ? ORDER BY seq').all(target) as TargetOperationRow[]).map(toOperation);
  }
}
