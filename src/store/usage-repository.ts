import type { SandboxState } from '../domain/sandbox-states';
import { accrue, nextUtcMidnight, rollUp, utcDay, type DailyUsage, type SandboxUsage, type UsageQuery, type UsageReport, type UsageRow } from '../domain/usage';
import type { SqliteDatabase } from './database';

interface UsageDbRow {
  sandbox_id: string;
  principal: string;
  day: string;
  live_ms: number;
  live_since_ms: number | null;
  cpu_ns: number;
  peak_memory_bytes: number;
  requests: number | null;
  /** The sandbox's state and last change in the inventory, which bound a stretch whose stop never arrived. */
  state: SandboxState | null;
  updated_at: string | null;
}

/** States in which a sandbox's container may still run: its open stretch counts up to now. */
const RUNNING_STATES: ReadonlySet<SandboxState> = new Set<SandboxState>(['READY', 'DESTROYING']);

const SELECT_USAGE = `SELECT u.sandbox_id, u.principal, u.day, u.live_ms, u.live_since_ms, u.cpu_ns, u.peak_memory_bytes, u.requests, s.state, s.updated_at
  FROM sandbox_usage u LEFT JOIN sandboxes s ON s.id = u.sandbox_id`;

/**
 * Usage per sandbox (DESIGN §19), written only by the store role from what lifecycles
 * report. Live time runs from each `live` report to the next `stopped` one; CPU and
 * requests are cumulative per container, so each read adds only what grew since the last
 * read of that container (accrue): a retried report, or a teardown's read after a
 * slow-timer read, counts nothing twice.
 */
export class UsageRepository {
  constructor(private readonly db: SqliteDatabase) {}

  /** Applies one report in one transaction. A report for a sandbox that never became live (no `live` first) is ignored. */
  record(report: UsageReport, now: Date = new Date()): void {
    this.db
      .transaction(() => {
        const at = now.toISOString();
        if (report.event === 'live') {
          this.db
            .prepare(
              `INSERT INTO sandbox_usage (sandbox_id, principal, adapter, day, started_at, live_since_ms, updated_at)
               VALUES (@sandboxId, @principal, @adapter, @day, @startedAt, @atMs, @at)
               ON CONFLICT (sandbox_id) DO UPDATE SET live_since_ms = COALESCE(sandbox_usage.live_since_ms, excluded.live_since_ms),
                 ended_at = NULL, updated_at = excluded.updated_at`,
            )
            .run({ ...report, day: utcDay(report.atMs), startedAt: new Date(report.atMs).toISOString(), at });
        }
        const exists = this.db.prepare('SELECT 1 FROM sandbox_usage WHERE sandbox_id = ?').get(report.sandboxId) !== undefined;
        if (!exists) return;
        for (const reading of report.readings) this.addReading(report.sandboxId, reading, report.atMs, at);
        if (report.event === 'stopped') {
          this.db
            .prepare(
              `UPDATE sandbox_usage SET live_ms = live_ms + MAX(0, @atMs - live_since_ms), live_since_ms = NULL, ended_at = @endedAt, updated_at = @at
               WHERE sandbox_id = @sandboxId AND live_since_ms IS NOT NULL`,
            )
            .run({ sandboxId: report.sandboxId, atMs: report.atMs, endedAt: new Date(report.atMs).toISOString(), at });
        }
      })
      .immediate();
  }

  private addReading(sandboxId: string, reading: UsageReport['readings'][number], atMs: number, at: string): void {
    const last = this.db.prepare('SELECT cpu_ns AS cpuNanos, requests FROM usage_readings WHERE sandbox_id = ? AND container_id = ?').get(sandboxId, reading.containerId) as
      { cpuNanos: number; requests: number | null } | undefined;
    const added = accrue(last, reading);
    this.db
      .prepare(
        `UPDATE sandbox_usage SET cpu_ns = cpu_ns + @cpuNanos, peak_memory_bytes = MAX(peak_memory_bytes, @peak),
           requests = CASE WHEN @requests IS NULL THEN requests ELSE COALESCE(requests, 0) + @requests END, updated_at = @at
         WHERE sandbox_id = @sandboxId`,
      )
      .run({ sandboxId, cpuNanos: added.cpuNanos, peak: reading.memoryPeakBytes, requests: added.requests, at });
    this.db
      .prepare(
        `INSERT INTO usage_readings (sandbox_id, container_id, cpu_ns, requests, read_at_ms) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (sandbox_id, container_id) DO UPDATE SET cpu_ns = excluded.cpu_ns, requests = excluded.requests, read_at_ms = excluded.read_at_ms`,
      )
      .run(sandboxId, reading.containerId, reading.cpuNanos, reading.requests, atMs);
  }

  /** One sandbox's usage as kept; `undefined` when it never became READY. */
  get(sandboxId: string): SandboxUsage | undefined {
    const row = this.db.prepare(`${SELECT_USAGE} WHERE u.sandbox_id = ?`).get(sandboxId) as UsageDbRow | undefined;
    return row === undefined ? undefined : toUsage(row);
  }

  /** Usage by principal and UTC day, newest day first: `query.principal`'s only, from `query.since` on; live sandboxes counted up to `now`. */
  rollUp(query: UsageQuery, now: Date = new Date()): UsageRow[] {
    const rows = this.db
      .prepare(`${SELECT_USAGE} WHERE (@principal IS NULL OR u.principal = @principal) AND (@since IS NULL OR u.day >= @since)`)
      .all({ principal: query.principal ?? null, since: query.since ?? null }) as UsageDbRow[];
    return rollUp(rows.map((row) => ({ ...toUsage(row), liveUntilMs: liveUntil(row, now.getTime()) })));
  }

  /** `principal`'s sandbox-time today (UTC), live sandboxes up to `now`, and when the day ends: what the daily cap judges. */
  today(principal: string, now: Date = new Date()): DailyUsage {
    const nowMs = now.getTime();
    const rows = this.db.prepare(`${SELECT_USAGE} WHERE u.principal = ? AND u.day = ?`).all(principal, utcDay(nowMs)) as UsageDbRow[];
    const [today] = rollUp(rows.map((row) => ({ ...toUsage(row), liveUntilMs: liveUntil(row, nowMs) })));
    return { usedSeconds: today?.sandboxSeconds ?? 0, resetsAt: new Date(nextUtcMidnight(nowMs)).toISOString() };
  }
}

function toUsage(row: UsageDbRow): SandboxUsage {
  return {
    sandboxId: row.sandbox_id,
    principal: row.principal,
    day: row.day,
    liveMs: row.live_ms,
    liveSinceMs: row.live_since_ms,
    cpuNanos: row.cpu_ns,
    peakMemoryBytes: row.peak_memory_bytes,
    requests: row.requests,
  };
}

/**
 * Up to when an open stretch counts: now while the sandbox may run; else (its stop never
 * arrived: a run terminated, a report lost to a long store outage) its last change in the
 * inventory, so a sandbox that ended is never counted on for ever.
 */
function liveUntil(row: UsageDbRow, nowMs: number): number {
  if (row.state === null || row.updated_at === null || RUNNING_STATES.has(row.state)) return nowMs;
  return Math.min(nowMs, Date.parse(row.updated_at));
}
