import { z } from 'zod';
import type { AdapterName } from './service-catalog';

/**
 * Snapshots (DESIGN §15): an emulator's state at a moment, kept by the store role (its
 * SQLite file, beside the inventory it belongs with), compressed and addressed by the
 * digest of its content, and owned by the principal of the sandbox it was taken of.
 */

export const SNAPSHOT_ID_PATTERN = /^snap-[0-9a-f]{16}$/;
export const snapshotIdSchema = z.string().regex(SNAPSHOT_ID_PATTERN, 'must be a snapshot id such as snap-0123456789abcdef (`sandboxctl snapshots` lists yours)');

/**
 * The most a snapshot may hold, compressed, unless SANDBOXPLANE_SNAPSHOT_MAX_BYTES says
 * otherwise. Content never enters workflow history (its digest does), so no Temporal
 * payload limit applies; a moto recording holds 24 MiB as it writes it.
 */
export const DEFAULT_SNAPSHOT_MAX_BYTES = 32 * 1024 * 1024;

/** How many sandboxes one fork makes at most, unless SANDBOXPLANE_FORK_MAX says otherwise (DESIGN §11 "Fork many"). */
export const DEFAULT_FORK_MAX = 20;

/**
 * What one principal may keep (DESIGN §11 "Bounds and ownership"), counted on the snapshots
 * the store holds: how many, their bytes as listed (compressed, each snapshot counted even
 * where two share content), and how old one may grow before the sweep removes it.
 */
export interface SnapshotQuota {
  readonly count: number;
  readonly bytes: number;
  readonly maxAgeSeconds: number;
}

export const DEFAULT_SNAPSHOT_QUOTA: SnapshotQuota = Object.freeze({ count: 50, bytes: 256 * 1024 * 1024, maxAgeSeconds: 30 * 86400 });

/** What a principal holds now, against its {@link SnapshotQuota}. */
export interface SnapshotHoldings {
  readonly count: number;
  readonly bytes: number;
}

/** Why keeping `adding` more bytes as one more snapshot would pass the quota, or `undefined` when it fits. */
export function snapshotQuotaExcess(principal: string, held: SnapshotHoldings, adding: number, quota: SnapshotQuota): string | undefined {
  if (held.count + 1 > quota.count) return `${principal} holds ${held.count} snapshots; the quota is ${quota.count} (SANDBOXPLANE_SNAPSHOT_QUOTA)`;
  if (held.bytes + adding > quota.bytes) {
    return `${principal}'s snapshots hold ${held.bytes} bytes and this one ${adding} more; the quota is ${quota.bytes} bytes (SANDBOXPLANE_SNAPSHOT_QUOTA_BYTES)`;
  }
  return undefined;
}

/** What `sandboxctl snapshot` and `snapshots` show of one (DESIGN §11). */
export interface SnapshotSummary {
  readonly snapshotId: string;
  readonly sandboxId: string;
  readonly adapter: AdapterName;
  /** Its size as kept: compressed. */
  readonly bytes: number;
  readonly createdAt: string;
}

/**
 * A snapshot's content as roles and workflow history name it: the SHA-256 of the state it
 * holds, and its size compressed. The content itself stays in SANDBOXPLANE_SNAPSHOT_DIR.
 */
export interface SnapshotContent {
  readonly digest: string;
  readonly bytes: number;
}

/** What a fork or restore needs to know of a snapshot besides its content. */
export interface SnapshotSource extends SnapshotSummary {
  readonly principal: string;
  /** The services of the sandbox it was taken of: its state may touch any of them. */
  readonly services: readonly string[];
}

/** A kept snapshot with the digest of its content, as the store hands it to a restore. */
export interface StoredSnapshot extends SnapshotSource {
  readonly content: SnapshotContent;
}

/** The payload of the `snapshot`, `pause` and `resume` updates: who asks, for the audit trail. */
export const actorPayloadSchema = z.object({ actor: z.string().min(1).max(200).optional() }).strict();
export type ActorPayload = z.input<typeof actorPayloadSchema>;

/** The `restore` update's payload. */
export const restorePayloadSchema = z.object({ snapshotId: snapshotIdSchema, actor: z.string().min(1).max(200).optional() }).strict();
export type RestorePayload = z.input<typeof restorePayloadSchema>;

/**
 * Why `source` cannot go into a sandbox of `target`'s adapter and services, or `undefined`
 * when it can: a snapshot's state may touch any service of its sandbox, so it goes only
 * where all of them are granted (a replay must not make what the sandbox may not hold).
 */
export function snapshotMisfit(
  source: Pick<SnapshotSource, 'snapshotId' | 'adapter' | 'services'>,
  target: { adapter: AdapterName; services: readonly string[] },
): { code: 'INVALID_INPUT' | 'SERVICE_NOT_ALLOWED'; message: string } | undefined {
  if (source.adapter !== target.adapter) {
    return { code: 'INVALID_INPUT', message: `snapshot ${source.snapshotId} is of a ${source.adapter} sandbox; it goes only into a ${source.adapter} sandbox, not ${target.adapter}` };
  }
  const missing = source.services.filter((service) => !target.services.includes(service));
  if (missing.length > 0) {
    return {
      code: 'SERVICE_NOT_ALLOWED',
      message: `snapshot ${source.snapshotId} holds state of ${missing.join(', ')}, which the sandbox is not granted; ask for ${missing.join(', ')} too`,
    };
  }
  return undefined;
}
