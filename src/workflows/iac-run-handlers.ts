import { CancellationScope, condition, setHandler } from '@temporalio/workflow';
import { iacAwaitPayloadSchema, iacDecidePayloadSchema, iacHasReached } from '../domain/iac/iac-run';
import { MAX_PAYLOAD_CHARS, payloadChars, type ApprovalAttempt } from '../domain/lifecycle-messages';
import { describeIssues } from '../domain/validation';
import type { PendingApproval } from './approval-inbox';
import { iacApproveSignal, iacAwaitUpdate, iacDecideUpdate, iacDenySignal, iacStatusQuery, stackAnswerSignal } from './iac-messages';
import type { IacRunContext } from './iac-run-context';
import { refusal } from './workflow-failures';

/**
 * What callers reach an IaC run by (DESIGN §11): the `status` query, the stack keeper's
 * answers, `approve`/`deny` signals (queued, judged in order while it awaits approval),
 * `awaitIac` (callers wait inside Temporal) and `decide` (an approval from a program,
 * answered with what it did).
 */
export function registerIacRunHandlers(ctx: IacRunContext): void {
  setHandler(iacStatusQuery, () => ctx.status());
  setHandler(stackAnswerSignal, (answer) => ctx.place.turn?.heard(answer));
  const onSignal = (signal: 'approve' | 'deny') => (payload: unknown) => {
    if (ctx.shown.state !== 'AWAITING_APPROVAL') return;
    const size = payloadChars(payload);
    ctx.approvals.inbox.enqueue(size > MAX_PAYLOAD_CHARS ? { signal, payload: null, oversizedChars: size } : { signal, payload });
  };
  setHandler(iacApproveSignal, onSignal('approve'));
  setHandler(iacDenySignal, onSignal('deny'));
  setHandler(
    iacAwaitUpdate,
    async (payload) => {
      const { until, timeoutSeconds } = iacAwaitPayloadSchema.parse(payload);
      const reached = () => iacHasReached(until, ctx.shown.state);
      await CancellationScope.nonCancellable(async () => {
        if (timeoutSeconds === undefined) await condition(reached);
        else await condition(reached, timeoutSeconds * 1000);
      });
      return ctx.status();
    },
    {
      validator: (payload) => {
        const parsed = iacAwaitPayloadSchema.safeParse(payload);
        if (!parsed.success) throw refusal('INVALID_INPUT', `invalid awaitIac payload: ${describeIssues(parsed.error.issues)}`);
        const sent = parsed.data.requestDigest;
        if (sent !== undefined && ctx.admitted !== undefined && sent !== ctx.digest) {
          throw refusal('IDEMPOTENCY_CONFLICT', `IaC run ${ctx.run.runId} exists for a different request`);
        }
      },
    },
  );
  setHandler(
    iacDecideUpdate,
    async (payload) => {
      const { decision, ...rest } = iacDecidePayloadSchema.parse(payload);
      const pending: PendingApproval = { signal: decision, payload: rest, fromUpdate: true };
      if (!ctx.approvals.inbox.enqueue(pending)) throw refusal('INVALID_STATE', 'too many approvals are waiting to be judged; try again shortly');
      await CancellationScope.nonCancellable(() => condition(() => pending.verdict !== undefined));
      const attempt = pending.verdict as ApprovalAttempt;
      if (pending.tooLate === true) throw refusal('INVALID_STATE', `IaC run ${ctx.run.runId} no longer awaits approval: ${attempt.reason}`);
      if (attempt.verdict === 'ignored') throw refusal(attempt.refusal ?? 'APPROVER_NOT_ALLOWED', `the ${decision} was ignored: ${attempt.reason}`);
      // Answer with what the decision did: the run applying, denied, or waiting for the next approver.
      await CancellationScope.nonCancellable(() => condition(() => ctx.shown.state !== 'AWAITING_APPROVAL' || ctx.approvals.hasTaken(pending)));
      return ctx.status();
    },
    {
      validator: (payload) => {
        if (payloadChars(payload) > MAX_PAYLOAD_CHARS) throw refusal('INVALID_INPUT', `the decide payload is larger than ${MAX_PAYLOAD_CHARS} characters of JSON`);
        const parsed = iacDecidePayloadSchema.safeParse(payload);
        if (!parsed.success) throw refusal('INVALID_INPUT', `invalid decide payload: ${describeIssues(parsed.error.issues)}`);
        if (ctx.shown.state !== 'AWAITING_APPROVAL') throw refusal('INVALID_STATE', `IaC run ${ctx.admitted?.runId ?? ''} is ${ctx.shown.state}, not AWAITING_APPROVAL`);
        if (ctx.approvals.inbox.full) throw refusal('RATE_LIMITED', 'too many approvals are waiting to be judged; try again shortly');
        const plan = ctx.shown.plan;
        if (plan !== null && parsed.data.planDigest !== plan.digest) {
          throw refusal('PLAN_STALE', `the approval names plan ${parsed.data.planDigest}, but this run holds plan ${plan.digest}`);
        }
      },
    },
  );
}
