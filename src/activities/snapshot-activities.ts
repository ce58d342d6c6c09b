import { createHash } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { Context, log } from '@temporalio/activity';
import type { AdapterRegistry, QuietHold, RecordedRuntime, RestoreTarget } from '../adapters/cloud-emulator-adapter';
import type { SandboxCredentials } from '../domain/client-config';
import { isSandboxPlaneError, SandboxPlaneError } from '../domain/errors';
import type { AdapterName } from '../domain/service-catalog';
import { formatDuration } from '../domain/duration';
import {
  DEFAULT_SNAPSHOT_MAX_BYTES,
  DEFAULT_SNAPSHOT_QUOTA,
  type SnapshotContent,
  type SnapshotQuota,
  type SnapshotSource,
  type SnapshotSummary,
  type StoredSnapshot,
} from '../domain/snapshots';
import { summaryOf } from '../store/snapshot-repository';
import type { SecretBox } from '../crypto/secret-box';
import type { Store } from '../store';
import { sha256Hex } from '../domain/sha256';
import { withTaxonomy } from './activity-failure';
import type { SnapshotContents } from './snapshot-contents';

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

function adapterOf(adapters: AdapterRegistry, name: AdapterName) {
  const adapter = adapters[name];
  if (adapter === undefined) throw new SandboxPlaneError('ADAPTER_UNAVAILABLE', `this docker worker does not run the ${name} adapter`);
  return adapter;
}

/** A state as a snapshot keeps it: compressed, within the cap, with the digest of what it holds. */
export function packSnapshot(state: string, maxBytes = DEFAULT_SNAPSHOT_MAX_BYTES): { content: SnapshotContent; gzip: Buffer } {
  const plain = Buffer.from(state, 'utf8');
  const gzip = gzipSync(plain, { level: 6 });
  if (gzip.length > maxBytes) {
    throw new SandboxPlaneError('SNAPSHOT_TOO_LARGE', `the sandbox's state is ${gzip.length} bytes compressed; a snapshot holds at most ${maxBytes} (SANDBOXPLANE_SNAPSHOT_MAX_BYTES)`);
  }
  return { content: { digest: sha256(plain), bytes: gzip.length }, gzip };
}

/** The state `gzip` holds, refused when it is not what `digest` says. */
export function unpackSnapshot(digest: string, gzip: Buffer): string {
  const plain = gunzipSync(gzip);
  if (sha256(plain) !== digest) throw new SandboxPlaneError('SNAPSHOT_CORRUPT', `the snapshot's content does not match its digest ${digest}`);
  return plain.toString('utf8');
}

/** What a run of an earlier build carries: the content itself, in its history (before SANDBOXPLANE_SNAPSHOT_DIR). */
export interface LegacyContent {
  readonly gzipBase64?: string;
}

/**
 * Puts content a run of an earlier build carries in its history into the directory, so
 * that its restore (an IaC checkpoint taken before the upgrade) or its keep (a capture by a
 * docker worker not yet upgraded) works across a rolling upgrade. Checked against its digest.
 */
async function keepLegacyContent(contents: SnapshotContents, content: SnapshotContent & LegacyContent): Promise<void> {
  if (content.gzipBase64 === undefined) return;
  const gzip = Buffer.from(content.gzipBase64, 'base64');
  unpackSnapshot(content.digest, gzip);
  await contents.put(content.digest, gzip);
}

/**
 * The snapshot activities of a docker host (DESIGN §15): taking an emulator's state into
 * the plane's snapshot contents, and putting one back. Only digests cross workflow history.
 */
export function createSnapshotRuntimeActivities(deps: { adapters: AdapterRegistry; contents: SnapshotContents; snapshotMaxBytes?: number }) {
  return {
    /**
     * Keeps the sandbox's emulator state now, sealed under its digest; what names it. With
     * `hold` (a pause) the emulator serves only the plane from before the read on, where it
     * can: `quietLease` says so, and {@link endQuiet} ends it if the container is to stay.
     */
    async captureSnapshot(input: { sandboxId: string; adapter: AdapterName; runtime: RecordedRuntime; hold?: QuietHold }): Promise<SnapshotContent & { quietLease?: string }> {
      return withTaxonomy(async () => {
        const adapter = adapterOf(deps.adapters, input.adapter);
        const { state, quietLease } = await adapter.captureState(input.sandboxId, input.runtime, input.hold);
        let content: SnapshotContent;
        try {
          const packed = packSnapshot(state, deps.snapshotMaxBytes);
          await deps.contents.put(packed.content.digest, packed.gzip);
          content = packed.content;
        } catch (err) {
          // Not kept: nothing will follow the capture, so the sandbox serves its agent again now.
          if (quietLease !== undefined) await adapter.endQuiet?.(input.sandboxId, quietLease, input.runtime).catch(() => undefined);
          throw err;
        }
        log.info('snapshot taken', { sandboxId: input.sandboxId, bytes: content.bytes, digest: content.digest, held: quietLease !== undefined });
        return quietLease === undefined ? content : { ...content, quietLease };
      });
    },

    /** Ends the quiet a capture held under `lease` (its `quietLease`): the pause that asked for it did not remove the container. */
    async endQuiet(input: { sandboxId: string; adapter: AdapterName; runtime: RecordedRuntime; lease: string }): Promise<void> {
      return withTaxonomy(async () => {
        await adapterOf(deps.adapters, input.adapter).endQuiet?.(input.sandboxId, input.lease, input.runtime);
        log.info('quiet ended', { sandboxId: input.sandboxId });
      });
    },

    /** Replaces the sandbox's emulator state with a snapshot's; the sandbox's credentials afterwards (`null`: unchanged, or the adapter has none). */
    async restoreSnapshot(input: {
      sandboxId: string;
      adapter: AdapterName;
      runtime: RecordedRuntime;
      content: SnapshotContent & LegacyContent;
      target: RestoreTarget;
    }): Promise<SandboxCredentials | null> {
      return withTaxonomy(async () => {
        const context = Context.current();
        await keepLegacyContent(deps.contents, input.content);
        const state = unpackSnapshot(input.content.digest, await deps.contents.get(input.content.digest));
        const adapterContext = { heartbeat: (details?: unknown) => context.heartbeat(details), cancelled: context.cancellationSignal };
        const credentials = await adapterOf(deps.adapters, input.adapter).restoreState(input.sandboxId, state, input.target, adapterContext, input.runtime);
        log.info('snapshot restored', { sandboxId: input.sandboxId, digest: input.content.digest, from: input.target.from });
        return credentials ?? null;
      });
    },
  };
}

/**
 * Deletes a snapshot (`principal`'s, or anyone's for `undefined`: an operator or the sweep)
 * and records why in the trail of the sandbox it was taken of. Its content stays until the
 * sweep finds no snapshot has held it for a day: a fork that loaded it a moment before still
 * restores. See SnapshotRepository.remove for what is refused.
 */
export function deleteSnapshot(store: Store, input: { snapshotId: string; principal: string | undefined; actor: string; reason: string }): SnapshotSummary {
  return store.sandboxes.atomically(() => {
    const removed = store.snapshots.remove(input.snapshotId, input.principal);
    store.sandboxes.appendAudit(removed.sandboxId, `snapshot-${removed.snapshotId}`, {
      step: 1,
      action: 'snapshot_deleted',
      actor: input.actor,
      effect: 'snapshot_deleted',
      reason: input.reason,
      summary: { snapshotId: removed.snapshotId, bytes: removed.bytes, takenAt: removed.createdAt },
    });
    return summaryOf(removed);
  });
}

/**
 * How long content may lie in the directory with no snapshot holding it before the sweep
 * removes it: room for a capture's keep to follow, for forks that loaded a snapshot just
 * deleted to restore it, and for an IaC run's checkpoint (held by no snapshot) to outlast
 * its apply, settle and verification.
 */
const UNHELD_CONTENT_GRACE_MS = 24 * 60 * 60 * 1000;

/**
 * The snapshot activities of the store role: keeping snapshots (their content is in
 * SANDBOXPLANE_SNAPSHOT_DIR already) within each principal's quota, handing them to their
 * principal only, and removing those past their age, and content no snapshot holds.
 */
export function createSnapshotStoreActivities(deps: { store: Store; contents: SnapshotContents; snapshotQuota?: SnapshotQuota }) {
  const quota = deps.snapshotQuota ?? DEFAULT_SNAPSHOT_QUOTA;
  const { store, contents } = deps;
  return {
    /**
     * Keeps a snapshot under `snapshotId`, or, without one, under an id named by this
     * activity (its workflow run and activity id): the same on every retry, and never
     * drawn from the workflow's random numbers, which its tracing interceptors share with
     * update validators and queries that a replay does not run again.
     */
    async keepSnapshot(input: Omit<SnapshotSource, 'bytes' | 'snapshotId'> & { snapshotId?: string; content: SnapshotContent & LegacyContent }): Promise<SnapshotSummary> {
      return withTaxonomy(async () => {
        await keepLegacyContent(contents, input.content);
        // Refused here rather than at its first restore: a directory the capture's host does not share with the store.
        await contents.mustHold(input.content.digest);
        return store.snapshots.keep({ ...input, snapshotId: input.snapshotId ?? snapshotIdOfThisActivity() }, quota);
      });
    },

    /**
     * The sweep's part (DESIGN §15): snapshots older than SANDBOXPLANE_SNAPSHOT_MAX_AGE go,
     * but for those PAUSED sandboxes resume from; so does content no snapshot holds (a
     * capture whose snapshot was refused or never kept, one whose snapshots were deleted, an
     * IaC checkpoint) once it has lain a day unheld, and writes a crash cut short.
     */
    async expireSnapshots(input: { now?: string } = {}): Promise<{ deleted: SnapshotSummary[] }> {
      return withTaxonomy(async () => {
        const now = input.now === undefined ? Date.now() : Date.parse(input.now);
        const cutoff = new Date(now - quota.maxAgeSeconds * 1000).toISOString();
        const reason = `older than ${formatDuration(quota.maxAgeSeconds)} (SANDBOXPLANE_SNAPSHOT_MAX_AGE)`;
        const deleted = store.snapshots.olderThan(cutoff).map(({ snapshotId }) => deleteSnapshot(store, { snapshotId, principal: undefined, actor: 'sweep', reason }));
        if (deleted.length > 0) log.info('snapshots past their age deleted', { count: deleted.length, cutoff });
        let unheld = 0;
        for (const { digest, modifiedMs, partial } of await contents.list()) {
          if (modifiedMs > now - UNHELD_CONTENT_GRACE_MS) continue;
          if (partial !== undefined) await contents.removePartial(partial);
          else if (!store.snapshots.holdsContent(digest)) await contents.remove(digest);
          else continue;
          unheld += 1;
        }
        if (unheld > 0) log.info('snapshot content no snapshot holds removed', { count: unheld });
        return { deleted };
      });
    },

    /**
     * Deletes a snapshot the plane itself took and will not use (a pause that did not go
     * ahead), with `reason` in its sandbox's trail; one already gone is no failure (a retry).
     */
    async discardSnapshot(input: { snapshotId: string; reason: string }): Promise<void> {
      return withTaxonomy(() => {
        try {
          deleteSnapshot(store, { snapshotId: input.snapshotId, principal: undefined, actor: 'worker', reason: input.reason });
        } catch (err) {
          if (!(isSandboxPlaneError(err) && err.code === 'NOT_FOUND')) throw err;
        }
      });
    },

    /** NOT_FOUND unless `principal` holds the snapshot. */
    async loadSnapshot(input: { snapshotId: string; principal: string }): Promise<StoredSnapshot> {
      return withTaxonomy(() => store.snapshots.load(input.snapshotId, input.principal));
    },
  };
}

/**
 * Moves content an older build kept inside the SQLite file (sealed with the store's key)
 * into the snapshot directory, once, when the store role starts: the snapshots stay
 * forkable across the upgrade.
 */
export async function moveSnapshotContentsOut(store: Store, secrets: SecretBox, contents: SnapshotContents): Promise<number> {
  const kept = store.snapshots.contentsKeptInside();
  for (const { digest, sealed } of kept) {
    await contents.put(digest, secrets.open(sealed, `snapshot:${digest}`));
    store.snapshots.contentMovedOut(digest);
  }
  return kept.length;
}

function snapshotIdOfThisActivity(): string {
  const { workflowExecution, activityId } = Context.current().info;
  if (workflowExecution === undefined) throw new SandboxPlaneError('INVALID_INPUT', 'a snapshot without an id is kept only from a workflow');
  return `snap-${sha256Hex(`${workflowExecution.workflowId}/${workflowExecution.runId}/${activityId}`).slice(0, 16)}`;
}
