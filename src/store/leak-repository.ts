import type { LeakFinding } from '../domain/leaks';
import type { LeakRecord } from '../domain/store-commands';
import type { SqliteDatabase } from './database';

const SELECT = `SELECT id, kind, subject, sandbox_id AS sandboxId, detail, first_seen AS firstSeen, last_seen AS lastSeen,
                       resolution, resolved_at AS resolvedAt FROM leaks`;

/** The sweep's findings over time: one row per kind and subject, first and last seen. */
export class LeakRepository {
  constructor(private readonly db: SqliteDatabase) {}

  /**
   * Records one sweep's outcome: what it removed, what is still outstanding, and — for
   * every outstanding leak it no longer sees — that it is gone. A leak seen again
   * after it was resolved is outstanding again. Returns what this sweep adds: the leaks
   * not outstanding before it, and those it is the first to record removed.
   */
  recordSweep(
    input: { outstanding: readonly LeakFinding[]; removed: readonly LeakFinding[] },
    now: Date = new Date(),
  ): { readonly found: readonly LeakFinding[]; readonly removed: readonly LeakFinding[] } {
    const at = now.toISOString();
    const upsert = this.db.prepare(
      `INSERT INTO leaks (kind, subject, sandbox_id, detail, first_seen, last_seen, resolution, resolved_at)
       VALUES (@kind, @subject, @sandboxId, @detail, @at, @at, @resolution, @resolvedAt)
       ON CONFLICT (kind, subject) DO UPDATE SET detail = excluded.detail, last_seen = excluded.last_seen,
         resolution = excluded.resolution, resolved_at = excluded.resolved_at`,
    );
    return this.db
      .transaction(() => {
        const known = new Set(this.outstanding().map((leak) => `${leak.kind}\u0000${leak.subject}`));
        // Found by this sweep: what was not outstanding before it (one removed at once counts too).
        const found = [...input.removed, ...input.outstanding].filter((finding) => !known.has(`${finding.kind}\u0000${finding.subject}`));
        // Removed by this sweep: not already recorded as removed (a retried write records nothing new).
        const resolution = this.db.prepare('SELECT resolution FROM leaks WHERE kind = ? AND subject = ?');
        const removed = input.removed.filter((finding) => (resolution.get(finding.kind, finding.subject) as { resolution: string | null } | undefined)?.resolution !== 'removed');
        for (const finding of input.removed) upsert.run({ ...finding, at, resolution: 'removed', resolvedAt: at });
        for (const finding of input.outstanding) upsert.run({ ...finding, at, resolution: null, resolvedAt: null });
        const seen = new Set([...input.removed, ...input.outstanding].map((finding) => `${finding.kind}\u0000${finding.subject}`));
        const gone = this.db.prepare("UPDATE leaks SET resolution = 'gone', resolved_at = ? WHERE id = ?");
        for (const leak of this.outstanding()) {
          if (!seen.has(`${leak.kind}\u0000${leak.subject}`)) gone.run(at, leak.id);
        }
        return { found, removed };
      })
      .immediate();
  }

  outstanding(): LeakRecord[] {
    return this.db.prepare(`${SELECT} WHERE resolution IS NULL ORDER BY first_seen, id`).all() as LeakRecord[];
  }

  /** The most recent leaks, resolved or not, newest first. */
  recent(limit = 100): LeakRecord[] {
    return this.db.prepare(`${SELECT} ORDER BY last_seen DESC, id DESC LIMIT ?`).all(limit) as LeakRecord[];
  }
}
