import { CancellationScope, condition, isCancellation, log, setHandler } from '@temporalio/workflow';
import type { SandboxCredentials } from '../domain/client-config';
import type { PhaseNamed, RuntimeHandle } from '../domain/lifecycle-record';
import { stateOf } from '../domain/lifecycle-record';
import { actorPayloadSchema, restorePayloadSchema, snapshotMisfit, type SnapshotSummary, type StoredSnapshot } from '../domain/snapshots';
import { describeIssues } from '../domain/validation';
import { iso } from './iso-time';
import type { LifecycleContext, PauseRequest } from './lifecycle-context';
import { readyDetails } from './lifecycle-display';
import { pauseUpdate, restoreUpdate, resumeUpdate, snapshotUpdate } from './sandbox-messages';
import { failureCode, refusal } from './workflow-failures';

/**
 * The lifecycle's `snapshot`, `restore`, `pause` and `resume` updates (DESIGN §15). One at
 * a time: a second while one runs is refused INVALID_STATE, as is any while an IaC run
 * holds a stack of the sandbox (its apply would be half in the snapshot, or undone under it).
 */
export function registerSnapshotHandlers(ctx: LifecycleContext): void {
  const id = ctx.record.request.id;

  const wellFormed = (what: string, payload: unknown) => {
    if (ctx.continuing) throw refusal('RUN_CONTINUED', `sandbox ${id} is moving to a fresh workflow run; send the ${what} again`);
    const parsed = (what === 'restore' ? restorePayloadSchema : actorPayloadSchema).safeParse(payload ?? {});
    if (!parsed.success) throw refusal('INVALID_INPUT', `invalid ${what} payload: ${describeIssues(parsed.error.issues)}`);
  };

  const admit = (what: 'snapshot' | 'restore' | 'pause', payload: unknown) => {
    wellFormed(what, payload);
    const phase = ctx.judgedPhase;
    const verb = { snapshot: 'snapshotted', restore: 'restored', pause: 'paused' }[what];
    if (phase.name !== 'ready' || ctx.destroyRequest !== undefined) throw refusal('INVALID_STATE', `only a READY sandbox can be ${verb}; this one is ${stateOf(phase)}`);
    if (ctx.stateChange !== undefined) throw refusal('INVALID_STATE', `sandbox ${id} is busy with a ${ctx.stateChange} now; ask again when it is done`);
    const [held] = ctx.iacLocks.carried();
    if (held !== undefined) throw refusal('INVALID_STATE', `IaC run ${held.holder.runId} holds stack ${held.stack} of sandbox ${id}; ask again when it ends`);
  };

  /**
   * Runs `work` as the one state change of the moment, once the sandbox is READY in fact (an
   * update accepted while READY was being recorded waits for it); an activity's failure
   * reaches the caller with its code.
   */
  const exclusively = async <T>(what: 'snapshot' | 'restore', work: (phase: PhaseNamed<'ready'>) => Promise<T>): Promise<T> => {
    ctx.stateChange = what;
    try {
      await CancellationScope.nonCancellable(() => condition(() => !ctx.moving));
      const phase = ctx.phase;
      if (phase.name !== 'ready' || ctx.destroyRequest !== undefined) throw refusal('INVALID_STATE', `sandbox ${id} is ${stateOf(phase)}, no longer READY`);
      return await work(phase);
    } catch (err) {
      if (isCancellation(err)) throw err;
      const { code, message } = failureCode(err, 'INTERNAL');
      throw refusal(code, `the ${what} of sandbox ${id} failed: ${message}`);
    } finally {
      ctx.stateChange = undefined;
    }
  };

  setHandler(snapshotUpdate, (payload) => exclusively('snapshot', (phase) => takeSnapshot(ctx, phase, actorPayloadSchema.parse(payload ?? {}).actor ?? 'api')), {
    validator: (payload) => admit('snapshot', payload),
  });

  setHandler(
    restoreUpdate,
    (payload) =>
      exclusively('restore', async (phase) => {
        const { snapshotId, actor } = restorePayloadSchema.parse(payload);
        const { snapshot, credentials } = await putInto(ctx, phase.runtime, snapshotId);
        // Read afresh: an extension may have replaced the phase while the state was replayed, or the sandbox ended.
        const current = ctx.phase;
        if (current.name !== 'ready' || current.runtime.runtimeIds[0] !== phase.runtime.runtimeIds[0]) {
          throw refusal(
            'INVALID_STATE',
            `sandbox ${id} is ${stateOf(current)} with ${current.name === 'ready' ? 'another emulator' : 'no emulator'} now; the snapshot went into the one it had`,
          );
        }
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

  // The READY loop pauses (phase-paused.ts): the handler asks, and waits to hear how it went.
  setHandler(
    pauseUpdate,
    async (payload) => {
      const request: PauseRequest = { actor: actorPayloadSchema.parse(payload ?? {}).actor ?? 'api' };
      ctx.stateChange = 'pause';
      ctx.pauseRequest = request;
      try {
        await CancellationScope.nonCancellable(() => condition(() => request.outcome !== undefined || ctx.phase.name === 'ended' || ctx.continuing));
      } finally {
        ctx.stateChange = undefined;
      }
      const { outcome } = request;
      if (outcome === undefined) {
        if (ctx.continuing) throw refusal('RUN_CONTINUED', `sandbox ${id} moved to a fresh workflow run while this pause waited; send it again`);
        throw refusal('INVALID_STATE', `sandbox ${id} ended before it paused`);
      }
      if ('error' in outcome) throw refusal(outcome.error.code, `the pause of sandbox ${id} failed: ${outcome.error.message}`);
      return ctx.statusForHistory();
    },
    { validator: (payload) => admit('pause', payload) },
  );

  // The PAUSED loop resumes through provisioning (phase-paused.ts); the caller hears once it is READY again.
  setHandler(
    resumeUpdate,
    async (payload) => {
      // One request however many ask: each waits until the PAUSED loop took it and it settled.
      const request = (ctx.resumeRequest ??= { actor: actorPayloadSchema.parse(payload ?? {}).actor ?? 'api' });
      const settled = () => (request.taken === true && (ctx.phase.name === 'ready' || ctx.phase.name === 'ended')) || (request.taken !== true && ctx.continuing);
      await CancellationScope.nonCancellable(() => condition(settled));
      const phase = ctx.phase;
      if (phase.name === 'ready') return ctx.statusForHistory();
      if (phase.name === 'ended')
        throw refusal(phase.error?.code ?? 'INVALID_STATE', `sandbox ${id} did not resume: it is ${phase.state}${phase.error === null ? '' : ` (${phase.error.message})`}`);
      throw refusal('RUN_CONTINUED', `sandbox ${id} moved to a fresh workflow run while this resume waited; send it again`);
    },
    {
      validator: (payload) => {
        wellFormed('resume', payload);
        const phase = ctx.judgedPhase;
        if (phase.name !== 'paused' || ctx.destroyRequest !== undefined) throw refusal('INVALID_STATE', `only a PAUSED sandbox can be resumed; this one is ${stateOf(phase)}`);
      },
    },
  );
}

/**
 * Takes and keeps a snapshot of the READY sandbox's state, recorded in its audit trail.
 * With `hold` (a pause), the emulator serves only the plane from the capture on, for the
 * caller to remove the container in (its lease comes back as `quietLease`); a snapshot the
 * store refuses ends that quiet at once.
 */
export async function takeSnapshot(
  ctx: LifecycleContext,
  phase: PhaseNamed<'ready'>,
  actor: string,
  hold?: { readonly seconds: number },
): Promise<SnapshotSummary & { readonly quietLease?: string }> {
  const { request } = ctx.record;
  const place = { sandboxId: request.id, adapter: request.adapter, runtime: phase.runtime };
  const { quietLease, ...content } = await ctx.runtime.captureSnapshot({ ...place, ...(hold !== undefined ? { hold } : {}) });
  let summary: SnapshotSummary;
  try {
    // The store's activity names it: the workflow's random numbers are not replay-stable here (keepSnapshot says why).
    summary = await ctx.projection.keepSnapshot({
      sandboxId: request.id,
      principal: request.principal,
      adapter: request.adapter,
      services: request.services,
      createdAt: iso(Date.now()),
      content,
    });
  } catch (err) {
    if (quietLease !== undefined && !isCancellation(err)) await endQuiet(ctx, { ...place, lease: quietLease });
    throw err;
  }
  await ctx.journal.audit(
    {
      action: 'snapshot_taken',
      actor,
      effect: 'snapshot',
      reason: `${summary.snapshotId}, ${summary.bytes} bytes`,
      summary: { snapshotId: summary.snapshotId, bytes: summary.bytes, digest: content.digest },
    },
    ctx.record,
  );
  return quietLease === undefined ? summary : { ...summary, quietLease };
}

/**
 * Ends a capture's quiet on a sandbox that stays READY, so its agent is served again now
 * rather than when the lease lapses. A brief look: should it fail, the lapse still comes,
 * and the caller's own failure is the one to report.
 */
export async function endQuiet(ctx: LifecycleContext, input: Parameters<LifecycleContext['briefLook']['endQuiet']>[0]): Promise<void> {
  try {
    await ctx.briefLook.endQuiet(input);
  } catch (err) {
    if (isCancellation(err)) throw err;
    log.warn('the quiet of a capture could not be ended; it lapses with its lease', { code: failureCode(err, 'INTERNAL').code });
  }
}

/**
 * A fork's first state (`create --from-snapshot`): the snapshot replayed into the sandbox's
 * fresh emulator, which then holds credentials of its own (the source's are refused there).
 * A resume passes the sandbox's own `credentials`, which its snapshot mints again.
 * Screening already found the snapshot the principal's and a fit; a failure here fails the
 * provisioning, whose teardown removes the container.
 */
export async function startFromSnapshot(ctx: LifecycleContext, handle: RuntimeHandle, snapshotId: string, credentials?: SandboxCredentials): Promise<RuntimeHandle> {
  ctx.revise(ctx.phase, `Putting snapshot ${snapshotId} into the sandbox's new emulator at ${handle.endpoint}.`);
  const restored = (await putInto(ctx, { ...handle, ...(credentials !== undefined ? { credentials } : {}) }, snapshotId)).credentials;
  return restored === null ? handle : { ...handle, credentials: restored };
}

/**
 * Puts the principal's snapshot into the sandbox's emulator `runtime` (whose credentials,
 * when it has them, the sandbox keeps if the state holds them): NOT_FOUND for another's
 * snapshot, refused when it does not fit the sandbox. The credentials afterwards, or `null`
 * when unchanged.
 */
async function putInto(ctx: LifecycleContext, runtime: RuntimeHandle, snapshotId: string): Promise<{ snapshot: StoredSnapshot; credentials: SandboxCredentials | null }> {
  const { request } = ctx.record;
  const snapshot = await ctx.projection.loadSnapshot({ snapshotId, principal: request.principal });
  const misfit = snapshotMisfit(snapshot, request);
  if (misfit !== undefined) throw refusal(misfit.code, misfit.message);
  const credentials = await ctx.runtime.restoreSnapshot({
    sandboxId: request.id,
    adapter: request.adapter,
    runtime,
    content: snapshot.content,
    target: { services: request.services, from: snapshot.sandboxId, ...(runtime.credentials !== undefined ? { credentials: runtime.credentials } : {}) },
  });
  return { snapshot, credentials };
}
