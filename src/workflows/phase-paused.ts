import { condition, isCancellation } from '@temporalio/workflow';
import type { Phase, PhaseNamed } from '../domain/lifecycle-record';
import { iso } from './iso-time';
import type { DestroyRequest, LifecycleContext, PauseRequest } from './lifecycle-context';
import { endQuiet, takeSnapshot } from './lifecycle-snapshots';
import { ended } from './phase-ending';
import { failureCode } from './workflow-failures';
import type { ContainerUsage } from '../domain/usage';
import { usageSummary } from './usage-meter';

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
 * outlast the store's whole retry budget for keeping the snapshot (eight attempts, about
 * five minutes), since a request let in before the teardown would be acknowledged and then
 * lost; a pause that fails after the capture ends the quiet at once, and one whose workers
 * all die leaves its READY sandbox refusing its agent (503, Retry-After) ten minutes at most.
 */
const PAUSE_QUIET = { seconds: 600 } as const;

/** What the teardown may still need of the quiet after the keep: the container's stop (its grace) and the activity's dispatch. */
const TEARDOWN_MARGIN_MS = 60_000;

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
  let quietLease: string | undefined;
  // Before the capture starts, so never later than the quiet's own start: what it measures errs on the safe side.
  const quietFrom = Date.now();
  try {
    ({ snapshotId, quietLease } = await takeSnapshot(ctx, phase, request.actor, PAUSE_QUIET));
  } catch (err) {
    if (isCancellation(err)) throw err;
    request.outcome = { error: failureCode(err, 'INTERNAL') };
    return phase;
  }
  const took = Date.now() - quietFrom;
  if (took > PAUSE_QUIET.seconds * 1000 - TEARDOWN_MARGIN_MS) return quietLapsed(ctx, request, { snapshotId, quietLease, tookMs: took });
  let leftovers: readonly string[];
  let usage: readonly ContainerUsage[] | undefined;
  try {
    const report = await ctx.runtime.destroySandbox({ sandboxId: sandbox.id, adapter: sandbox.adapter, runtime: phase.runtime });
    leftovers = report.remaining;
    usage = report.usage;
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
    // No container while PAUSED: its time does not count (DESIGN §19); the store ends the live stretch with these reads.
    summary: { snapshotId, from: { endpoint: phase.runtime.endpoint, runtimeIds: phase.runtime.runtimeIds }, ...usageSummary(usage) },
  });
  // Only once PAUSED is recorded: a cancellation before it tears down through the host it had.
  ctx.unplaced();
  request.outcome = { paused: true };
  return paused;
}

/**
 * A pause whose snapshot took so long to keep (a store away for minutes) that its quiet may
 * have lapsed before the teardown: requests acknowledged since may be missing from the
 * snapshot, so the container stays, the snapshot goes, and the caller hears why. READY.
 */
async function quietLapsed(ctx: LifecycleContext, request: PauseRequest, taken: { snapshotId: string; quietLease: string | undefined; tookMs: number }): Promise<Phase> {
  const { request: sandbox } = ctx.record;
  const phase = ctx.phase as PhaseNamed<'ready'>;
  const { snapshotId, quietLease, tookMs } = taken;
  const why = `keeping its snapshot took ${Math.round(tookMs / 1000)} s, past the ${PAUSE_QUIET.seconds} s the emulator served only the plane, so the snapshot may miss requests acknowledged meanwhile`;
  if (quietLease !== undefined) await endQuiet(ctx, { sandboxId: sandbox.id, adapter: sandbox.adapter, runtime: phase.runtime, lease: quietLease });
  await ctx.projection.discardSnapshot({ snapshotId, reason: `the pause did not go ahead: ${why}` });
  request.outcome = { error: { code: 'STORE_UNAVAILABLE', message: `the pause did not go ahead: ${why}; the sandbox stays READY, pause it again` } };
  return phase;
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
