/**
 * The tamper-evident audit trail (DESIGN §19): what `sandboxctl audit verify` answers and
 * what `sandboxctl audit export` pages through. The hashing rule itself lives with the
 * store (store/audit-chain.ts), which alone holds the key.
 */
import { z } from 'zod';
import { parseDuration } from './duration';
import { SandboxPlaneError } from './errors';
import type { StoredAuditRow } from './lifecycle-record';

/** The audit tables, each one hash chain (a stream): a sandbox's rows and a target's rows. */
export const AUDIT_STREAMS = ['operations', 'target_operations'] as const;
export type AuditStream = (typeof AUDIT_STREAMS)[number];

/**
 * What is wrong with a row: its fields do not match its hash (`edited`, or the chain was
 * rewritten without the plane's key); it is not chained to the row before it in its stream
 * (`removed_or_reordered`); it carries no hash at all (`unchained`: written past the store).
 */
export type AuditProblem = 'edited' | 'removed_or_reordered' | 'unchained';

export interface AuditBadRow {
  readonly stream: AuditStream;
  readonly seq: number;
  readonly problem: AuditProblem;
  readonly message: string;
}

/** One stream's state: its rows, its last row and that row's hash (keep it outside the plane to catch a cut-off tail). */
export interface AuditStreamHead {
  readonly stream: AuditStream;
  readonly rows: number;
  readonly lastSeq: number | null;
  readonly head: string | null;
  readonly firstBad: AuditBadRow | null;
}

/** `sandboxctl audit verify --json` (DESIGN §11): `ok`, `rows` checked, the first bad row (`null` when ok), and each stream's head. */
export interface AuditVerification {
  readonly ok: boolean;
  readonly rows: number;
  readonly firstBad: AuditBadRow | null;
  readonly streams: readonly AuditStreamHead[];
}

/** One audit row as exported: its fields and its place in the chain. */
export interface AuditRecord extends StoredAuditRow {
  readonly stream: AuditStream;
  /** The sandbox of an `operations` row; `null` for a target's row. */
  readonly sandboxId: string | null;
  /** The target of a `target_operations` row; `null` for a sandbox's row. */
  readonly target: string | null;
  /** The hash of the row before it in its stream (for the first, a keyed hash of the stream's name); `null` when unchained. */
  readonly prevHash: string | null;
  readonly hash: string | null;
}

/** Where the next page of an export starts: after `seq` of `stream` (streams in {@link AUDIT_STREAMS} order). */
export const auditCursorSchema = z.object({ stream: z.enum(AUDIT_STREAMS), seq: z.number().int().min(0) }).strict();
export type AuditCursor = z.output<typeof auditCursorSchema>;

/** Rows in one export page: well inside Temporal's payload limit, with the store's byte cap on summaries besides. */
export const AUDIT_EXPORT_PAGE_ROWS = 500;

export const auditExportPageSchema = z
  .object({
    after: auditCursorSchema.nullable().default(null),
    since: z.string().datetime({ offset: true, message: 'must be an ISO 8601 time' }).optional(),
    limit: z.number().int().min(1).max(AUDIT_EXPORT_PAGE_ROWS).default(AUDIT_EXPORT_PAGE_ROWS),
  })
  .strict();

export interface AuditExportPage {
  readonly records: AuditRecord[];
  /** Pass as `after` for the next page; `null` once every stream is done. */
  readonly next: AuditCursor | null;
}

export const AUDIT_EXPORT_FORMATS = ['jsonl', 'ocsf'] as const;
export type AuditExportFormat = (typeof AUDIT_EXPORT_FORMATS)[number];

/** `--since`: an ISO 8601 time, or a duration back from `now` (`90s`, `30m`, `2h`, `7d`); the ISO time it means. */
export function parseSince(text: string, now: Date = new Date()): string {
  const seconds = parseDuration(text);
  if (seconds !== undefined) return new Date(now.getTime() - seconds * 1000).toISOString();
  const iso = z.string().datetime({ offset: true }).safeParse(text.trim());
  if (iso.success) return new Date(iso.data).toISOString();
  if (/^\d{4}-\d{2}-\d{2}$/.test(text.trim()) && !Number.isNaN(Date.parse(text.trim()))) return new Date(`${text.trim()}T00:00:00Z`).toISOString();
  throw new SandboxPlaneError('INVALID_INPUT', `--since: ${JSON.stringify(text)} is neither an ISO 8601 time (2025-01-31T12:00:00Z, 2025-01-31) nor a duration (90s, 30m, 2h, 7d)`, {
    details: { fields: ['since'] },
  });
}

/** `audit verify`'s human line for a bad row: which row, what is wrong. */
export function describeBadRow(bad: AuditBadRow): string {
  return `${bad.stream} row ${bad.seq}: ${bad.message}`;
}
