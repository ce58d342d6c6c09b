import { CancellationScope, condition, log, setHandler } from '@temporalio/workflow';
import {
  awaitStatePayloadSchema,
  decidePayloadSchema,
  destroyPayloadSchema,
  extendPayloadSchema,
  hasReached,
} from '../domain/lifecycle-messages';
import type { Phase, PhaseNamed } from '../domain/lifecycle-record';
import { stateOf } from '../domain/lifecycle-record';
import { checkExtension } from '../domain/ttl';
import { describeIssues } from '../domain/validation';
import { runtime, type LifecycleContext, type PendingApproval } from './lifecycle-context';
import { readyDetails } from './lifecycle-phases';
import {
  approveSignal,
  awaitStateUpdate,
  decideUpdate,
  denySignal,
  destroyUpdate,
  extendUpdate,
  resourcesUpdate,
  statusQuery,
} from './sandbox-messages';
import { refusal } from './workflow-failures';

/** Waits that a cancellation of the run must not break: the run still ends, and the caller hears how. */
function untilCancellationProof<T>(wait: () => Promise<T>): Promise<T> {
  return CancellationScope.nonCancellable(wait);
}

/** Approvals are taken while the request is not yet screened or waits for them; later ones are dropped. */
function takesApprovals(phase: Phase): boolean {
  return phase.name === 'requested' || phase.name === 'awaiting_approval';
}

function parsed<T>(result: { success: true; data: T } | { success: false; error: { issues: Parameters<typeof describeIssues>[0] } }, what: string): T {
  if (!result.success) throw refusal('INVALID_INPUT', `invalid ${what} payload: ${describeIssues(result.error.issues)}`);
  return result.data;
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
    ctx.enqueue({ signal, payload });
  };
  setHandler(approveSignal, onSignal('approve'));
  setHandler(denySignal, onSignal('deny'));

  setHandler(
    awaitStateUpdate,
    async (payload) => {
      const { until, timeoutSeconds } = awaitStatePayloadSchema.parse(payload);
      const reached = () => hasReached(until, stateOf(ctx.phase));
      await untilCancellationProof(async () => {
        if (timeoutSeconds === undefined) await condition(reached);
        else await condition(reached, timeoutSeconds * 1000);
      });
      return ctx.statusForHistory();
    },
    {
      validator: (payload) => {
        const { requestDigest } = parsed(awaitStatePayloadSchema.safeParse(payload), 'awaitState');
        const ours = ctx.record.requestDigest;
        if (requestDigest !== undefined && requestDigest !== ours) {
          throw refusal('IDEMPOTENCY_CONFLICT', `sandbox ${ctx.record.request.id} exists for a different request (its digest is ${ours}, this one is ${requestDigest})`);
        }
      },
    },
  );

  setHandler(
    decideUpdate,
    async (payload) => {
      const { decision, ...rest } = decidePayloadSchema.parse(payload);
      const pending: PendingApproval = { signal: decision, payload: rest };
      if (!ctx.enqueue(pending)) throw refusal('INVALID_STATE', 'too many approvals are waiting to be judged; try again shortly');
      await untilCancellationProof(() => condition(() => pending.verdict !== undefined));
      const attempt = pending.verdict as NonNullable<PendingApproval['verdict']>;
      if (pending.tooLate === true) throw refusal('INVALID_STATE', `sandbox ${ctx.record.request.id} is ${stateOf(ctx.phase)}, not AWAITING_APPROVAL`);
      if (attempt.verdict === 'ignored') throw refusal('APPROVER_NOT_ALLOWED', `the ${decision} was ignored: ${attempt.reason}`);
      return { attempt, status: ctx.statusForHistory() };
    },
    {
      validator: (payload) => {
        parsed(decidePayloadSchema.safeParse(payload), 'decide');
        const phase = ctx.judgedPhase;
        if (!takesApprovals(phase)) throw refusal('INVALID_STATE', `sandbox ${ctx.record.request.id} is ${stateOf(phase)}, not AWAITING_APPROVAL`);
      },
    },
  );

  setHandler(
    extendUpdate,
    async (payload) => {
      const { ttlSeconds, reason, actor } = extendPayloadSchema.parse(payload);
      const phase = ctx.phase as PhaseNamed<'ready'>;
      const extended = { ...phase, expiresAtMs: phase.expiresAtMs + ttlSeconds * 1000, expiringRecorded: false };
      ctx.revise(extended, readyDetails(extended));
      await ctx.audit({
        action: 'extended',
        actor: actor ?? 'api',
        effect: 'extended',
        reason: reason ?? null,
        summary: { bySeconds: ttlSeconds, from: new Date(phase.expiresAtMs).toISOString(), to: new Date(extended.expiresAtMs).toISOString() },
      });
      return ctx.statusForHistory();
    },
    {
      validator: (payload) => {
        const { ttlSeconds } = parsed(extendPayloadSchema.safeParse(payload), 'extend');
        const phase = ctx.judgedPhase;
        if (phase.name !== 'ready' || ctx.destroyRequest !== undefined) {
          throw refusal('INVALID_STATE', `only a READY sandbox can be extended; this one is ${stateOf(phase)}`);
        }
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
      return runtime.listSandboxResources({ sandboxId: request.id, adapter: request.adapter, services: request.services });
    },
    {
      validator: () => {
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
      await untilCancellationProof(() => condition(() => ctx.phase.name === 'ended'));
      return ctx.statusForHistory();
    },
    {
      validator: (payload) => {
        parsed(destroyPayloadSchema.safeParse(payload), 'destroy');
        if (ctx.phase.name === 'ended') throw refusal('INVALID_STATE', `the sandbox is already ${stateOf(ctx.phase)}`);
      },
    },
  );
}
