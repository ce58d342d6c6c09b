import { createHash } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { Context, log } from '@temporalio/activity';
import type { AdapterRegistry, QuietHold, RecordedRuntime, RestoreTarget } from '../adapters/cloud-emulator-adapter';
import type { SandboxCredentials } from '../domain/client-config';
import { SandboxPlaneError } from '../domain/errors';
import type { AdapterName } from '../domain/service-catalog';
import { formatDuration } from '../domain/duration';
import { DEFAULT_SNAPSHOT_QUOTA, SNAPSHOT_MAX_BYTES, type SnapshotContent, type SnapshotQuota, type SnapshotSource, type SnapshotSummary, type StoredSnapshot } from '../domain/snapshots';
import { summaryOf } from '../store/snapshot-repository';
import type { SecretBox } from '../crypto/secret-box';
import type { Store } from '../store';
import { sha256Hex } from '../domain/sha256';
import { withTaxonomy } from './activity-failure';

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

function adapterOf(adapters: AdapterRegistry, name: AdapterName) {
  const adapter = adapters[name];
  if (adapter === undefined) throw new SandboxPlaneError('ADAPTER_UNAVAILABLE', `this docker worker does not run the ${name} adapter`);
  return adapter;
}

/** A snapshot's content as it travels: compressed, within the cap, with the digest of what it holds. */
export function packSnapshot(state: string, maxBytes = SNAPSHOT_MAX_BYTES): SnapshotContent {
  const packed = gzipSync(Buffer.from(state, 'utf8'), { level: 6 });
  if (packed.length > maxBytes) {
    throw new SandboxPlaneError('SNAPSHOT_TOO_LARGE', `the sandbox's state is ${packed.length} bytes compressed; a snapshot holds at most ${maxBytes}`);
  }
  return { digest: sha256(state), bytes: packed.length, gzipBase64: packed.toString('base64') };
}

/** The state a snapshot's content holds, refused when it is not what its digest says. */
export function unpackSnapshot(content: SnapshotContent): string {
  const state = gunzipSync(Buffer.from(content.gzipBase64, 'base64')).toString('utf8');
  if (sha256(state) !== content.digest) throw new SandboxPlaneError('SNAPSHOT_UNSUPPORTED', `the snapshot's content does not match its digest ${content.digest}`);
  return state;
}

/** The snapshot activities of a docker host (DESIGN §15): taking an emulator's state, and putting one back. */
export function createSnapshotRuntimeActivities(deps: { adapters: AdapterRegistry }) {
  return {
    /**
     * The sandbox's emulator state now, packed for the store. With `hold` (a pause) the
     * emulator serves only the plane from before the read on, where it can: `quietLease`
     * says so, and {@link endQuiet} ends it if the container is to stay.
     */
    async captureSnapshot(input: { sandboxId: string; adapter: AdapterName; runtime: RecordedRuntime; hold?: QuietHold }): Promise<SnapshotContent & { quietLease?: string }> {
      return withTaxonomy(async () => {
        const adapter = adapterOf(deps.adapters, input.adapter);
        const { state, quietLease } = await adapter.captureState(input.sandboxId, input.runtime, input.hold);
        let content: SnapshotContent;
        try {
          content = packSnapshot(state);
        } catch (err) {
          // Too large to keep: nothing will follow the capture, so the sandbox serves its agent again now.
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
    async restoreSnapshot(input: { sandboxId: string; adapter: AdapterName; runtime: RecordedRuntime; content: SnapshotContent; target: RestoreTarget }): Promise<SandboxCredentials | null> {
      return withTaxonomy(async () => {
        const context = Context.current();
        const state = unpackSnapshot(input.content);
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
 * and records why in the trail of the sandbox it was taken of. See SnapshotRepository.remove
 * for what is refused.
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
 * The snapshot activities of the store role: keeping snapshots, sealed with the store's key
 * (a moto snapshot holds the seed its sandbox's key was drawn from), within each principal's
 * quota, handing them to their principal only, and removing those past their age. The seal
 * is bound to the content's digest.
 */
export function createSnapshotStoreActivities(deps: { store: Store; secrets: SecretBox; snapshotQuota?: SnapshotQuota }) {
  const quota = deps.snapshotQuota ?? DEFAULT_SNAPSHOT_QUOTA;
  return {
    /**
     * Keeps a snapshot under `snapshotId`, or, without one, under an id named by this
     * activity (its workflow run and activity id): the same on every retry, and never
     * drawn from the workflow's random numbers, which its tracing interceptors share with
     * update validators and queries that a replay does not run again.
     */
    async keepSnapshot(input: Omit<SnapshotSource, 'bytes' | 'snapshotId'> & { snapshotId?: string; content: SnapshotContent }): Promise<SnapshotSummary> {
      return withTaxonomy(() => {
        const { digest, bytes, gzipBase64 } = input.content;
        const sealed = deps.secrets.seal(Buffer.from(gzipBase64, 'base64'), snapshotBinding(digest));
        return deps.store.snapshots.keep({ ...input, snapshotId: input.snapshotId ?? snapshotIdOfThisActivity(), content: { digest, bytes, sealed } }, quota);
      });
    },

    /** The sweep's part (DESIGN §15): snapshots older than SANDBOXPLANE_SNAPSHOT_MAX_AGE go, but for those PAUSED sandboxes resume from. */
    async expireSnapshots(input: { now?: string } = {}): Promise<{ deleted: SnapshotSummary[] }> {
      return withTaxonomy(() => {
        const now = input.now === undefined ? Date.now() : Date.parse(input.now);
        const cutoff = new Date(now - quota.maxAgeSeconds * 1000).toISOString();
        const reason = `older than ${formatDuration(quota.maxAgeSeconds)} (SANDBOXPLANE_SNAPSHOT_MAX_AGE)`;
        const deleted = deps.store.snapshots.olderThan(cutoff).map(({ snapshotId }) => deleteSnapshot(deps.store, { snapshotId, principal: undefined, actor: 'sweep', reason }));
        if (deleted.length > 0) log.info('snapshots past their age deleted', { count: deleted.length, cutoff });
        return { deleted };
      });
    },

    /** NOT_FOUND unless `principal` holds the snapshot. */
    async loadSnapshot(input: { snapshotId: string; principal: string }): Promise<StoredSnapshot> {
      return withTaxonomy(() => {
        const { content, ...source } = deps.store.snapshots.load(input.snapshotId, input.principal);
        const gzipBase64 = deps.secrets.open(content.sealed, snapshotBinding(content.digest)).toString('base64');
        return { ...source, content: { digest: content.digest, bytes: content.bytes, gzipBase64 } };
      });
    },
  };
}

function snapshotIdOfThisActivity(): string {
  const { workflowExecution, activityId } = Context.current().info;
  if (workflowExecution === undefined) throw new SandboxPlaneError('INVALID_INPUT', 'a snapshot without an id is kept only from a workflow');
  return `snap-${sha256Hex(`${workflowExecution.workflowId}/${workflowExecution.runId}/${activityId}`).slice(0, 16)}`;
}

/** What a snapshot's seal is bound to: its digest, so one content cannot be passed off as another's. */
function snapshotBinding(digest: string): string {
  return `snapshot:${digest}`;
}
