import { condition, isCancellation } from '@temporalio/workflow';
import type { Phase, PhaseNamed } from '../domain/lifecycle-record';
import { iso } from './iso-time';
import type { DestroyRequest, LifecycleContext } from './lifecycle-context';
import { takeSnapshot } from './lifecycle-snapshots';
import { ended } from './phase-ending';
import { failureCode } from './workflow-failures';

/** What a PAUSED sandbox shows: since when, what it resumes from, and until when it may. */
export function pausedDetails(phase: PhaseNamed<'paused'>): string {
  return (
    `Paused at ${iso(phase.pausedAtMs)}: no container runs; its state is snapshot ${phase.snapshotId}. Resume it (update "resume", \`sandboxctl resume ID\`) ` +
    `before it expires at ${iso(phase.expiresAtMs)}: the TTL keeps running (update "extend" moves it). A resumed sandbox may answer at another endpoint than ${phase.endpoint}.`
  );
}

/**
 * How long a pause's capture keeps the emulator serving only the plane, counted from its
 * read: until the container goes, which normally takes a second or two. Long enough to
 * outlast the store's retries of keeping the snapshot (about 90 s of backoff), since a
 * request let in before the teardown would be acknowledged and then lost; short enough that
 * a pause whose workers all die leaves its READY sandbox refusing its agent (503, Retry-After)
 * two minutes at most. A pause that fails after the capture ends the quiet at once.
 */
const PAUSE_QUIET = { seconds: 120 } as const;

/**
 * A READY sandbox pauses (DESIGN §15): a snapshot of its state, taken quiet (from the
 * capture on, only the plane is served, so no request acknowledged after it is lost), then
 * its container goes and its host's capacity is freed. A snapshot that cannot be taken or
 * kept leaves it READY and serving, and the caller hears why; a container that will not go
 * ends the sandbox through teardown.
 */
export async function pause(ctx: LifecycleContext): Promise<Phase> {
  const request = ctx.pauseRequest;
  ctx.pauseRequest = undefined;
  const phase = ctx.phase as PhaseNamed<'ready'>;
  if (request === undefined) return phase;
  const { request: sandbox } = ctx.record;
  let snapshotId: string;
  try {
    snapshotId = (await takeSnapshot(ctx, phase, request.actor, PAUSE_QUIET)).snapshotId;
  } catch (err) {
    if (isCancellation(err)) throw err;
    request.outcome = { error: failureCode(err, 'INTERNAL') };
    return phase;
  }
  let leftovers: readonly string[];
  try {
    leftovers = (await ctx.runtime.destroySandbox({ sandboxId: sandbox.id, adapter: sandbox.adapter, runtime: phase.runtime })).remaining;
  } catch (err) {
    if (isCancellation(err)) throw err;
    leftovers = [`unknown (${failureCode(err, 'DESTROY_FAILED').message})`];
  }
  if (leftovers.length > 0) {
    const reason = `the pause could not remove its container (${leftovers.join(', ')}); snapshot ${snapshotId} is kept`;
    request.outcome = { error: { code: 'DESTROY_FAILED', message: reason } };
    const current = ctx.phase as PhaseNamed<'ready'>;
    return ctx.adopt(
      { name: 'ending', screening: current.screening, runtime: current.runtime, expiresAtMs: current.expiresAtMs, health: current.health, reason, actor: request.actor },
      `Tearing down (${reason}).`,
    );
  }
  // Read afresh: an extension accepted meanwhile moved the expiry.
  const current = ctx.phase as PhaseNamed<'ready'>;
  const paused: PhaseNamed<'paused'> = {
    name: 'paused',
    screening: current.screening,
    pausedAtMs: Date.now(),
    snapshotId,
    expiresAtMs: current.expiresAtMs,
    expiringRecorded: current.expiringRecorded,
    health: current.health,
    endpoint: current.runtime.endpoint,
    ...(current.runtime.credentials !== undefined ? { credentials: current.runtime.credentials } : {}),
  };
  await ctx.enter(paused, pausedDetails(paused), {
    action: 'paused',
    actor: request.actor,
    effect: 'paused',
    reason: `state kept as snapshot ${snapshotId}; container removed`,
    summary: { snapshotId, from: { endpoint: phase.runtime.endpoint, runtimeIds: phase.runtime.runtimeIds } },
  });
  // Only once PAUSED is recorded: a cancellation before it tears down through the host it had.
  ctx.unplaced();
  request.outcome = { paused: true };
  return paused;
}

/**
 * PAUSED: lasts until `resume` (provisioned anew from its snapshot), `destroy` or the TTL,
 * which keeps running. Nothing runs, so ending needs no teardown. Returns the same phase
 * when the run should continue as new (`ctx.continuing` is then set).
 */
export async function paused(ctx: LifecycleContext): Promise<Phase> {
  for (;;) {
    const phase = ctx.phase as PhaseNamed<'paused'>;
    if (ctx.destroyRequest !== undefined) return endPaused(ctx, phase, ctx.destroyRequest);
    if (Date.now() >= phase.expiresAtMs) return endPaused(ctx, phase, { reason: 'TTL expired', actor: 'timer' });
    const resume = ctx.resumeRequest;
    if (resume !== undefined) {
      ctx.resumeRequest = undefined;
      resume.taken = true;
      const { name: _name, pausedAtMs: _pausedAtMs, screening, ...resumption } = phase;
      return ctx.enter({ name: 'provisioning', screening, resume: resumption }, `Resuming from snapshot ${phase.snapshotId}: placing it on a docker host with room.`, {
        action: 'resuming',
        actor: resume.actor,
        effect: 'resume',
        summary: { snapshotId: phase.snapshotId },
      });
    }
    if (ctx.historyIsLong()) {
      ctx.continuing = true;
      return phase;
    }
    await condition(() => ctx.destroyRequest !== undefined || ctx.resumeRequest !== undefined || ctx.phase !== phase || ctx.historyIsLong(), Math.max(1, phase.expiresAtMs - Date.now()));
  }
}

function endPaused(ctx: LifecycleContext, phase: PhaseNamed<'paused'>, by: DestroyRequest): Promise<Phase> {
  return ctx.enter(
    { ...ended('DESTROYED', { screening: phase.screening }), expiresAtMs: phase.expiresAtMs },
    `Destroyed while paused (${by.reason}): no container ran. Snapshot ${phase.snapshotId} is kept.`,
    [
      { action: 'destroying', actor: by.actor, effect: 'destroy', reason: by.reason },
      { action: 'destroyed', actor: 'worker', effect: 'destroyed', summary: { removed: [], paused: true, snapshotId: phase.snapshotId } },
    ],
  );
}
