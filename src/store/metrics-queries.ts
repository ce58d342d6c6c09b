import { LEAK_KINDS, type LeakKind } from '../domain/leaks';
import { LIVE_STATES, type SandboxState } from '../domain/sandbox-states';
import type { SqliteDatabase } from './database';

/** What the store role's metrics read at each scrape (DESIGN §17): small aggregate queries over indexed columns. */
export class MetricsQueries {
  constructor(private readonly db: SqliteDatabase) {}

  /** Live sandboxes by state and adapter (ended rows are history, not a gauge). */
  liveSandboxes(): { state: SandboxState; adapter: string; count: number }[] {
    return this.db
      .prepare(`SELECT state, adapter, count(*) AS count FROM sandboxes WHERE state IN (${LIVE_STATES.map(() => '?').join(', ')}) GROUP BY state, adapter`)
      .all(...LIVE_STATES) as { state: SandboxState; adapter: string; count: number }[];
  }

  /** Leaks the sweep has found and not yet seen resolved, by kind. */
  outstandingLeaks(): Record<LeakKind, number> {
    const counts = Object.fromEntries(LEAK_KINDS.map((kind) => [kind, 0])) as Record<LeakKind, number>;
    const rows = this.db.prepare('SELECT kind, count(*) AS count FROM leaks WHERE resolution IS NULL GROUP BY kind').all() as { kind: LeakKind; count: number }[];
    for (const row of rows) counts[row.kind] = row.count;
    return counts;
  }

  /** What a sandbox's metrics are labelled and timed by: its adapter, when it was asked for, and whether it waited for an approver. */
  sandboxFacts(sandboxId: string): { adapter: string; createdAt: string; approved: boolean } | undefined {
    const row = this.db
      .prepare(
        `SELECT adapter, created_at AS createdAt,
                EXISTS (SELECT 1 FROM operations o WHERE o.sandbox_id = s.id AND o.action = 'approved') AS approved
           FROM sandboxes s WHERE id = ?`,
      )
      .get(sandboxId) as { adapter: string; createdAt: string; approved: number } | undefined;
    return row === undefined ? undefined : { adapter: row.adapter, createdAt: row.createdAt, approved: row.approved === 1 };
  }
}
