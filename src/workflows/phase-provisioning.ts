import { condition, isCancellation, log } from '@temporalio/workflow';
import { formatDuration } from '../domain/duration';
import type { Placement } from '../domain/hosts';
import { clampToRoot, snapshotOf, type LifecycleError, type Phase, type PhaseNamed, type Resumption, type RuntimeHandle, type Screening } from '../domain/lifecycle-record';
import type { AdapterName } from '../domain/service-catalog';
import type { Operation } from './audit-journal';
import { iso } from './iso-time';
import type { DestroyRequest, LifecycleContext } from './lifecycle-context';
import { ended, withdraw } from './phase-ending';
import { readyDetails } from './lifecycle-display';
import { freshWatch, pooledText, runtimeSummary } from './phase-ready';
import { startFromSnapshot } from './lifecycle-snapshots';
import { failureCode } from './workflow-failures';

/** PROVISIONING: the row already says so, so a crash here leaves a visible sandbox for the sweep. */
export async function provisioning(ctx: LifecycleContext, phase: PhaseNamed<'provisioning'>): Promise<Phase> {
  const { request } = ctx.record;
  const { screening } = phase;
  if (ctx.destroyRequest !== undefined) return withdraw(ctx, screening, ctx.destroyRequest, 'before provisioning');
  if (!ctx.mayHoldRuntime) {
    const placement = await placeOnHost(ctx, screening);
    if ('code' in placement) {
      return ctx.enter(ended('DENIED', { screening, error: placement }), `Refused (${placement.code}): ${placement.message}. Nothing was provisioned.`, {
        action: 'placement_refused',
        actor: PLACEMENT_ACTOR,
        effect: 'deny',
        reason: placement.message,
        summary: { code: placement.code },
      });
    }
    if ('withdrawn' in placement) return withdraw(ctx, screening, placement.withdrawn, 'while waiting for a docker host');
    ctx.placed(placement);
    ctx.revise(ctx.phase, provisioningOn(placement, request.adapter));
  }
  try {
    const provisioned = await ctx.runtime.provisionSandbox({ sandboxId: request.id, adapter: request.adapter, services: request.services, labels: request.labels });
    if (phase.resume !== undefined) return await resumed(ctx, phase.resume, provisioned);
    const handle = request.fromSnapshot === undefined ? provisioned : await startFromSnapshot(ctx, provisioned, request.fromSnapshot);
    const { lineage } = screening;
    // The root's expiry as it is now: it may have been extended while this fork waited for approval or a host.
    const rootExpiresAt = lineage === undefined ? null : await ctx.projection.liveExpiry({ sandboxId: lineage.root });
    const now = Date.now();
    const { expiresAtMs, clamped } = clampToRoot(now + screening.decision.ttlSeconds * 1000, rootExpiresAt === null ? null : Date.parse(rootExpiresAt));
    const ready: PhaseNamed<'ready'> = { name: 'ready', screening, runtime: handle, expiresAtMs, expiringRecorded: false, health: freshWatch(screening, now, 0, null) };
    return await ctx.enter(ready, readyDetails(ready), {
      action: 'ready',
      actor: 'worker',
      effect: 'ready',
      reason: pooledText(request.adapter, handle),
      summary: {
        ...runtimeSummary(handle),
        expiresAt: iso(expiresAtMs),
        ...(request.fromSnapshot !== undefined ? { fromSnapshot: request.fromSnapshot } : {}),
        ...(lineage !== undefined ? { parent: lineage.parent, root: lineage.root, clampedToRoot: clamped } : {}),
      },
    });
  } catch (err) {
    if (isCancellation(err)) throw err;
    const error = failureCode(err, 'PROVISION_FAILED');
    const leftovers = await compensate(ctx);
    const teardown = leftovers.length === 0 ? 'Whatever was created was torn down.' : `Teardown left ${leftovers.join(', ')}; the cleanup sweep will find it.`;
    const kept =
      phase.resume === undefined ? '' : ` The resume failed; snapshot ${phase.resume.snapshotId} is kept (fork it: \`sandboxctl create --from-snapshot ${phase.resume.snapshotId}\`).`;
    return ctx.enter(ended('FAILED', { screening, error }), `Provisioning failed (${error.code}): ${error.message}. ${teardown}${kept}`, {
      action: 'provision_failed',
      actor: 'worker',
      effect: 'failed',
      reason: error.message,
      summary: { code: error.code, leftovers },
    });
  }
}

/**
 * A paused sandbox's new container gets its snapshot back, with the sandbox's own key; it
 * is READY again with the expiry it had (the TTL ran on while paused), maybe elsewhere.
 */
async function resumed(ctx: LifecycleContext, resume: Resumption, provisioned: RuntimeHandle): Promise<Phase> {
  const { request } = ctx.record;
  const { screening } = ctx.phase as PhaseNamed<'provisioning'>;
  const handle = await startFromSnapshot(ctx, provisioned, resume.snapshotId, resume.credentials);
  const now = Date.now();
  const ready: PhaseNamed<'ready'> = {
    name: 'ready',
    screening,
    runtime: handle,
    expiresAtMs: resume.expiresAtMs,
    expiringRecorded: resume.expiringRecorded,
    health: { ...resume.health, status: 'unknown', checkedAtMs: null, nextCheckAtMs: now + screening.settings.healthCheckIntervalSeconds * 1000 },
  };
  const moved = handle.endpoint === resume.endpoint ? '' : ` Its endpoint moved: it was ${resume.endpoint}; read clientConfig from status again.`;
  return ctx.enter(ready, `${readyDetails(ready)} Resumed from snapshot ${resume.snapshotId} at ${iso(now)}.${moved}`, {
    action: 'resumed',
    actor: 'worker',
    effect: 'ready',
    reason: [`from snapshot ${resume.snapshotId}`, pooledText(request.adapter, handle)].filter((part) => part !== null).join('; '),
    summary: { ...runtimeSummary(handle), snapshotId: resume.snapshotId, previousEndpoint: resume.endpoint, expiresAt: iso(resume.expiresAtMs) },
  });
}

/** Who places sandboxes on docker hosts, in the audit trail. */
const PLACEMENT_ACTOR = 'placement';

/** The `placed` audit row, whether screening or provisioning places the sandbox. */
export function placedOperation(adapter: AdapterName): Operation {
  return { action: 'placed', actor: PLACEMENT_ACTOR, effect: 'placed', summary: { adapter } };
}

export function provisioningOn(placement: Placement, adapter: AdapterName): string {
  return `Provisioning on docker host ${placement.hostId} through the ${adapter} adapter.`;
}

/** How often a sandbox that found no room asks again. */
const PLACEMENT_RETRY_MS = 5_000;

/**
 * Places the sandbox on a docker host (the store role chooses the least-loaded live one
 * with room and records it). No room: wait, asking again. A create that waits is queued,
 * not failed: while a host that could take it is still starting or tearing down sandboxes,
 * room is coming and the wait starts again; only once the placement wait runs out with
 * none of that going on is it a NO_CAPACITY refusal, never an overcommit. A destroy ends the wait.
 */
async function placeOnHost(ctx: LifecycleContext, screening: Screening): Promise<Placement | LifecycleError | { withdrawn: DestroyRequest }> {
  const { request } = ctx.record;
  const waitSeconds = screening.settings.placementWaitSeconds;
  let deadlineMs = Date.now() + waitSeconds * 1000;
  // One audit step for the placement, however often it is asked for.
  const operation = ctx.journal.numbered(placedOperation(request.adapter));
  for (;;) {
    let refused: string;
    try {
      const result = await ctx.projection.placeSandbox({ snapshot: snapshotOf(ctx.record), adapter: request.adapter, operation });
      if ('placement' in result) return result.placement;
      refused = result.refused;
      if (result.roomComing === true) deadlineMs = Math.max(deadlineMs, Date.now() + waitSeconds * 1000);
    } catch (err) {
      if (isCancellation(err)) throw err;
      const error = failureCode(err, 'STORE_UNAVAILABLE');
      refused = `the store role did not answer (${error.code}: ${error.message})`;
    }
    if (Date.now() >= deadlineMs) return { code: 'NO_CAPACITY', message: `${refused}; waited ${formatDuration(waitSeconds)} with no sandbox starting or ending there` };
    ctx.revise(ctx.phase, `Waiting until ${iso(deadlineMs)} for a docker host with room: ${refused}.`);
    if (await condition(() => ctx.destroyRequest !== undefined, Math.min(PLACEMENT_RETRY_MS, Math.max(1, deadlineMs - Date.now())))) {
      return { withdrawn: ctx.destroyRequest as DestroyRequest };
    }
  }
}

/** Best effort after a failed provision (the adapter's destroy is idempotent); returns what stayed. */
async function compensate(ctx: LifecycleContext): Promise<string[]> {
  const { request } = ctx.record;
  try {
    return [...(await ctx.runtime.destroySandbox({ sandboxId: request.id, adapter: request.adapter })).remaining];
  } catch (err) {
    const failure = failureCode(err, 'DESTROY_FAILED');
    log.error('compensation after a failed provision failed; the sweep will find the leftovers', { error: failure });
    return [`unknown (teardown failed: ${failure.message})`];
  }
}
