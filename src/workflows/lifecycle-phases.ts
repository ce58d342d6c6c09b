import { condition, isCancellation, log, workflowInfo } from '@temporalio/workflow';
import { formatDuration } from '../domain/duration';
import { approvalPayloadSchema, MAX_PAYLOAD_CHARS, type ApprovalAttempt } from '../domain/lifecycle-messages';
import { snapshotOf, type RuntimeHandle, type Approval, type EndState, type HealthWatch, type LifecycleError, type Phase, type PhaseNamed, type Screening } from '../domain/lifecycle-record';
import type { Placement } from '../domain/hosts';
import { DEFAULT_HEALTH_CHECK_INTERVAL_SECONDS, DEFAULT_PLACEMENT_WAIT_SECONDS } from '../domain/lifecycle-settings';
import type { PolicyEffect } from '../domain/policy';
import type { AdapterName } from '../domain/service-catalog';
import type { SandboxState } from '../domain/sandbox-states';
import { describeIssues } from '../domain/validation';
import type { DestroyRequest, LifecycleContext, Operation, PendingApproval } from './lifecycle-context';
import { failureCode } from './workflow-failures';

/** What a person types into the UI's signal dialog. */
export const APPROVAL_EXAMPLE = '{"approver": "<your name>", "reason": "<why>", "code": "<the 6 digits your authenticator shows>"}';

/** The state screening leads to, by the policy's effect; the screening activity records it. */
const STATE_AFTER_SCREENING: Readonly<Record<PolicyEffect, SandboxState>> = {
  deny: 'DENIED',
  require_approval: 'AWAITING_APPROVAL',
  allow: 'PROVISIONING',
};

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function ended(state: EndState, from: { screening?: Screening | null; error?: LifecycleError | null } = {}): PhaseNamed<'ended'> {
  return { name: 'ended', state, screening: from.screening ?? null, runtime: null, expiresAtMs: null, error: from.error ?? null };
}

/** Ends a request before anything was provisioned: DESTROYED, recorded as `withdrawn`. */
function withdraw(ctx: LifecycleContext, screening: Screening | null, by: DestroyRequest, when: string): Promise<Phase> {
  return ctx.enter(ended('DESTROYED', { screening }), `Withdrawn ${when} (${by.reason}). Nothing was provisioned.`, {
    action: 'withdrawn',
    actor: by.actor,
    effect: 'destroyed',
    reason: by.reason,
  });
}

export function readyDetails(phase: PhaseNamed<'ready'>): string {
  const { restarts, lastRestartAtMs } = phase.health;
  const restarted =
    restarts > 0 && lastRestartAtMs !== null
      ? ` Its emulator died and was restarted at ${iso(lastRestartAtMs)}: everything created in the sandbox before then is lost.` +
        (phase.runtime.credentials !== undefined ? ' Its credentials are new: read clientConfig from status again (the old ones are refused).' : '')
      : '';
  return (
    `Ready at ${phase.runtime.endpoint}.${restarted} Expires at ${iso(phase.expiresAtMs)} unless extended (update "extend" with ` +
    `{"ttlSeconds": N}) or destroyed earlier (update "destroy").`
  );
}

function healthIntervalMs(screening: Screening): number {
  return (screening.settings.healthCheckIntervalSeconds ?? DEFAULT_HEALTH_CHECK_INTERVAL_SECONDS) * 1000;
}

/** The watch of a sandbox that has just become READY (again, after a restart). */
function freshWatch(screening: Screening, nowMs: number, restarts: number, lastRestartAtMs: number | null): HealthWatch {
  return { status: restarts === 0 ? 'unknown' : 'ok', checkedAtMs: restarts === 0 ? null : nowMs, nextCheckAtMs: nowMs + healthIntervalMs(screening), restarts, lastRestartAtMs };
}

/**
 * REQUESTED: recorded and screened in one projection transaction (nothing has touched a
 * runtime yet); the verdict chooses the next phase.
 */
export async function requested(ctx: LifecycleContext): Promise<Phase> {
  const { request } = ctx.record;
  let screening: Screening;
  let placement: Placement | undefined;
  try {
    ({ placement, ...screening } = await ctx.projection.screenNewRequest({
      snapshot: snapshotOf(ctx.record),
      request,
      requested: ctx.numbered({
        action: 'requested',
        actor: request.principal,
        effect: 'requested',
        reason: request.purpose ?? null,
        summary: { services: request.services, adapter: request.adapter, capability: request.capability },
      }),
      step: ctx.nextStep(),
      nextStates: STATE_AFTER_SCREENING,
      // An allowed sandbox is placed in the same transaction when a host has room; else provisioning places it.
      placement: { adapter: request.adapter, operation: ctx.numberedAhead(placedOperation(request.adapter)) },
    }));
  } catch (err) {
    if (isCancellation(err)) throw err;
    // The projection refuses a reused id (IDEMPOTENCY_CONFLICT), or stayed down past its
    // retries (STORE_UNAVAILABLE: quota cannot be judged): end here, having touched nothing.
    const error = failureCode(err, 'STORE_UNAVAILABLE');
    return ctx.adopt(ended('DENIED', { error }), `Refused before screening (${error.code}): ${error.message}. Nothing was recorded or provisioned.`);
  }
  const { decision, settings } = screening;
  if (decision.effect === 'deny') {
    const error = { code: decision.code ?? 'POLICY_DENIED', message: decision.reasons.join('; ') };
    return ctx.adopt(ended('DENIED', { screening, error }), `Denied at screening (${error.code}): ${error.message}. Nothing was provisioned.`);
  }
  if (decision.effect === 'require_approval') {
    const deadlineMs = Date.now() + settings.approvalTimeoutSeconds * 1000;
    return ctx.adopt(
      { name: 'awaiting_approval', screening, deadlineMs },
      // The Temporal UI renders this as Markdown in a small frame: code spans keep the payload
      // copyable (no tags eaten, no curly quotes), and the reasons stay in status.decision.
      `Waiting for a human's approval until ${iso(deadlineMs)} (${formatDuration(settings.approvalTimeoutSeconds)}). ` +
        `To approve, send the signal \`approve\` with the JSON payload \`${APPROVAL_EXAMPLE}\`; to refuse, send \`deny\` with the same payload. ` +
        `The approver must be on the approvers list, must not be ${request.principal}, and gives the code their authenticator shows now.`,
    );
  }
  if (placement === undefined) return ctx.adopt({ name: 'provisioning', screening }, `Provisioning through the ${request.adapter} adapter.`);
  ctx.nextStep(); // the `placed` row the screening wrote
  ctx.placed(placement);
  return ctx.adopt({ name: 'provisioning', screening }, provisioningOn(placement, request.adapter));
}

/** AWAITING_APPROVAL: judges approve/deny requests in arrival order until one counts, the request is withdrawn, or time runs out. */
export async function awaitingApproval(ctx: LifecycleContext, phase: PhaseNamed<'awaiting_approval'>): Promise<Phase> {
  const { screening } = phase;
  const timeout = formatDuration(screening.settings.approvalTimeoutSeconds);
  const handOver = () => ctx.historyIsLong();
  for (;;) {
    const remaining = phase.deadlineMs - Date.now();
    const woke = remaining > 0 && (await condition(() => ctx.inbox.length > 0 || ctx.destroyRequest !== undefined || handOver(), remaining));
    if (woke && ctx.destroyRequest === undefined && handOver()) {
      // A flood of approvals must not grow this run's history without end: the queue goes along.
      ctx.continuing = true;
      return phase;
    }
    if (!woke) {
      const error = { code: 'APPROVAL_EXPIRED' as const, message: `no approval within ${timeout}` };
      return ctx.enter(ended('EXPIRED', { screening, error }), `Expired: nobody approved within ${timeout}. Nothing was provisioned.`, {
        action: 'approval_expired',
        actor: 'timer',
        effect: 'expired',
        reason: error.message,
      });
    }
    if (ctx.destroyRequest !== undefined) return withdraw(ctx, screening, ctx.destroyRequest, 'before approval');
    const pending = ctx.inbox.shift() as PendingApproval;
    const attempt = await judge(ctx, pending);
    if (attempt.verdict === 'ignored') {
      pending.verdict = attempt;
      continue;
    }
    const approver = attempt.approver as string;
    let next: Phase;
    if (pending.signal === 'deny') {
      const error = { code: 'APPROVAL_DENIED' as const, message: `denied by ${approver}${attempt.reason ? `: ${attempt.reason}` : ''}` };
      next = await ctx.enter(ended('DENIED', { screening, error }), `Denied by ${approver}. Nothing was provisioned.`, {
        action: 'denied',
        actor: approver,
        effect: 'deny',
        reason: attempt.reason || null,
      });
    } else {
      const approval: Approval = { approver, reason: attempt.reason, at: attempt.at };
      ctx.approved(approval);
      next = await ctx.enter({ name: 'provisioning', screening }, `Approved by ${approver}; provisioning through the ${ctx.record.request.adapter} adapter.`, {
        action: 'approved',
        actor: approver,
        effect: 'allow',
        reason: attempt.reason || null,
      });
    }
    pending.verdict = attempt;
    return next;
  }
}

/** Validates one approve/deny; an invalid or unauthorized one is audited and ignored, never fatal. */
async function judge(ctx: LifecycleContext, pending: PendingApproval): Promise<ApprovalAttempt> {
  const at = new Date().toISOString();
  const ignore = async (approver: string | null, why: string, refusal?: 'APPROVAL_UNVERIFIED'): Promise<ApprovalAttempt> => {
    const attempt: ApprovalAttempt = { signal: pending.signal, approver, verdict: 'ignored', reason: why, at, ...(refusal !== undefined ? { refusal } : {}) };
    ctx.noteAttempt(attempt);
    log.warn('approval ignored', { signal: pending.signal, approver, why });
    await ctx.audit({ action: `${pending.signal}_ignored`, actor: approver ?? 'unknown', effect: 'ignored', reason: why });
    return attempt;
  };
  if (pending.oversizedChars !== undefined) return ignore(null, `the payload is ${pending.oversizedChars} characters of JSON, more than ${MAX_PAYLOAD_CHARS}; send ${APPROVAL_EXAMPLE}`);
  const parsed = approvalPayloadSchema.safeParse(pending.payload);
  if (!parsed.success) return ignore(null, `malformed payload (${describeIssues(parsed.error.issues)}); send ${APPROVAL_EXAMPLE}`);
  const { approver, reason } = parsed.data;
  if (approver === ctx.record.request.principal) return ignore(approver, `${approver} requested this sandbox and cannot ${pending.signal} it`);
  const { workflowId, runId } = workflowInfo();
  ctx.proofChecks += 1;
  let proof: Awaited<ReturnType<LifecycleContext['projection']['verifyApproval']>>;
  try {
    proof = await ctx.projection.verifyApproval({ approver, code: parsed.data.code ?? null, use: `${workflowId}/${runId}/${ctx.proofChecks}` });
  } catch (err) {
    if (isCancellation(err)) throw err;
    const error = failureCode(err, 'STORE_UNAVAILABLE');
    return ignore(approver, `the approval could not be checked (${error.code}: ${error.message}); send the ${pending.signal} again`);
  }
  if (proof.verdict === 'unlisted') return ignore(approver, `${approver} is not on the approvers list`);
  // A forged or replayed approval is audited and ignored: the sandbox goes on waiting for a real one.
  if (proof.verdict === 'unverified') return ignore(approver, `APPROVAL_UNVERIFIED: ${proof.why}`, 'APPROVAL_UNVERIFIED');
  const attempt: ApprovalAttempt = { signal: pending.signal, approver, verdict: 'accepted', reason, at };
  ctx.noteAttempt(attempt);
  return attempt;
}

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
    const handle = await ctx.runtime.provisionSandbox({ sandboxId: request.id, adapter: request.adapter, services: request.services, labels: request.labels });
    const now = Date.now();
    const expiresAtMs = now + screening.decision.ttlSeconds * 1000;
    const ready: PhaseNamed<'ready'> = { name: 'ready', screening, runtime: handle, expiresAtMs, expiringRecorded: false, health: freshWatch(screening, now, 0, null) };
    return await ctx.enter(ready, readyDetails(ready), {
      action: 'ready',
      actor: 'worker',
      effect: 'ready',
      reason: pooledText(request.adapter, handle),
      summary: { ...runtimeSummary(handle), expiresAt: iso(expiresAtMs) },
    });
  } catch (err) {
    if (isCancellation(err)) throw err;
    const error = failureCode(err, 'PROVISION_FAILED');
    const leftovers = await compensate(ctx);
    const teardown = leftovers.length === 0 ? 'Whatever was created was torn down.' : `Teardown left ${leftovers.join(', ')}; the cleanup sweep will find it.`;
    return ctx.enter(ended('FAILED', { screening, error }), `Provisioning failed (${error.code}): ${error.message}. ${teardown}`, {
      action: 'provision_failed',
      actor: 'worker',
      effect: 'failed',
      reason: error.message,
      summary: { code: error.code, leftovers },
    });
  }
}

/**
 * What the audit trail keeps of a runtime: where it answers, its containers, the warm
 * pool slot it came from, and the id of its access key (never the secret).
 */
function runtimeSummary(handle: RuntimeHandle): Record<string, unknown> {
  return {
    endpoint: handle.endpoint,
    runtimeIds: handle.runtimeIds,
    engineId: handle.engineId ?? null,
    ...(handle.credentials !== undefined ? { accessKeyId: handle.credentials.accessKeyId } : {}),
    ...(handle.warmPoolSlot !== undefined ? { warmPoolSlot: handle.warmPoolSlot } : {}),
  };
}

/** The audit reason of a runtime claimed from a warm pool (its container's sandbox-id label names the slot, not the sandbox). */
function pooledText(adapter: string, handle: RuntimeHandle): string | null {
  if (handle.warmPoolSlot === undefined) return null;
  return `container ${handle.runtimeIds.map((id) => id.slice(0, 12)).join(', ')} claimed from the ${adapter} warm pool (slot ${handle.warmPoolSlot})`;
}

/** Who places sandboxes on docker hosts, in the audit trail. */
const PLACEMENT_ACTOR = 'placement';

/** The `placed` audit row, whether screening or provisioning places the sandbox. */
function placedOperation(adapter: AdapterName): Operation {
  return { action: 'placed', actor: PLACEMENT_ACTOR, effect: 'placed', summary: { adapter } };
}

function provisioningOn(placement: Placement, adapter: AdapterName): string {
  return `Provisioning on docker host ${placement.hostId} through the ${adapter} adapter.`;
}

/** How often a sandbox that found no room asks again. */
const PLACEMENT_RETRY_MS = 5_000;

/**
 * Places the sandbox on a docker host (the store role chooses the least-loaded live one
 * with room and records it). No room: wait, asking again, until the placement wait runs
 * out — then a NO_CAPACITY refusal, never an overcommit. A destroy ends the wait.
 */
async function placeOnHost(ctx: LifecycleContext, screening: Screening): Promise<Placement | LifecycleError | { withdrawn: DestroyRequest }> {
  const { request } = ctx.record;
  const waitSeconds = screening.settings.placementWaitSeconds ?? DEFAULT_PLACEMENT_WAIT_SECONDS;
  const deadlineMs = Date.now() + waitSeconds * 1000;
  // One audit step for the placement, however often it is asked for.
  const operation = ctx.numbered(placedOperation(request.adapter));
  for (;;) {
    let refused: string;
    try {
      const result = await ctx.projection.placeSandbox({ snapshot: snapshotOf(ctx.record), adapter: request.adapter, operation });
      if ('placement' in result) return result.placement;
      refused = result.refused;
    } catch (err) {
      if (isCancellation(err)) throw err;
      const error = failureCode(err, 'STORE_UNAVAILABLE');
      refused = `the store role did not answer (${error.code}: ${error.message})`;
    }
    if (Date.now() >= deadlineMs) return { code: 'NO_CAPACITY', message: `${refused}; waited ${formatDuration(waitSeconds)}` };
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

/** Why a READY sandbox ends. */
interface Ending {
  readonly reason: string;
  readonly actor: string;
  readonly failure?: LifecycleError;
}

/** Who restarts or fails a sandbox whose emulator died. */
const HEALTH_WATCH_ACTOR = 'health-watch';

/**
 * READY: lasts until the TTL timer fires (which `extend` moves) or `destroy` is asked;
 * warns once before expiry, and watches the emulator's health. Returns the same READY
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

async function untilExpiryOrDestroy(ctx: LifecycleContext): Promise<Ending | 'hand-over'> {
  for (;;) {
    if (ctx.destroyRequest !== undefined) return ctx.destroyRequest;
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
      ctx.auditInBackground(expiring);
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
    await condition(() => ctx.destroyRequest !== undefined || ctx.phase !== phase || ctx.historyIsLong(), Math.max(1, wakeAt - now));
  }
}

/**
 * One look of the health watch. A look that gets no answer leaves the sandbox READY
 * (health `unknown`); a dead emulator is restarted once — its state is lost, and
 * `waitingFor` says so — and a second death, or a failed restart, ends the sandbox.
 */
async function lookAtEmulator(ctx: LifecycleContext): Promise<Ending | undefined> {
  const { request } = ctx.record;
  let check: { healthy: boolean; detail: string } | undefined;
  try {
    check = await ctx.briefLook.checkSandboxHealth({ sandboxId: request.id, adapter: request.adapter, runtime: (ctx.phase as PhaseNamed<'ready'>).runtime });
  } catch (err) {
    if (isCancellation(err)) throw err;
    log.warn('health check got no answer; the sandbox stays READY', { error: failureCode(err, 'INTERNAL') });
  }
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

/**
 * DESTROYING: the runtime goes first, then the audit rows; DESTROYED (FAILED when the
 * sandbox ends because something failed), or DESTROY_FAILED with the leak recorded for the sweep.
 */
export async function ending(ctx: LifecycleContext, phase: PhaseNamed<'ending'>): Promise<Phase> {
  const { request } = ctx.record;
  const { screening, runtime: handle, expiresAtMs, reason, actor, failure } = phase;
  const destroying = { action: 'destroying', actor, effect: 'destroy', reason };
  let error: LifecycleError;
  try {
    const report = await ctx.runtime.destroySandbox({ sandboxId: request.id, adapter: request.adapter, runtime: handle });
    if (report.remaining.length === 0) {
      const outcome = failure === undefined ? `Destroyed (${reason}).` : `Failed (${failure.code}): ${failure.message}. Everything was torn down.`;
      return await ctx.enter({ name: 'ended', state: failure === undefined ? 'DESTROYED' : 'FAILED', screening, runtime: handle, expiresAtMs, error: failure ?? null }, outcome, [
        destroying,
        { action: 'destroyed', actor: 'worker', effect: 'destroyed', summary: { removed: report.removed } },
      ]);
    }
    error = { code: 'DESTROY_FAILED', message: `still present after teardown: ${report.remaining.join(', ')}` };
  } catch (err) {
    if (isCancellation(err)) throw err;
    error = failureCode(err, 'DESTROY_FAILED');
  }
  return ctx.enter(
    { name: 'ended', state: 'DESTROY_FAILED', screening, runtime: handle, expiresAtMs, error },
    `Teardown failed (${error.code}): ${error.message}. The leak is recorded; the cleanup sweep retries it.`,
    [destroying, { action: 'destroy_failed', actor: 'worker', effect: 'failed', reason: error.message, summary: { code: error.code } }],
  );
}

/** Who ends a sandbox through Temporal's own cancellation (the UI's "Request Cancellation"). */
export const CANCELLATION_ACTOR = 'temporal-cancellation';

/**
 * The run was cancelled: whatever the phase, end in a correct state with nothing left
 * behind. Runs in a non-cancellable scope (the caller's), so teardown is not itself
 * cancelled; nothing provisioned yet means nothing to tear down.
 */
export async function cancelled(ctx: LifecycleContext): Promise<Phase> {
  const phase = ctx.phase;
  const reason = 'the workflow was cancelled (Temporal UI "Request Cancellation" or `temporal workflow cancel`)';
  switch (phase.name) {
    case 'ended':
      return phase;
    case 'requested':
    case 'awaiting_approval':
      return withdraw(ctx, phase.name === 'requested' ? null : phase.screening, { reason, actor: CANCELLATION_ACTOR }, 'by cancellation');
    case 'provisioning':
      // Not placed yet: nothing can have been provisioned anywhere.
      if (!ctx.mayHoldRuntime) return withdraw(ctx, phase.screening, { reason, actor: CANCELLATION_ACTOR }, 'by cancellation');
      return ending(ctx, ctx.adopt({ name: 'ending', screening: phase.screening, runtime: null, expiresAtMs: null, reason, actor: CANCELLATION_ACTOR }, `Tearing down (${reason}).`));
    case 'ready':
      return ending(ctx, ctx.adopt({ ...phase, name: 'ending', reason, actor: CANCELLATION_ACTOR }, `Tearing down (${reason}).`));
    case 'ending':
      // Teardown was under way: run it again (destroy is idempotent) under the cancellation.
      return ending(ctx, phase);
  }
}
