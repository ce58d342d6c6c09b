import { condition, isCancellation, log } from '@temporalio/workflow';
import type { HealthWatch, LifecycleError, Phase, PhaseNamed, RuntimeHandle, Screening } from '../domain/lifecycle-record';
import type { ContainerUsage } from '../domain/usage';
import { iso } from './iso-time';
import { readyDetails } from './lifecycle-display';
import type { LifecycleContext } from './lifecycle-context';
import { pause } from './phase-paused';
import { failureCode } from './workflow-failures';

function healthIntervalMs(screening: Screening): number {
  return screening.settings.healthCheckIntervalSeconds * 1000;
}

/** The watch of a sandbox that has just become READY (again, after a restart). */
export function freshWatch(screening: Screening, nowMs: number, restarts: number, lastRestartAtMs: number | null): HealthWatch {
  return { status: restarts === 0 ? 'unknown' : 'ok', checkedAtMs: restarts === 0 ? null : nowMs, nextCheckAtMs: nowMs + healthIntervalMs(screening), restarts, lastRestartAtMs };
}

/**
 * What the audit trail keeps of a runtime: where it answers, its containers, the warm
 * pool slot it came from, and the id of its access key (never the secret).
 */
export function runtimeSummary(handle: RuntimeHandle): Record<string, unknown> {
  return {
    endpoint: handle.endpoint,
    runtimeIds: handle.runtimeIds,
    engineId: handle.engineId ?? null,
    ...(handle.credentials !== undefined ? { accessKeyId: handle.credentials.accessKeyId } : {}),
    ...(handle.warmPoolSlot !== undefined ? { warmPoolSlot: handle.warmPoolSlot } : {}),
  };
}

/** The audit reason of a runtime claimed from a warm pool (its container's sandbox-id label names the slot, not the sandbox). */
export function pooledText(adapter: string, handle: RuntimeHandle): string | null {
  if (handle.warmPoolSlot === undefined) return null;
  return `container ${handle.runtimeIds.map((id) => id.slice(0, 12)).join(', ')} claimed from the ${adapter} warm pool (slot ${handle.warmPoolSlot})`;
}

/** Why a READY sandbox ends. */
interface Ending {
  readonly reason: string;
  readonly actor: string;
  readonly failure?: LifecycleError;
}

/** Who restarts or fails a sandbox whose emulator died. */
const HEALTH_WATCH_ACTOR = 'health-watch';

/**
 * READY: lasts until the TTL timer fires (which `extend` moves), `destroy` is asked or it
 * pauses (phase-paused.ts); warns once before expiry, and watches the emulator's health. Returns the same READY
 * phase when the run should continue as new (`ctx.continuing` is then set).
 */
export async function ready(ctx: LifecycleContext): Promise<Phase> {
  let ending: Ending;
  try {
    const outcome = await untilExpiryOrDestroy(ctx);
    if (outcome === 'hand-over') {
      ctx.continuing = true;
      return ctx.phase;
    }
    if (outcome === 'pause') return await pause(ctx);
    ending = outcome;
  } catch (err) {
    if (isCancellation(err)) throw err;
    // Something provisioned must never outlive its workflow: tear down whatever went wrong.
    ending = { reason: `unexpected failure while READY: ${failureCode(err, 'INTERNAL').message}`, actor: 'worker' };
  }
  const phase = ctx.phase as PhaseNamed<'ready'>;
  // Shown, not yet recorded: teardown never waits on the projection (DESIGN §2).
  return ctx.adopt(
    { name: 'ending', screening: phase.screening, runtime: phase.runtime, expiresAtMs: phase.expiresAtMs, health: phase.health, ...ending },
    `Tearing down (${ending.reason}).`,
  );
}

async function untilExpiryOrDestroy(ctx: LifecycleContext): Promise<Ending | 'hand-over' | 'pause'> {
  for (;;) {
    if (ctx.destroyRequest !== undefined) return ctx.destroyRequest;
    if (ctx.pauseRequest !== undefined) return 'pause';
    // Read afresh each time: `extend` replaces the phase with a later expiry.
    const phase = ctx.phase as PhaseNamed<'ready'>;
    const now = Date.now();
    const expiry = phase.expiresAtMs;
    if (now >= expiry) return { reason: 'TTL expired', actor: 'timer' };
    const warnAt = expiry - phase.screening.settings.expiryWarningSeconds * 1000;
    if (!phase.expiringRecorded && now >= warnAt) {
      const warned = { ...phase, expiringRecorded: true };
      ctx.revise(warned, `${readyDetails(warned)} Expiring: ${Math.round((expiry - now) / 1000)} s left.`);
      const expiring = { action: 'expiring', actor: 'timer', effect: 'warning', reason: `expires at ${iso(expiry)}`, summary: { expiresAt: iso(expiry) } };
      // A slow projection must not hold back the expiry itself.
      ctx.journal.inBackground(expiring, ctx.record);
      continue;
    }
    if (ctx.historyIsLong()) return 'hand-over';
    if (now >= phase.health.nextCheckAtMs) {
      const death = await lookAtEmulator(ctx);
      if (death !== undefined) return death;
      continue;
    }
    const nextEvent = phase.expiringRecorded ? expiry : Math.min(warnAt, expiry);
    const wakeAt = Math.min(nextEvent, phase.health.nextCheckAtMs);
    await condition(() => ctx.destroyRequest !== undefined || ctx.pauseRequest !== undefined || ctx.phase !== phase || ctx.historyIsLong(), Math.max(1, wakeAt - now));
  }
}

/**
 * One look of the health watch. A look the host's worker does not answer leaves the
 * sandbox READY (health `unknown`: not knowing is not a death); an emulator that is gone,
 * paused, or runs without answering (looked at three times) is dead, and is restarted once — its state is lost, and
 * `waitingFor` says so — and a second death, or a failed restart, ends the sandbox.
 */
async function lookAtEmulator(ctx: LifecycleContext): Promise<Ending | undefined> {
  const { request } = ctx.record;
  let check: { healthy: boolean; detail: string; usage?: readonly ContainerUsage[] } | undefined;
  try {
    check = await ctx.briefLook.checkSandboxHealth({ sandboxId: request.id, adapter: request.adapter, runtime: (ctx.phase as PhaseNamed<'ready'>).runtime });
  } catch (err) {
    if (isCancellation(err)) throw err;
    log.warn('health check got no answer; the sandbox stays READY', { error: failureCode(err, 'INTERNAL') });
  }
  // The slow look doubles as the slow usage read (DESIGN §19): no polling of its own.
  if (check?.usage !== undefined && check.usage.length > 0) ctx.usage.report('reading', check.usage);
  const now = Date.now();
  // Read after the look: an extension may have replaced the phase meanwhile.
  const phase = ctx.phase as PhaseNamed<'ready'>;
  const next = now + healthIntervalMs(phase.screening);
  if (check === undefined || check.healthy || ctx.destroyRequest !== undefined) {
    const status = check === undefined ? 'unknown' : check.healthy ? 'ok' : 'unhealthy';
    ctx.revise({ ...phase, health: { ...phase.health, status, checkedAtMs: now, nextCheckAtMs: next } });
    return undefined;
  }
  const died = `the emulator stopped serving (${check.detail})`;
  if (phase.health.restarts >= 1) {
    return { reason: `${died} again after one restart`, actor: HEALTH_WATCH_ACTOR, failure: { code: 'EMULATOR_DIED', message: `${died} again after one restart` } };
  }
  ctx.revise(
    { ...phase, health: { ...phase.health, status: 'unhealthy', checkedAtMs: now, nextCheckAtMs: next } },
    `The emulator at ${phase.runtime.endpoint} stopped serving at ${iso(now)} (${check.detail}); restarting it once. Everything created in the sandbox is lost.`,
  );
  return restartEmulator(ctx, died);
}

/** Replaces a dead emulator with a fresh one (a new container, maybe a new endpoint); `undefined` when READY again. */
async function restartEmulator(ctx: LifecycleContext, died: string): Promise<Ending | undefined> {
  const { request } = ctx.record;
  const phase = ctx.phase as PhaseNamed<'ready'>;
  try {
    const report = await ctx.runtime.destroySandbox({ sandboxId: request.id, adapter: request.adapter, runtime: phase.runtime });
    // What the dead container used until its last read counts; the new one counts from 0.
    if (report.usage !== undefined && report.usage.length > 0) ctx.usage.report('reading', report.usage);
    if (report.remaining.length > 0) throw new Error(`the dead emulator could not be removed: ${report.remaining.join(', ')}`);
    const handle = await ctx.runtime.provisionSandbox({ sandboxId: request.id, adapter: request.adapter, services: request.services, labels: request.labels });
    const now = Date.now();
    const current = ctx.phase as PhaseNamed<'ready'>;
    const restarted: PhaseNamed<'ready'> = { ...current, runtime: handle, health: freshWatch(current.screening, now, current.health.restarts + 1, now) };
    await ctx.enter(restarted, readyDetails(restarted), {
      action: 'emulator_restarted',
      actor: HEALTH_WATCH_ACTOR,
      effect: 'restarted',
      reason: [`${died}; restarted with empty state`, pooledText(request.adapter, handle)].filter((part) => part !== null).join('; '),
      summary: {
        from: { endpoint: phase.runtime.endpoint, runtimeIds: phase.runtime.runtimeIds },
        ...runtimeSummary(handle),
      },
    });
    return undefined;
  } catch (err) {
    if (isCancellation(err)) throw err;
    const message = `${died} and could not be restarted: ${failureCode(err, 'PROVISION_FAILED').message}`;
    return { reason: message, actor: HEALTH_WATCH_ACTOR, failure: { code: 'EMULATOR_DIED', message } };
  }
}
