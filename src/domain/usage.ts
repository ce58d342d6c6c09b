/**
 * Usage (DESIGN §19): what each sandbox accrues — live seconds, CPU seconds, peak memory
 * and requests served — and the per-principal daily cap on sandbox-hours. Pure: the
 * store keeps the numbers, the workflow carries the engine's reads to it.
 */
import { z } from 'zod';
import { parseDuration } from './duration';
import { principalSchema, sandboxIdSchema } from './sandbox-request';
import { ADAPTER_NAMES } from './service-catalog';

/**
 * One container's cumulative counters, read from the engine (CPU, memory) and its
 * emulator's guard (requests). CPU and requests count from the container's start: a new
 * or restarted container starts again at 0, which the store's accrual allows for.
 */
export const containerUsageSchema = z
  .object({
    containerId: z.string().min(1).max(128),
    /** CPU time the container has used since it started, in nanoseconds. */
    cpuNanos: z.number().int().nonnegative(),
    /** The most memory it has held (cgroup v1 `max_usage`), or what it holds now where the engine keeps no maximum (cgroup v2). */
    memoryPeakBytes: z.number().int().nonnegative(),
    /** Requests its emulator served to the agent since the container started; `null` where nothing counts them (floci, the memory adapter). */
    requests: z.number().int().nonnegative().nullable(),
  })
  .strict();
export type ContainerUsage = z.infer<typeof containerUsageSchema>;

/**
 * What a lifecycle tells the store about a sandbox's usage: it became live (READY) at
 * `atMs`, here are reads of its containers while it is live, or it stopped being live
 * (torn down or paused) at `atMs`, with the reads taken just before its containers went.
 */
export const usageReportSchema = z
  .object({
    sandboxId: sandboxIdSchema,
    principal: principalSchema,
    adapter: z.enum(ADAPTER_NAMES),
    event: z.enum(['live', 'reading', 'stopped']),
    /** When it happened, by the workflow's clock (ms since the epoch). */
    atMs: z.number().int().nonnegative(),
    readings: z.array(containerUsageSchema).max(16).default([]),
  })
  .strict();
export type UsageReport = z.output<typeof usageReportSchema>;
export type UsageReportInput = z.input<typeof usageReportSchema>;

/** Audit actions that start and end a sandbox's live stretches. */
const LIVE_FROM = new Set(['ready', 'resumed']);
const LIVE_UNTIL = new Set(['paused', 'destroyed', 'destroy_failed']);

/**
 * The usage report an audit row stands for (DESIGN §19): READY (or resumed) starts a live
 * stretch, a pause or a teardown ends it, with the reads teardown took just before the
 * containers went (the row's `summary.usage`). Derived by the store where it writes the
 * row, so becoming live and stopping cost the lifecycle nothing more; `undefined` for rows
 * that do neither.
 */
export function usageReportOfAudit(
  sandbox: { readonly id: string; readonly principal: string; readonly adapter: string },
  operation: { readonly action: string; readonly summary: Readonly<Record<string, unknown>> },
  atMs: number,
): UsageReport | undefined {
  const event = LIVE_FROM.has(operation.action) ? 'live' : LIVE_UNTIL.has(operation.action) ? 'stopped' : undefined;
  if (event === undefined) return undefined;
  const readings = event === 'stopped' ? z.array(containerUsageSchema).max(16).safeParse(operation.summary.usage) : undefined;
  const report = usageReportSchema.safeParse({
    sandboxId: sandbox.id,
    principal: sandbox.principal,
    adapter: sandbox.adapter,
    event,
    atMs,
    readings: readings?.success === true ? readings.data : [],
  });
  return report.success ? report.data : undefined;
}

/** What the store last read of one container: the baseline the next read adds from. */
export interface ContainerCounters {
  readonly cpuNanos: number;
  readonly requests: number | null;
}

/** What one read adds to a sandbox's totals. */
export interface Accrual {
  readonly cpuNanos: number;
  /** `null`: this read counts no requests. */
  readonly requests: number | null;
}

/** How much a cumulative counter grew since `last`: all of it when there was no last read, or when it went back (the container's process started again at 0). */
function grown(now: number, last: number | null | undefined): number {
  if (last === null || last === undefined || now < last) return now;
  return now - last;
}

/**
 * What `reading` adds over `last` (the store's previous read of the same container, if
 * any): only what grew, so a read at teardown after a slow-timer read counts nothing twice,
 * and a container started afresh (a restart, a resume: a new container id; or the same
 * container restarted, its counter lower than before) counts from 0.
 */
export function accrue(last: ContainerCounters | undefined, reading: ContainerUsage): Accrual {
  return {
    cpuNanos: grown(reading.cpuNanos, last?.cpuNanos),
    requests: reading.requests === null ? null : grown(reading.requests, last?.requests),
  };
}

/** What the store keeps of one sandbox's usage. */
export interface SandboxUsage {
  readonly sandboxId: string;
  readonly principal: string;
  /** The UTC day (YYYY-MM-DD) it first became READY: its whole usage counts to that day. */
  readonly day: string;
  /** Milliseconds it was READY, up to its last stop. */
  readonly liveMs: number;
  /** Since when it is READY now (ms), or `null` while it is not (paused, ended). */
  readonly liveSinceMs: number | null;
  readonly cpuNanos: number;
  readonly peakMemoryBytes: number;
  readonly requests: number | null;
}

/** The sandbox's live milliseconds up to `untilMs`: what it had, and the stretch it is READY now. */
export function liveMsUntil(usage: Pick<SandboxUsage, 'liveMs' | 'liveSinceMs'>, untilMs: number): number {
  return usage.liveMs + (usage.liveSinceMs === null ? 0 : Math.max(0, untilMs - usage.liveSinceMs));
}

/** The UTC day of `ms`, as YYYY-MM-DD. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** When the UTC day of `ms` ends (the next 00:00 UTC), in ms. */
export function nextUtcMidnight(ms: number): number {
  const day = new Date(ms);
  return Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate() + 1);
}

/** One row of `sandboxctl usage --json` (DESIGN §11): a principal's usage on one UTC day. */
export interface UsageRow {
  readonly principal: string;
  readonly day: string;
  /** Sandboxes that first became READY that day. */
  readonly sandboxes: number;
  readonly sandboxSeconds: number;
  readonly cpuSeconds: number;
  /** The highest peak of any one of them. */
  readonly peakMemoryBytes: number;
  /** Requests served to agents by emulators that count them (moto); floci and the memory adapter add 0. */
  readonly requests: number;
}

/** A UTC day, YYYY-MM-DD, that exists. */
export const usageDaySchema = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a UTC day, YYYY-MM-DD')
  .refine((day) => !Number.isNaN(Date.parse(`${day}T00:00:00Z`)) && utcDay(Date.parse(`${day}T00:00:00Z`)) === day, 'must be a real day');

/**
 * The first UTC day `--since` means: a day (`2025-01-31`), a time (`2025-01-31T12:00:00Z`,
 * its UTC day), or a duration back from `nowMs` (`7d`: the day 7 days ago); `undefined` when
 * it is none of these.
 */
export function sinceDay(text: string, nowMs: number): string | undefined {
  const trimmed = text.trim();
  if (usageDaySchema.safeParse(trimmed).success) return trimmed;
  const seconds = parseDuration(trimmed);
  if (seconds !== undefined) return utcDay(nowMs - seconds * 1000);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(trimmed)) return undefined;
  const ms = Date.parse(trimmed);
  return Number.isNaN(ms) ? undefined : utcDay(ms);
}

/** What `usage` asks: whose (a principal-bound caller: its own only), and from which UTC day on. */
export const usageQuerySchema = z.object({ principal: principalSchema.optional(), since: usageDaySchema.optional() }).strict();
export type UsageQuery = z.infer<typeof usageQuerySchema>;

/** Rolls per-sandbox usage up by principal and day (newest day first, then principal), live ones counted up to `nowMs`. */
export function rollUp(usages: readonly (SandboxUsage & { readonly liveUntilMs: number })[]): UsageRow[] {
  const rows = new Map<string, { principal: string; day: string; sandboxes: number; liveMs: number; cpuNanos: number; peakMemoryBytes: number; requests: number }>();
  for (const usage of usages) {
    const key = `${usage.day}\u0000${usage.principal}`;
    const row = rows.get(key) ?? { principal: usage.principal, day: usage.day, sandboxes: 0, liveMs: 0, cpuNanos: 0, peakMemoryBytes: 0, requests: 0 };
    row.sandboxes += 1;
    row.liveMs += liveMsUntil(usage, usage.liveUntilMs);
    row.cpuNanos += usage.cpuNanos;
    row.peakMemoryBytes = Math.max(row.peakMemoryBytes, usage.peakMemoryBytes);
    row.requests += usage.requests ?? 0;
    rows.set(key, row);
  }
  return [...rows.values()]
    .sort((a, b) => (a.day === b.day ? a.principal.localeCompare(b.principal) : b.day.localeCompare(a.day)))
    .map((row) => ({
      principal: row.principal,
      day: row.day,
      sandboxes: row.sandboxes,
      sandboxSeconds: Math.round(row.liveMs / 1000),
      cpuSeconds: Math.round(row.cpuNanos / 1e6) / 1000,
      peakMemoryBytes: row.peakMemoryBytes,
      requests: row.requests,
    }));
}

/** A principal's sandbox-time today (UTC), live sandboxes counted up to now: what the daily cap judges. */
export interface DailyUsage {
  readonly usedSeconds: number;
  /** ISO time the day ends and the count starts again (the next 00:00 UTC). */
  readonly resetsAt: string;
}

/** The most sandbox-hours a policy row allows a principal per UTC day. */
export const maxSandboxHoursPerDaySchema = z
  .number({ invalid_type_error: 'must be a number of hours' })
  .positive('must be more than 0')
  .max(24 * 1000, 'must be at most 24000 hours');

/** Why a create past the daily cap is refused, or `undefined` when there is room. */
export function dailyCapRefusal(principal: string, maxHours: number | null, usage: DailyUsage | undefined): { reason: string; details: Record<string, unknown> } | undefined {
  if (maxHours === null || usage === undefined) return undefined;
  const capSeconds = Math.round(maxHours * 3600);
  if (usage.usedSeconds < capSeconds) return undefined;
  return {
    reason:
      `${principal} has used ${usage.usedSeconds} sandbox-seconds today (UTC); the policy allows ${maxHours} sandbox-hours (${capSeconds} s) per day. ` +
      `The count starts again at ${usage.resetsAt}`,
    details: { maxSandboxHoursPerDay: maxHours, usedSandboxSeconds: usage.usedSeconds, capSeconds, resetsAt: usage.resetsAt },
  };
}
