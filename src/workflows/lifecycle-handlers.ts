import { CancellationScope, condition, log, setHandler } from '@temporalio/workflow';
import { awaitStatePayloadSchema, decidePayloadSchema, destroyPayloadSchema, extendPayloadSchema, hasReached, MAX_PAYLOAD_CHARS, payloadChars } from '../domain/lifecycle-messages';
import type { Phase } from '../domain/lifecycle-record';
import { clampToRoot, stateOf } from '../domain/lifecycle-record';
import { checkExtension } from '../domain/ttl';
import { describeIssues } from '../domain/validation';
import type { PendingApproval } from './approval-inbox';
import type { LifecycleContext } from './lifecycle-context';
import { readyDetails } from './lifecycle-display';
import { pausedDetails } from './phase-paused';
import { approveSignal, awaitStateUpdate, checkHealthSignal, decideUpdate, denySignal, destroyUpdate, extendUpdate, resourcesUpdate, statusQuery } from './sandbox-messages';
import { refusal } from './workflow-failures';

/** Waits that a cancellation of the run must not break: the run still ends, and the caller hears how. */
function untilCancellationProof<T>(wait: () => Promise<T>): Promise<T> {
  return CancellationScope.nonCancellable(wait);
}

/** Approvals are taken while the request is not yet screened or waits for them; later ones are dropped. */
function takesApprovals(phase: Phase): boolean {
  return phase.name === 'requested' || phase.name === 'awaiting_approval';
}

interface Schema<T> {
  safeParse(payload: unknown): { success: true; data: T } | { success: false; error: { issues: Parameters<typeof describeIssues>[0] } };
}

/**
 * What every update validator checks first: the run is not handing over to a new run
 * (the caller sends again), the payload is not larger than the history should keep,
 * and it is well-formed. A refusal here is never written to the history.
 */
function admitted<T>(ctx: LifecycleContext, schema: Schema<T>, payload: unknown, what: string): T {
  if (ctx.continuing) throw refusal('RUN_CONTINUED', `sandbox ${ctx.record.request.id} is moving to a fresh workflow run; send the ${what} again`);
  const size = payloadChars(payload);
  if (size > MAX_PAYLOAD_CHARS) throw refusal('INVALID_INPUT', `the ${what} payload is ${size} characters of JSON; at most ${MAX_PAYLOAD_CHARS} are taken`);
  const result = schema.safeParse(payload);
  if (!result.success) throw refusal('INVALID_INPUT', `invalid ${what} payload: ${describeIssues(result.error.issues)}`);
  return result.data;
}

/** Thrown to an update that waited while its run handed over: the caller asks the next run. */
function continuedRefusal(ctx: LifecycleContext) {
  return refusal('RUN_CONTINUED', `sandbox ${ctx.record.request.id} moved to a fresh workflow run while this update waited; send it again`);
}

/**
 * The lifecycle's query, signals and updates (DESIGN §11). Validators refuse with a
 * taxonomy code before anything is written to history; handlers act through the
 * context, so every change is recorded like any other transition.
 */
export function registerLifecycleHandlers(ctx: LifecycleContext): void {
  setHandler(statusQuery, () => ctx.status());

  const onSignal = (signal: 'approve' | 'deny') => (payload: unknown) => {
    if (!takesApprovals(ctx.phase)) {
      log.info('approval signal dropped: not awaiting approval', { signal, state: stateOf(ctx.phase) });
      return;
    }
    // An oversized payload is judged (and refused) by its size alone: it is never kept.
    const size = payloadChars(payload);
    ctx.inbox.enqueue(size > MAX_PAYLOAD_CHARS ? { signal, payload: null, oversizedChars: size } : { signal, payload });
  };
  setHandler(approveSignal, onSignal('approve'));
  setHandler(denySignal, onSignal('deny'));

  // The sweep saw the container and the row disagree: the health watch looks now rather
  // than at its next turn. Changing the phase wakes the READY loop.
  setHandler(checkHealthSignal, () => {
    const phase = ctx.phase;
    if (phase.name !== 'ready' || ctx.moving) return;
    ctx.revise({ ...phase, health: { ...phase.health, nextCheckAtMs: Math.min(phase.health.nextCheckAtMs, Date.now()) } });
  });

  setHandler(
    awaitStateUpdate,
    async (payload) => {
      const { until, timeoutSeconds } = awaitStatePayloadSchema.parse(payload);
      const reached = () => hasReached(until, stateOf(ctx.phase));
      const done = () => reached() || ctx.continuing;
      await untilCancellationProof(async () => {
        if (timeoutSeconds === undefined) await condition(done);
        else await condition(done, timeoutSeconds * 1000);
      });
      if (!reached() && ctx.continuing) throw continuedRefusal(ctx);
      return ctx.statusForHistory();
    },
    {
      validator: (payload) => {
        const { requestDigest } = admitted(ctx, awaitStatePayloadSchema, payload, 'awaitState');
        const ours = ctx.record.requestDigest;
        if (requestDigest !== undefined && requestDigest !== ours) {
          throw refusal('IDEMPOTENCY_CONFLICT', `sandbox ${ctx.record.request.id} exists for a different request`);
        }
      },
    },
  );

  setHandler(
    decideUpdate,
    async (payload) => {
      const { decision, ...rest } = decidePayloadSchema.parse(payload);
      const pending: PendingApproval = { signal: decision, payload: rest, fromUpdate: true };
      if (!ctx.inbox.enqueue(pending)) throw refusal('INVALID_STATE', 'too many approvals are waiting to be judged; try again shortly');
      await untilCancellationProof(() => condition(() => pending.verdict !== undefined || pending.continued === true));
      if (pending.verdict === undefined) throw continuedRefusal(ctx);
      const attempt = pending.verdict;
      if (pending.tooLate === true) throw refusal('INVALID_STATE', `sandbox ${ctx.record.request.id} is ${stateOf(ctx.phase)}, not AWAITING_APPROVAL`);
      if (attempt.verdict === 'ignored') throw refusal(attempt.refusal ?? 'APPROVER_NOT_ALLOWED', `the ${decision} was ignored: ${attempt.reason}`);
      return { attempt, status: ctx.statusForHistory() };
    },
    {
      validator: (payload) => {
        admitted(ctx, decidePayloadSchema, payload, 'decide');
        const phase = ctx.judgedPhase;
        if (!takesApprovals(phase)) throw refusal('INVALID_STATE', `sandbox ${ctx.record.request.id} is ${stateOf(phase)}, not AWAITING_APPROVAL`);
      },
    },
  );

  setHandler(
    extendUpdate,
    async (payload) => {
      const { ttlSeconds, reason, actor } = extendPayloadSchema.parse(payload);
      // Accepted while the move to READY was being recorded: extend the READY phase, not the one before it.
      await untilCancellationProof(() => condition(() => !ctx.moving));
      ctx.extendLimit.note(Date.now());
      // A fork never outlives its root (DESIGN §15): its root's expiry now, while the root lives.
      const { lineage } = ctx.phase.name === 'ready' || ctx.phase.name === 'paused' ? ctx.phase.screening : {};
      const rootExpiresAt = lineage === undefined ? null : await ctx.projection.liveExpiry({ sandboxId: lineage.root });
      const phase = ctx.phase;
      if (phase.name !== 'ready' && phase.name !== 'paused') throw refusal('INVALID_STATE', `only a READY or PAUSED sandbox can be extended; this one is ${stateOf(phase)}`);
      const { expiresAtMs, clamped } = clampToRoot(phase.expiresAtMs + ttlSeconds * 1000, rootExpiresAt === null ? null : Date.parse(rootExpiresAt));
      const movedTo = Math.max(phase.expiresAtMs, expiresAtMs);
      const expiry = { expiresAtMs: movedTo, expiringRecorded: movedTo === phase.expiresAtMs ? phase.expiringRecorded : false };
      if (phase.name === 'ready') ctx.revise({ ...phase, ...expiry }, readyDetails({ ...phase, ...expiry }));
      else ctx.revise({ ...phase, ...expiry }, pausedDetails({ ...phase, ...expiry }));
      const summary = {
        bySeconds: ttlSeconds,
        from: new Date(phase.expiresAtMs).toISOString(),
        to: new Date(expiry.expiresAtMs).toISOString(),
        ...(clamped && lineage !== undefined ? { clampedToRoot: lineage.root } : {}),
      };
      await ctx.journal.audit({ action: 'extended', actor: actor ?? 'api', effect: 'extended', reason: reason ?? null, summary }, ctx.record);
      return ctx.statusForHistory();
    },
    {
      validator: (payload) => {
        const { ttlSeconds } = admitted(ctx, extendPayloadSchema, payload, 'extend');
        const phase = ctx.judgedPhase;
        // A paused sandbox's TTL keeps running (DESIGN §15), so it can be extended too.
        if ((phase.name !== 'ready' && phase.name !== 'paused') || ctx.destroyRequest !== undefined) {
          throw refusal('INVALID_STATE', `only a READY or PAUSED sandbox can be extended; this one is ${stateOf(phase)}`);
        }
        const limited = ctx.extendLimit.refusal(Date.now());
        if (limited !== undefined) throw refusal('RATE_LIMITED', limited);
        const verdict = checkExtension({
          nowMs: Date.now(),
          createdAtMs: ctx.record.createdAtMs,
          expiresAtMs: phase.expiresAtMs,
          extendBySeconds: ttlSeconds,
          maxTtlSeconds: phase.screening.decision.maxTtlSeconds,
          maxLifetimeSeconds: phase.screening.settings.maxLifetimeSeconds,
        });
        if (!verdict.ok) throw refusal('TTL_EXCEEDS_CEILING', verdict.reason);
      },
    },
  );

  setHandler(
    resourcesUpdate,
    () => {
      const { request } = ctx.record;
      const phase = ctx.phase;
      const recorded = phase.name === 'ready' ? phase.runtime : null;
      return ctx.briefLook.listSandboxResources({ sandboxId: request.id, adapter: request.adapter, services: request.services, runtime: recorded });
    },
    {
      validator: () => {
        if (ctx.continuing) throw continuedRefusal(ctx);
        const phase = ctx.judgedPhase;
        if (phase.name !== 'ready') throw refusal('INVALID_STATE', `only a READY sandbox can list resources; this one is ${stateOf(phase)}`);
      },
    },
  );

  setHandler(
    destroyUpdate,
    async (payload) => {
      const { reason, actor } = destroyPayloadSchema.parse(payload);
      ctx.destroyRequest ??= { reason: reason ?? 'destroy requested', actor: actor ?? 'api' };
      await untilCancellationProof(() => condition(() => ctx.phase.name === 'ended' || ctx.continuing));
      // The request went along to the next run (it carries it); the caller waits there.
      if (ctx.phase.name !== 'ended') throw continuedRefusal(ctx);
      return ctx.statusForHistory();
    },
    {
      validator: (payload) => {
        admitted(ctx, destroyPayloadSchema, payload, 'destroy');
        if (ctx.phase.name === 'ended') throw refusal('INVALID_STATE', `the sandbox is already ${stateOf(ctx.phase)}`);
      },
    },
  );
}
