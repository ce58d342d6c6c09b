import { z } from 'zod';
import { SandboxPlaneError } from '../domain/errors';
import { ADAPTER_NAMES } from '../domain/service-catalog';
import { TERMINAL_STATES } from '../domain/sandbox-states';
import { snapshotQuotaExcess, type SnapshotContent, type SnapshotHoldings, type SnapshotQuota, type SnapshotSource, type SnapshotSummary, type StoredSnapshot } from '../domain/snapshots';
import type { SqliteDatabase } from './database';

/** A snapshot row as stored: validated on the way out too, so a hand-edited row fails loudly. */
const storedSnapshotSchema = z.object({
  snapshot_id: z.string().min(1),
  sandbox_id: z.string().min(1),
  principal: z.string().min(1),
  adapter: z.enum(ADAPTER_NAMES),
  services: z.string(),
  digest: z.string().min(1),
  bytes: z.number().int().nonnegative(),
  created_at: z.string(),
});

function toSource(raw: unknown): SnapshotSource & { digest: string } {
  const row = storedSnapshotSchema.parse(raw);
  return {
    snapshotId: row.snapshot_id,
    sandboxId: row.sandbox_id,
    principal: row.principal,
    adapter: row.adapter,
    services: z.array(z.string()).parse(JSON.parse(row.services)),
    bytes: row.bytes,
    createdAt: row.created_at,
    digest: row.digest,
  };
}

/** What a listing shows of a snapshot (DESIGN §11), without its owner or content. */
export function summaryOf(source: SnapshotSummary): SnapshotSummary {
  return { snapshotId: source.snapshotId, sandboxId: source.sandboxId, adapter: source.adapter, bytes: source.bytes, createdAt: source.createdAt };
}

const TERMINAL_LIST = [...TERMINAL_STATES].map((state) => `'${state}'`).join(', ');

/**
 * A snapshot a pause keeps a sandbox's state in: the latest `paused` row of a sandbox still
 * alive names it, and no `resumed` row came after. Deleting it would lose the sandbox.
 */
const HELD_BY_PAUSE = `EXISTS (
  SELECT 1 FROM operations p JOIN sandboxes sb ON sb.id = p.sandbox_id
  WHERE p.action = 'paused' AND json_extract(p.summary, '$.snapshotId') = s.snapshot_id
    AND sb.state NOT IN (${TERMINAL_LIST})
    AND NOT EXISTS (SELECT 1 FROM operations r WHERE r.sandbox_id = p.sandbox_id AND r.action = 'resumed' AND r.seq > p.seq))`;

const SELECT = `SELECT s.snapshot_id, s.sandbox_id, s.principal, s.adapter, s.services, s.digest, c.bytes, s.created_at
  FROM snapshots s JOIN snapshot_contents c ON c.digest = s.digest`;

/**
 * Snapshots (DESIGN §15). Content is kept once per digest, however many snapshots hold
 * it. Every read names the principal: another's snapshot is not found, never refused, so
 * its existence does not leak.
 */
export class SnapshotRepository {
  constructor(private readonly db: SqliteDatabase) {}

  /**
   * Keeps a snapshot; keeping the same id again (a retried activity) returns the first.
   * QUOTA_EXCEEDED, and nothing kept, when it would take its principal past `quota`.
   */
  keep(snapshot: Omit<SnapshotSource, 'bytes'> & { content: SnapshotContent }, quota: SnapshotQuota): SnapshotSummary {
    return this.db
      .transaction(() => {
        const earlier = this.find(snapshot.snapshotId, snapshot.principal);
        if (earlier !== undefined) return summaryOf(earlier);
        const { digest, bytes } = snapshot.content;
        const excess = snapshotQuotaExcess(snapshot.principal, this.holdings(snapshot.principal), bytes, quota);
        if (excess !== undefined) {
          throw new SandboxPlaneError('QUOTA_EXCEEDED', `snapshot of sandbox ${snapshot.sandboxId} not kept: ${excess}; delete one you no longer need first`, {
            details: { principal: snapshot.principal },
          });
        }
        // `sealed` is empty: the content is in the snapshot directory (migration 9 kept it here; moveSnapshotContentsOut moves it).
        this.db.prepare("INSERT OR IGNORE INTO snapshot_contents (digest, sealed, bytes) VALUES (?, '', ?)").run(digest, bytes);
        this.db
          .prepare('INSERT INTO snapshots (snapshot_id, sandbox_id, principal, adapter, services, digest, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
          .run(snapshot.snapshotId, snapshot.sandboxId, snapshot.principal, snapshot.adapter, JSON.stringify(snapshot.services), snapshot.content.digest, snapshot.createdAt);
        return summaryOf({ ...snapshot, bytes });
      })
      .immediate();
  }

  /** How many snapshots `principal` holds, and their bytes as listed. */
  holdings(principal: string): SnapshotHoldings {
    return this.db
      .prepare('SELECT COUNT(*) AS count, COALESCE(SUM(c.bytes), 0) AS bytes FROM snapshots s JOIN snapshot_contents c ON c.digest = s.digest WHERE s.principal = ?')
      .get(principal) as SnapshotHoldings;
  }

  /**
   * Deletes a snapshot, and its content's row when no other snapshot holds it (the sweep
   * then removes its file): `principal`'s (an operator's `undefined`: anyone's). NOT_FOUND for one that is not there or another's;
   * INVALID_STATE for the one a PAUSED sandbox resumes from.
   */
  remove(snapshotId: string, principal: string | undefined): SnapshotSource {
    return this.db
      .transaction(() => {
        const row = this.db.prepare(`${SELECT} WHERE s.snapshot_id = ? AND (@principal IS NULL OR s.principal = @principal)`).get(snapshotId, { principal: principal ?? null });
        if (row === undefined) {
          throw new SandboxPlaneError('NOT_FOUND', `${principal ?? 'the plane'} holds no snapshot ${snapshotId}`, {
            hint: '`sandboxctl snapshots` lists the snapshots.',
            details: { snapshotId },
          });
        }
        const { digest, ...source } = toSource(row);
        if (this.db.prepare(`SELECT 1 FROM snapshots s WHERE s.snapshot_id = ? AND ${HELD_BY_PAUSE}`).get(snapshotId) !== undefined) {
          throw new SandboxPlaneError('INVALID_STATE', `snapshot ${snapshotId} holds the state of PAUSED sandbox ${source.sandboxId}; it goes once that sandbox resumes or is destroyed`, {
            hint: `Resume it (\`sandboxctl resume ${source.sandboxId}\`) or destroy it first.`,
            details: { snapshotId, sandboxId: source.sandboxId },
          });
        }
        this.db.prepare('DELETE FROM snapshots WHERE snapshot_id = ?').run(snapshotId);
        this.db.prepare('DELETE FROM snapshot_contents WHERE digest = ? AND NOT EXISTS (SELECT 1 FROM snapshots WHERE digest = ?)').run(digest, digest);
        return source;
      })
      .immediate();
  }

  /** Snapshots taken before `cutoff` (ISO time), oldest first, but for those PAUSED sandboxes resume from: what the sweep removes. */
  olderThan(cutoff: string): { snapshotId: string; principal: string }[] {
    return this.db
      .prepare(`SELECT s.snapshot_id AS snapshotId, s.principal FROM snapshots s WHERE s.created_at < ? AND NOT ${HELD_BY_PAUSE} ORDER BY s.created_at, s.snapshot_id`)
      .all(cutoff) as { snapshotId: string; principal: string }[];
  }

  /** The principal's snapshot, or `undefined` when there is none by that id (or it is another's). */
  find(snapshotId: string, principal: string): SnapshotSource | undefined {
    const row = this.db.prepare(`${SELECT} WHERE s.snapshot_id = ? AND s.principal = ?`).get(snapshotId, principal);
    if (row === undefined) return undefined;
    const { digest: _digest, ...source } = toSource(row);
    return source;
  }

  /** The principal's snapshot with its content's digest; NOT_FOUND when there is none by that id. */
  load(snapshotId: string, principal: string): StoredSnapshot {
    const row = this.db.prepare(`${SELECT} WHERE s.snapshot_id = ? AND s.principal = ?`).get(snapshotId, principal);
    if (row === undefined) throw new SandboxPlaneError('NOT_FOUND', `${principal} holds no snapshot ${snapshotId}`);
    const { digest, ...source } = toSource(row);
    return { ...source, content: { digest, bytes: source.bytes } };
  }

  /** Whether a snapshot holds the content of `digest`. */
  holdsContent(digest: string): boolean {
    return this.db.prepare('SELECT 1 FROM snapshot_contents WHERE digest = ?').get(digest) !== undefined;
  }

  /** Content an older build kept in this file, sealed with the store's key (see moveSnapshotContentsOut). */
  contentsKeptInside(): { digest: string; sealed: string }[] {
    return this.db.prepare("SELECT digest, sealed FROM snapshot_contents WHERE sealed <> ''").all() as { digest: string; sealed: string }[];
  }

  /** Forgets the copy of `digest`'s content kept in this file, once the snapshot directory holds it. */
  contentMovedOut(digest: string): void {
    this.db.prepare("UPDATE snapshot_contents SET sealed = '' WHERE digest = ?").run(digest);
  }

  /** Snapshots, newest first: the principal's (everyone's when `undefined`, for an operator), of one sandbox when `sandboxId` is given. */
  list(principal: string | undefined, sandboxId?: string): SnapshotSummary[] {
    const rows = this.db
      .prepare(`${SELECT} WHERE (@principal IS NULL OR s.principal = @principal) AND (@sandboxId IS NULL OR s.sandbox_id = @sandboxId) ORDER BY s.created_at DESC, s.snapshot_id`)
      .all({ principal: principal ?? null, sandboxId: sandboxId ?? null });
    return rows.map((row) => summaryOf(toSource(row)));
  }
}
