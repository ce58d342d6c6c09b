import { isCancellation, setHandler, uuid4 } from '@temporalio/workflow';
import type { PhaseNamed, RuntimeHandle } from '../domain/lifecycle-record';
import { stateOf } from '../domain/lifecycle-record';
import { restorePayloadSchema, snapshotMisfit, snapshotPayloadSchema, type SnapshotSummary } from '../domain/snapshots';
import { describeIssues } from '../domain/validation';
import { iso } from './iso-time';
import type { LifecycleContext } from './lifecycle-context';
import { readyDetails } from './phase-ready';
import { restoreUpdate, snapshotUpdate } from './sandbox-messages';
import { failureCode, refusal } from './workflow-failures';

/** A fresh snapshot id, deterministic on replay. */
function newSnapshotId(): string {
  return `snap-${uuid4().replaceAll('-', '').slice(0, 16)}`;
}

/**
 * The lifecycle's `snapshot` and `restore` updates (DESIGN §15). One at a time: a second
 * while one runs is refused INVALID_STATE, as is either while an IaC run holds a stack of
 * the sandbox (its apply would be half in the snapshot, or undone under it).
 */
export function registerSnapshotHandlers(ctx: LifecycleContext): void {
  let busy: 'snapshot' | 'restore' | undefined;

  const admit = (what: 'snapshot' | 'restore', payload: unknown) => {
    if (ctx.continuing) throw refusal('RUN_CONTINUED', `sandbox ${ctx.record.request.id} is moving to a fresh workflow run; send the ${what} again`);
    const schema = what === 'snapshot' ? snapshotPayloadSchema : restorePayloadSchema;
    const parsed = schema.safeParse(payload ?? {});
    if (!parsed.success) throw refusal('INVALID_INPUT', `invalid ${what} payload: ${describeIssues(parsed.error.issues)}`);
    const phase = ctx.judgedPhase;
    if (phase.name !== 'ready' || ctx.destroyRequest !== undefined)
      throw refusal('INVALID_STATE', `only a READY sandbox can be ${what === 'snapshot' ? 'snapshotted' : 'restored'}; this one is ${stateOf(phase)}`);
    if (busy !== undefined) throw refusal('INVALID_STATE', `sandbox ${ctx.record.request.id} is taking a ${busy} now; ask again when it is done`);
    const [held] = ctx.iacLocks.carried();
    if (held !== undefined) throw refusal('INVALID_STATE', `IaC run ${held.holder.runId} holds stack ${held.stack} of sandbox ${ctx.record.request.id}; ask again when it ends`);
  };

  /** Runs `work` as the one state change of the moment; an activity's failure reaches the caller with its code. */
  const exclusively = async <T>(what: 'snapshot' | 'restore', work: (phase: PhaseNamed<'ready'>) => Promise<T>): Promise<T> => {
    busy = what;
    try {
      return await work(ctx.phase as PhaseNamed<'ready'>);
    } catch (err) {
      if (isCancellation(err)) throw err;
      const { code, message } = failureCode(err, 'INTERNAL');
      throw refusal(code, `the ${what} of sandbox ${ctx.record.request.id} failed: ${message}`);
    } finally {
      busy = undefined;
    }
  };

  setHandler(
    snapshotUpdate,
    (payload) =>
      exclusively('snapshot', async (phase): Promise<SnapshotSummary> => {
        const { actor } = snapshotPayloadSchema.parse(payload ?? {});
        const { request } = ctx.record;
        const content = await ctx.runtime.captureSnapshot({ sandboxId: request.id, adapter: request.adapter, runtime: phase.runtime });
        const snapshotId = newSnapshotId();
        const summary = await ctx.projection.keepSnapshot({
          snapshotId,
          sandboxId: request.id,
          principal: request.principal,
          adapter: request.adapter,
          services: request.services,
          createdAt: iso(Date.now()),
          content,
        });
        await ctx.journal.audit(
          { action: 'snapshot_taken', actor: actor ?? 'api', effect: 'snapshot', reason: null, summary: { snapshotId, bytes: summary.bytes, digest: content.digest } },
          ctx.record,
        );
        return summary;
      }),
    { validator: (payload) => admit('snapshot', payload) },
  );

  setHandler(
    restoreUpdate,
    (payload) =>
      exclusively('restore', async (phase) => {
        const { snapshotId, actor } = restorePayloadSchema.parse(payload);
        const { request } = ctx.record;
        const snapshot = await ctx.projection.loadSnapshot({ snapshotId, principal: request.principal });
        const misfit = snapshotMisfit(snapshot, request);
        if (misfit !== undefined) throw refusal(misfit.code, misfit.message);
        const credentials = await ctx.runtime.restoreSnapshot({
          sandboxId: request.id,
          adapter: request.adapter,
          runtime: phase.runtime,
          content: snapshot.content,
          target: { services: request.services, from: snapshot.sandboxId, ...(phase.runtime.credentials !== undefined ? { credentials: phase.runtime.credentials } : {}) },
        });
        // Read afresh: an extension may have replaced the phase while the state was replayed.
        const current = ctx.phase as PhaseNamed<'ready'>;
        const renewed = credentials !== null && credentials.accessKeyId !== current.runtime.credentials?.accessKeyId;
        const restored: PhaseNamed<'ready'> = renewed ? { ...current, runtime: { ...current.runtime, credentials } } : current;
        const note = renewed ? ' Its credentials are new: read clientConfig from status again (the old ones are refused).' : '';
        ctx.revise(restored, `${readyDetails(restored)} Restored from snapshot ${snapshotId} (of sandbox ${snapshot.sandboxId}, taken ${snapshot.createdAt}) at ${iso(Date.now())}.${note}`);
        await ctx.journal.audit(
          {
            action: 'restored',
            actor: actor ?? 'api',
            effect: 'restored',
            reason: `from snapshot ${snapshotId}`,
            summary: { snapshotId, from: snapshot.sandboxId, digest: snapshot.content.digest, ...(renewed ? { accessKeyId: credentials.accessKeyId } : {}) },
          },
          ctx.record,
        );
        return ctx.statusForHistory();
      }),
    { validator: (payload) => admit('restore', payload) },
  );
}

/**
 * A fork's first state (`create --from-snapshot`): the snapshot replayed into the sandbox's
 * fresh emulator, which then holds credentials of its own (the source's are refused there).
 * Screening already found the snapshot the principal's and a fit; a failure here fails the
 * provisioning, whose teardown removes the container.
 */
export async function startFromSnapshot(ctx: LifecycleContext, handle: RuntimeHandle, snapshotId: string): Promise<RuntimeHandle> {
  const { request } = ctx.record;
  ctx.revise(ctx.phase, `Putting snapshot ${snapshotId} into the sandbox's new emulator at ${handle.endpoint}.`);
  const snapshot = await ctx.projection.loadSnapshot({ snapshotId, principal: request.principal });
  const misfit = snapshotMisfit(snapshot, request);
  if (misfit !== undefined) throw refusal(misfit.code, misfit.message);
  const credentials = await ctx.runtime.restoreSnapshot({
    sandboxId: request.id,
    adapter: request.adapter,
    runtime: handle,
    content: snapshot.content,
    target: { services: request.services, from: snapshot.sandboxId },
  });
  return credentials === null ? handle : { ...handle, credentials };
}
