import { z } from 'zod';
import { CAPABILITIES } from '../domain/capabilities';
import { SandboxPlaneError } from '../domain/errors';
import { POLICY_EFFECTS } from '../domain/policy';
import type { ApproverRecord, NewPolicyInput, PolicyRecord } from '../domain/store-commands';
import type { SqliteDatabase } from './database';

/** A policy row as stored: validated on the way out too, so a hand-edited row fails loudly. */
const storedPolicySchema = z.object({
  id: z.number().int(),
  principal_pattern: z.string().min(1),
  capability: z.enum(CAPABILITIES),
  effect: z.enum(POLICY_EFFECTS),
  max_ttl_seconds: z.number().int().positive().nullable(),
  allowed_services: z
    .string()
    .nullable()
    .transform((text) => (text === null ? null : z.array(z.string()).parse(JSON.parse(text)))),
  max_concurrent: z.number().int().nonnegative().nullable(),
  max_sandbox_hours_per_day: z.number().positive().nullable(),
  created_at: z.string(),
});

function toPolicy(raw: unknown): PolicyRecord {
  const row = storedPolicySchema.parse(raw);
  return {
    id: row.id,
    principalPattern: row.principal_pattern,
    capability: row.capability,
    effect: row.effect,
    maxTtlSeconds: row.max_ttl_seconds,
    services: row.allowed_services,
    maxConcurrent: row.max_concurrent,
    maxSandboxHoursPerDay: row.max_sandbox_hours_per_day,
    createdAt: row.created_at,
  };
}

export class PolicyRepository {
  constructor(private readonly db: SqliteDatabase) {}

  add(policy: NewPolicyInput, now: Date = new Date()): PolicyRecord {
    const result = this.db
      .prepare(
        `INSERT INTO policies (principal_pattern, capability, effect, max_ttl_seconds, allowed_services, max_concurrent, max_sandbox_hours_per_day, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        policy.principalPattern,
        policy.capability,
        policy.effect,
        policy.maxTtlSeconds ?? null,
        policy.services ? JSON.stringify([...policy.services].sort()) : null,
        policy.maxConcurrent ?? null,
        policy.maxSandboxHoursPerDay ?? null,
        now.toISOString(),
      );
    return this.get(Number(result.lastInsertRowid));
  }

  get(id: number): PolicyRecord {
    const raw = this.db.prepare('SELECT * FROM policies WHERE id = ?').get(id);
    if (raw === undefined) throw new SandboxPlaneError('NOT_FOUND', `no policy row ${id}`, { hint: '`sandboxctl policy list` shows the rows.' });
    return toPolicy(raw);
  }

  list(): PolicyRecord[] {
    return this.db.prepare('SELECT * FROM policies ORDER BY id').all().map(toPolicy);
  }

  remove(id: number): PolicyRecord {
    const policy = this.get(id);
    this.db.prepare('DELETE FROM policies WHERE id = ?').run(id);
    return policy;
  }
}

/** A name's run of wrong approval codes (DESIGN §18): counted for any name, so a lock-out tells nothing of who is listed. */
export interface ApprovalFailures {
  /** Wrong codes since the last right one or the last lock-out. */
  readonly failures: number;
  /** Lock-outs since the last right code: each doubles the next. */
  readonly lockouts: number;
  /** ISO time the current lock-out ends; null when none. */
  readonly lockedUntil: string | null;
  /** The approval check that counted the last wrong code: a retry of it is not counted again. */
  readonly lastUse: string | null;
}

/** A name with no wrong codes counted. */
export const NO_FAILURES: ApprovalFailures = Object.freeze({ failures: 0, lockouts: 0, lockedUntil: null, lastUse: null });

export class ApproverRepository {
  constructor(private readonly db: SqliteDatabase) {}

  /** Adds an approver; adding one twice keeps the first record. */
  add(name: string, now: Date = new Date()): ApproverRecord {
    this.db.prepare('INSERT OR IGNORE INTO approvers (name, added_at) VALUES (?, ?)').run(name, now.toISOString());
    return this.db.prepare('SELECT name, added_at AS addedAt FROM approvers WHERE name = ?').get(name) as ApproverRecord;
  }

  list(): ApproverRecord[] {
    return this.db.prepare('SELECT name, added_at AS addedAt FROM approvers ORDER BY name').all() as ApproverRecord[];
  }

  /** Removes an approver; `undefined` when there was none by that name. */
  remove(name: string): ApproverRecord | undefined {
    const approver = this.db.prepare('SELECT name, added_at AS addedAt FROM approvers WHERE name = ?').get(name) as ApproverRecord | undefined;
    if (approver !== undefined) this.db.prepare('DELETE FROM approvers WHERE name = ?').run(name);
    return approver;
  }

  has(name: string): boolean {
    return this.db.prepare('SELECT 1 FROM approvers WHERE name = ?').get(name) !== undefined;
  }

  /**
   * Lists an approver with their sealed TOTP secret, enrolled for the CLI holding
   * `recipient` (its public key). An approver listed before approvals needed proof gets
   * one. `already_enrolled` when they have one for another enrolment: a new secret only
   * after `approvers remove`, so nobody re-enrols someone in passing. The same enrolment
   * asked again (a retry) gets the secret it was given.
   */
  enrol(name: string, recipient: string, newSealedSecret: () => string, now: Date = new Date()): (ApproverRecord & { sealedSecret: string }) | 'already_enrolled' {
    const existing = this.db.prepare('SELECT totp_secret AS secret, enrolled_for AS recipient FROM approvers WHERE name = ?').get(name) as
      { secret: string | null; recipient: string | null } | undefined;
    if (existing?.secret != null && existing.recipient !== recipient) return 'already_enrolled';
    if (existing === undefined) {
      this.db.prepare('INSERT INTO approvers (name, added_at, totp_secret, enrolled_for) VALUES (?, ?, ?, ?)').run(name, now.toISOString(), newSealedSecret(), recipient);
    } else if (existing.secret == null) {
      this.db.prepare('UPDATE approvers SET totp_secret = ?, enrolled_for = ?, last_code_step = NULL, last_code_use = NULL WHERE name = ?').run(newSealedSecret(), recipient, name);
    }
    return this.db.prepare('SELECT name, added_at AS addedAt, totp_secret AS sealedSecret FROM approvers WHERE name = ?').get(name) as ApproverRecord & { sealedSecret: string };
  }

  /** What verifying `name`'s code needs; `undefined` when not listed. */
  proofOf(name: string): { sealedSecret: string | null; lastCodeStep: number | null; lastCodeUse: string | null } | undefined {
    return this.db.prepare('SELECT totp_secret AS sealedSecret, last_code_step AS lastCodeStep, last_code_use AS lastCodeUse FROM approvers WHERE name = ?').get(name) as
      { sealedSecret: string | null; lastCodeStep: number | null; lastCodeUse: string | null } | undefined;
  }

  /** `name`'s run of wrong codes and lock-out, listed or not; zeros when none. */
  failuresOf(name: string): ApprovalFailures {
    const row = this.db.prepare('SELECT failures, lockouts, locked_until AS lockedUntil, last_use AS lastUse FROM approval_failures WHERE name = ?').get(name) as
      ApprovalFailures | undefined;
    return row ?? NO_FAILURES;
  }

  /** Replaces `name`'s run of wrong codes; all zeros forgets the name. */
  recordFailures(name: string, failures: ApprovalFailures): void {
    if (failures.failures === 0 && failures.lockouts === 0 && failures.lockedUntil === null && failures.lastUse === null) {
      this.db.prepare('DELETE FROM approval_failures WHERE name = ?').run(name);
      return;
    }
    this.db
      .prepare(
        'INSERT INTO approval_failures (name, failures, lockouts, locked_until, last_use) VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET failures = excluded.failures, lockouts = excluded.lockouts, locked_until = excluded.locked_until, last_use = excluded.last_use',
      )
      .run(name, failures.failures, failures.lockouts, failures.lockedUntil, failures.lastUse);
  }

  /** Marks `step`'s code (and every earlier one) used, by the approval `use`. */
  recordCodeUse(name: string, step: number, use: string): void {
    this.db.prepare('UPDATE approvers SET last_code_step = ?, last_code_use = ? WHERE name = ?').run(step, use, name);
  }
}
