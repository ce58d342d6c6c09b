import {
  ActivityCancellationType,
  CancellationScope,
  allHandlersFinished,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { AppliedChange, DockerActivities, PlannedChange } from '../activities';
import { formatDuration } from '../domain/duration';
import type { ErrorCode } from '../domain/error-codes';
import { NON_RETRYABLE_ERROR_TYPES } from '../domain/error-codes';
import { isSandboxPlaneError } from '../domain/errors';
import { iacWorkflowIdFor, workflowIdFor } from '../domain/contract-names';
import {
  iacAwaitPayloadSchema,
  iacApprovalPayloadSchema,
  iacDecidePayloadSchema,
  iacHasReached,
  iacRequestDigest,
  iacRunInputSchema,
  iacTargetOfSandbox,
  isIacTerminal,
  type AdmittedIacRun,
  type IacApproval,
  type IacClaimAnswer,
  type IacResourceRow,
  type IacState,
  type IacStatus,
  type ShownPlan,
} from '../domain/iac/iac-run';
import type { IacDecision } from '../domain/iac/iac-screening';
import { planDetailsMarkdown } from '../domain/iac/plan-text';
import { validateTemplate } from '../domain/iac/template';
import { MAX_PAYLOAD_CHARS, payloadChars, type ApprovalAttempt } from '../domain/lifecycle-messages';
import { IacState as IacStateKey, IacTarget, SandboxCapability, SandboxPrincipal } from '../domain/search-attributes';
import type { AdapterName } from '../domain/service-catalog';
import { describeIssues } from '../domain/validation';
import { storeActivities } from './activity-routes';
import { ApprovalInbox, type PendingApproval } from './approval-inbox';
import { claimStackSignal, iacApproveSignal, iacAwaitUpdate, iacDecideUpdate, iacDenySignal, iacStatusQuery, releaseStackSignal, stackAnswerSignal } from './iac-messages';
import { iso } from './iso-time';
import { failureCode, refusal } from './workflow-failures';

/** What a run may take beyond waiting for approval: planning, applying, checking. Its stack turn is leased for that long. */
const RUN_BUDGET_MS = 45 * 60_000;
/** A sandbox's lifecycle answers a claim at once; silence this long means it cannot (ended, or a build from before IaC). */
const CLAIM_ANSWER_WAIT_MS = 60_000;

const nonRetryableErrorTypes = [...NON_RETRYABLE_ERROR_TYPES];

/** The approvals that did not count that status shows: the newest (the audit trail has them all). */
const ATTEMPTS_SHOWN = 20;

/** The host's IaC steps: each retried for about two minutes (a Docker or emulator blip is ridden out). */
function hostSteps(taskQueue: string): DockerActivities {
  return proxyActivities<DockerActivities>({
    taskQueue,
    startToCloseTimeout: '5 minutes',
    retry: { initialInterval: '2 seconds', maximumInterval: '20 seconds', maximumAttempts: 8, nonRetryableErrorTypes },
  });
}

/** Waiting for the stack to settle: heartbeats carry its events, the wait itself is bounded in the activity. */
function settleStep(taskQueue: string): DockerActivities {
  return proxyActivities<DockerActivities>({
    taskQueue,
    startToCloseTimeout: '15 minutes',
    heartbeatTimeout: '30 seconds',
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { initialInterval: '2 seconds', maximumInterval: '20 seconds', maximumAttempts: 5, nonRetryableErrorTypes },
  });
}

/**
 * Executing the change set: an attempt first asks whether an earlier one executed it (its
 * execution status), so a retry after a lost answer never executes twice.
 */
function executeStep(taskQueue: string): DockerActivities {
  return proxyActivities<DockerActivities>({
    taskQueue,
    startToCloseTimeout: '5 minutes',
    retry: { initialInterval: '5 seconds', maximumAttempts: 3, nonRetryableErrorTypes },
  });
}

class Refused extends Error {
  constructor(
    readonly state: IacState,
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** Where the stack's sandbox runs, as its lifecycle granted it. */
interface Granted {
  readonly adapter: AdapterName;
  readonly taskQueue: string;
  readonly runtime: { runtimeIds: string[]; engineId?: string };
}

/**
 * One infrastructure-as-code change of one stack in one sandbox (DESIGN §14):
 *
 *   PLANNING ─▶ PLANNED                                  (iac plan)
 *      └──────▶ AWAITING_APPROVAL ─▶ APPLYING ─▶ APPLIED | FAILED
 *                     └─▶ DENIED | EXPIRED
 *
 * The plan is the plane's own diff, cross-checked with the emulator's change set; an
 * approval names its digest; the apply is checked through each service's own API.
 */
export async function iacRun(input: unknown): Promise<IacStatus> {
  const run = new IacRunRecord(input);
  run.register();
  try {
    await run.proceed();
  } catch (err) {
    if (!isCancellation(err)) throw err;
    await CancellationScope.nonCancellable(() => run.cancelled());
  } finally {
    await CancellationScope.nonCancellable(() => run.finish());
  }
  await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
  return run.status();
}

class IacRunRecord {
  private readonly admitted: AdmittedIacRun | undefined;
  private readonly digest: string;
  private readonly createdAt = new Date().toISOString();
  private updatedAt = this.createdAt;
  private state: IacState = 'PLANNING';
  private waitingFor = 'Screening the change against flags and policy.';
  private plan: ShownPlan | null = null;
  private decision: IacDecision | null = null;
  private readonly approvals: IacApproval[] = [];
  /** Approvals that did not count, newest last. */
  private readonly attempts: ApprovalAttempt[] = [];
  private resources: readonly IacResourceRow[] = [];
  private events: readonly string[] = [];
  private error: { code: ErrorCode; message: string } | null = null;
  private readonly inbox = new ApprovalInbox([]);
  private answer: IacClaimAnswer | undefined;
  /** Set once the lifecycle was asked for the stack: the run gives its turn (or its place in line) back at the end. */
  private claimed = false;
  private granted: Granted | undefined;
  private applyStarted = false;
  private removed: PlannedChange['removed'] = [];
  private auditStep = 0;

  constructor(private readonly input: unknown) {
    const parsed = iacRunInputSchema.safeParse(input);
    let problem: string | undefined;
    if (!parsed.success) problem = describeIssues(parsed.error.issues);
    else if (iacWorkflowIdFor(parsed.data.runId) !== workflowInfo().workflowId) problem = `runId: must match the workflow id (${workflowInfo().workflowId}), got '${parsed.data.runId}'`;
    else {
      try {
        validateTemplate(parsed.data.template, parsed.data.parameters);
      } catch (err) {
        problem = isSandboxPlaneError(err) ? err.message : String(err);
      }
    }
    this.admitted = problem === undefined && parsed.success ? parsed.data : undefined;
    this.digest = this.admitted === undefined ? '' : iacRequestDigest(this.admitted);
    if (problem !== undefined) {
      this.state = 'FAILED';
      this.error = { code: 'INVALID_INPUT', message: problem };
      this.waitingFor = `Refused (INVALID_INPUT): ${problem}. Nothing was planned or applied.`;
    }
    this.show(true);
  }

  /** The lifecycle's word, after it granted the stack, that the sandbox is ending: nothing can be applied any more. */
  private get sandboxEnded(): Extract<IacClaimAnswer, { answer: 'refused' }> | undefined {
    const answer = this.answer;
    return this.granted !== undefined && answer?.answer === 'refused' ? answer : undefined;
  }

  private get run(): AdmittedIacRun {
    return this.admitted as AdmittedIacRun;
  }

  register(): void {
    setHandler(iacStatusQuery, () => this.status());
    setHandler(stackAnswerSignal, (answer) => {
      this.answer = answer;
    });
    const onSignal = (signal: 'approve' | 'deny') => (payload: unknown) => {
      if (this.state !== 'AWAITING_APPROVAL') return;
      const size = payloadChars(payload);
      this.inbox.enqueue(size > MAX_PAYLOAD_CHARS ? { signal, payload: null, oversizedChars: size } : { signal, payload });
    };
    setHandler(iacApproveSignal, onSignal('approve'));
    setHandler(iacDenySignal, onSignal('deny'));
    setHandler(
      iacAwaitUpdate,
      async (payload) => {
        const { until, timeoutSeconds } = iacAwaitPayloadSchema.parse(payload);
        const reached = () => iacHasReached(until, this.state);
        await CancellationScope.nonCancellable(async () => {
          if (timeoutSeconds === undefined) await condition(reached);
          else await condition(reached, timeoutSeconds * 1000);
        });
        return this.status();
      },
      {
        validator: (payload) => {
          const parsed = iacAwaitPayloadSchema.safeParse(payload);
          if (!parsed.success) throw refusal('INVALID_INPUT', `invalid awaitIac payload: ${describeIssues(parsed.error.issues)}`);
          const sent = parsed.data.requestDigest;
          if (sent !== undefined && this.admitted !== undefined && sent !== this.digest) {
            throw refusal('IDEMPOTENCY_CONFLICT', `IaC run ${this.run.runId} exists for a different request (its digest is ${this.digest}, this one is ${sent})`);
          }
        },
      },
    );
    setHandler(
      iacDecideUpdate,
      async (payload) => {
        const { decision, ...rest } = iacDecidePayloadSchema.parse(payload);
        const pending: PendingApproval = { signal: decision, payload: rest, fromUpdate: true };
        if (!this.inbox.enqueue(pending)) throw refusal('INVALID_STATE', 'too many approvals are waiting to be judged; try again shortly');
        await CancellationScope.nonCancellable(() => condition(() => pending.verdict !== undefined));
        const attempt = pending.verdict as ApprovalAttempt;
        if (pending.tooLate === true) throw refusal('INVALID_STATE', `IaC run ${this.run.runId} is ${this.state}, not AWAITING_APPROVAL`);
        if (attempt.verdict === 'ignored') throw refusal(attempt.refusal ?? 'APPROVER_NOT_ALLOWED', `the ${decision} was ignored: ${attempt.reason}`);
        return this.status();
      },
      {
        validator: (payload) => {
          if (payloadChars(payload) > MAX_PAYLOAD_CHARS) throw refusal('INVALID_INPUT', `the decide payload is larger than ${MAX_PAYLOAD_CHARS} characters of JSON`);
          const parsed = iacDecidePayloadSchema.safeParse(payload);
          if (!parsed.success) throw refusal('INVALID_INPUT', `invalid decide payload: ${describeIssues(parsed.error.issues)}`);
          if (this.state !== 'AWAITING_APPROVAL') throw refusal('INVALID_STATE', `IaC run ${this.admitted?.runId ?? ''} is ${this.state}, not AWAITING_APPROVAL`);
          if (this.plan !== null && parsed.data.planDigest !== this.plan.digest) {
            throw refusal('PLAN_STALE', `the approval names plan ${parsed.data.planDigest}, but this run holds plan ${this.plan.digest}`);
          }
        },
      },
    );
  }

  status(): IacStatus {
    const run = this.admitted;
    const raw = (this.input ?? {}) as { runId?: unknown; mode?: unknown; sandboxId?: unknown; principal?: unknown; stack?: unknown };
    const text = (value: unknown) => (typeof value === 'string' ? value.slice(0, 200) : '');
    return {
      runId: run?.runId ?? text(raw.runId),
      workflowId: workflowInfo().workflowId,
      requestDigest: this.digest,
      state: this.state,
      mode: run?.mode ?? (raw.mode === 'apply' ? 'apply' : 'plan'),
      sandboxId: run?.sandboxId ?? text(raw.sandboxId),
      principal: run?.principal ?? text(raw.principal),
      stack: run?.stack ?? text(raw.stack),
      source: run?.source ?? { kind: 'template', name: '' },
      plan: this.plan,
      decision: this.decision === null ? null : { effect: this.decision.effect, reasons: [...this.decision.reasons] },
      approvals: [...this.approvals],
      approvalAttempts: [...this.attempts],
      resources: [...this.resources],
      events: [...this.events],
      waitingFor: this.waitingFor,
      error: this.error,
      createdAt: this.createdAt,
      updatedAt: this.updatedAt,
    };
  }

  /** Search attributes and the UI's details: the plan in full once there is one, the sentence before. */
  private show(first = false): void {
    this.updatedAt = new Date().toISOString();
    const attributes = [{ key: IacStateKey, value: this.state }];
    if (first && this.admitted !== undefined) {
      upsertSearchAttributes([
        ...attributes,
        { key: SandboxPrincipal, value: this.run.principal },
        { key: SandboxCapability, value: 'cloud.iac.local' },
        { key: IacTarget, value: iacTargetOfSandbox(this.run.sandboxId) },
      ]);
    } else {
      upsertSearchAttributes(attributes);
    }
    const details =
      this.plan === null || this.admitted === undefined
        ? this.waitingFor
        : planDetailsMarkdown(this.plan, {
            runId: this.run.runId,
            stack: this.run.stack,
            target: this.run.sandboxId,
            principal: this.run.principal,
            state: this.state,
            waitingFor: this.waitingFor,
          });
    setCurrentDetails(details);
  }

  private enter(state: IacState, waitingFor: string): void {
    this.state = state;
    this.waitingFor = waitingFor;
    this.show();
  }

  private async audit(action: string, actor: string, effect: string, reason: string | null, summary: Record<string, unknown> = {}): Promise<void> {
    if (this.admitted === undefined) return;
    this.auditStep += 1;
    const operation = { runId: workflowInfo().runId, step: this.auditStep, action, actor, effect, reason, summary: { iacRunId: this.run.runId, stack: this.run.stack, ...summary } };
    try {
      await storeActivities().recordIacOperations({ sandboxId: this.run.sandboxId, workflowId: workflowInfo().workflowId, operations: [operation] });
    } catch (err) {
      if (isCancellation(err)) throw err;
      // The trail misses this row; the run's own history still has it (the store's outage is the worker's log to read).
      log.error('IaC audit row not recorded', { action, error: failureCode(err, 'STORE_UNAVAILABLE').message });
    }
  }

  async proceed(): Promise<void> {
    if (this.admitted === undefined) return;
    const run = this.run;
    try {
      await this.audit('iac_requested', run.principal, 'requested', null, { mode: run.mode, source: run.source });
      const screening = await storeActivities().screenIacRun({ principal: run.principal, template: run.template });
      this.decision = screening.decision;
      if (screening.decision.effect === 'deny') throw new Refused('DENIED', screening.decision.code ?? 'POLICY_DENIED', screening.decision.reasons.join('; '));
      this.enter('PLANNING', `Waiting for the turn of stack ${run.stack} in sandbox ${run.sandboxId}.`);
      const leaseMs = RUN_BUDGET_MS + (run.mode === 'apply' ? screening.approvalTimeoutSeconds * 1000 : 0);
      this.granted = await this.claimStack(Date.now() + leaseMs);
      this.enter('PLANNING', `Planning stack ${run.stack} in sandbox ${run.sandboxId} (${this.granted.adapter}).`);
      const planned = await hostSteps(this.granted.taskQueue).planIacChange(this.changeRequest());
      this.plan = planned.plan;
      await this.audit('iac_planned', 'plane', 'planned', null, {
        digest: planned.plan.digest,
        changes: planned.plan.changes.length,
        unsupported: planned.plan.unsupported.length,
        security: planned.plan.security.length,
      });
      if (run.mode === 'plan') {
        this.enter('PLANNED', `Planned: nothing was changed. Apply it with \`sandboxctl iac apply ${run.sandboxId} …\` (the same template and parameters).`);
        return;
      }
      if (screening.decision.effect === 'require_approval') await this.awaitApproval(screening.approvalTimeoutSeconds);
      await this.apply();
    } catch (err) {
      if (err instanceof Refused) {
        this.error = { code: err.code, message: err.message };
        await this.audit(`iac_${err.state.toLowerCase()}`, 'plane', err.state.toLowerCase(), err.message, { code: err.code });
        this.enter(err.state, `${err.state === 'DENIED' ? 'Refused' : 'Failed'} (${err.code}): ${err.message}`);
        return;
      }
      if (isCancellation(err)) throw err;
      const error = failureCode(err, 'INTERNAL');
      this.error = error;
      await this.audit('iac_failed', 'plane', 'failed', error.message, { code: error.code });
      this.enter('FAILED', `Failed (${error.code}): ${error.message}`);
    }
  }

  private changeRequest() {
    const granted = this.granted as Granted;
    return {
      sandboxId: this.run.sandboxId,
      adapter: granted.adapter,
      runtime: granted.runtime,
      runId: this.run.runId,
      stack: this.run.stack,
      template: this.run.template,
      parameters: this.run.parameters,
    };
  }

  /**
   * Asks the sandbox's lifecycle for the stack's turn and waits for it: granted, refused,
   * or queued behind a run whose lease ends at a known time (then it asks again).
   */
  private async claimStack(leaseUntilMs: number): Promise<Granted> {
    const run = this.run;
    const lifecycle = getExternalWorkflowHandle(workflowIdFor(run.sandboxId));
    for (;;) {
      this.answer = undefined;
      try {
        await lifecycle.signal(claimStackSignal, { runId: run.runId, stack: run.stack, principal: run.principal, leaseUntilMs });
        this.claimed = true;
      } catch {
        throw new Refused('FAILED', 'NOT_FOUND', `no sandbox ${run.sandboxId}`);
      }
      if (!(await condition(() => this.answer !== undefined, CLAIM_ANSWER_WAIT_MS))) {
        throw new Refused(
          'FAILED',
          'INVALID_STATE',
          `sandbox ${run.sandboxId} did not answer within ${CLAIM_ANSWER_WAIT_MS / 1000} s (it may run a build from before infrastructure as code: create a new sandbox)`,
        );
      }
      const answer = this.answer as unknown as IacClaimAnswer;
      if (answer.answer === 'refused') throw new Refused('FAILED', answer.code, answer.message);
      if (answer.answer === 'granted')
        return { adapter: answer.adapter as AdapterName, taskQueue: answer.placement.taskQueue, runtime: { ...answer.runtime, runtimeIds: [...answer.runtime.runtimeIds] } };
      this.enter('PLANNING', `Waiting for stack ${run.stack}: run ${answer.behind} changes it now (its turn ends by ${iso(answer.leaseUntilMs)} at the latest).`);
      // Woken by the lifecycle's grant when the other run ends; else asks again once the other's lease is over.
      this.answer = undefined;
      await condition(() => this.answer !== undefined, Math.max(1_000, answer.leaseUntilMs - Date.now() + 1_000));
      const next = this.answer as IacClaimAnswer | undefined;
      if (next?.answer === 'granted')
        return { adapter: next.adapter as AdapterName, taskQueue: next.placement.taskQueue, runtime: { ...next.runtime, runtimeIds: [...next.runtime.runtimeIds] } };
      if (next?.answer === 'refused') throw new Refused('FAILED', next.code, next.message);
    }
  }

  private async awaitApproval(timeoutSeconds: number): Promise<void> {
    const run = this.run;
    const plan = this.plan as ShownPlan;
    const deadlineMs = Date.now() + timeoutSeconds * 1000;
    this.enter('AWAITING_APPROVAL', `Waiting for a reviewer to approve plan ${plan.digest} by ${iso(deadlineMs)}: \`sandboxctl iac approve ${run.runId} --approver NAME --code NNNNNN\`.`);
    await this.audit('iac_awaiting_approval', 'policy', 'require_approval', (this.decision?.reasons ?? []).join('; ') || null, { digest: plan.digest });
    for (;;) {
      const remaining = deadlineMs - Date.now();
      if (remaining <= 0 || !(await condition(() => this.inbox.size > 0 || this.sandboxEnded !== undefined, remaining))) {
        this.inbox.closeWith('the run has EXPIRED, no longer awaiting approval');
        throw new Refused('EXPIRED', 'APPROVAL_EXPIRED', `no approval within ${formatDuration(timeoutSeconds)}; nothing was applied`);
      }
      const ended = this.sandboxEnded;
      if (ended !== undefined) {
        this.inbox.closeWith('the sandbox is no longer READY');
        throw new Refused('FAILED', ended.code, ended.message);
      }
      const pending = this.inbox.take() as PendingApproval;
      const attempt = await this.judge(pending, plan.digest);
      pending.verdict = attempt;
      if (attempt.verdict === 'ignored') continue;
      const approval = { approver: attempt.approver as string, reason: attempt.reason, at: attempt.at };
      this.approvals.push(approval);
      this.inbox.closeWith(`the run was ${pending.signal === 'deny' ? 'denied' : 'approved'} already`);
      if (pending.signal === 'deny') {
        throw new Refused('DENIED', 'APPROVAL_DENIED', `denied by ${approval.approver}${approval.reason ? `: ${approval.reason}` : ''}; nothing was applied`);
      }
      await this.audit('iac_approved', approval.approver, 'allow', approval.reason || null, { digest: plan.digest });
      return;
    }
  }

  /** Validates one approve/deny; an invalid, unauthorized or stale one is audited and ignored, never fatal. */
  private async judge(pending: PendingApproval, digest: string): Promise<ApprovalAttempt> {
    const at = new Date().toISOString();
    const ignore = async (approver: string | null, why: string, refusalCode?: 'APPROVAL_UNVERIFIED'): Promise<ApprovalAttempt> => {
      const attempt: ApprovalAttempt = { signal: pending.signal, approver, verdict: 'ignored', reason: why, at, ...(refusalCode !== undefined ? { refusal: refusalCode } : {}) };
      this.attempts.push(attempt);
      if (this.attempts.length > ATTEMPTS_SHOWN) this.attempts.shift();
      await this.audit(`iac_${pending.signal}_ignored`, approver ?? 'unknown', 'ignored', why);
      return attempt;
    };
    if (pending.oversizedChars !== undefined) return ignore(null, `the payload is ${pending.oversizedChars} characters of JSON, more than ${MAX_PAYLOAD_CHARS}`);
    const parsed = iacApprovalPayloadSchema.safeParse(pending.payload);
    if (!parsed.success) return ignore(null, `malformed payload (${describeIssues(parsed.error.issues)}); send {"approver", "reason", "code", "planDigest": "${digest}"}`);
    const { approver, reason, code, planDigest } = parsed.data;
    if (approver === this.run.principal) return ignore(approver, `${approver} requested this change and cannot ${pending.signal} it`);
    if (planDigest !== digest) return ignore(approver, `PLAN_STALE: the ${pending.signal} names plan ${planDigest}, but this run holds plan ${digest}`);
    const { workflowId, runId } = workflowInfo();
    let proof;
    try {
      proof = await storeActivities().verifyApproval({ approver, code: code ?? null, use: `${workflowId}/${runId}/${this.inbox.nextProofCheck()}` });
    } catch (err) {
      if (isCancellation(err)) throw err;
      const error = failureCode(err, 'STORE_UNAVAILABLE');
      return ignore(approver, `the approval could not be checked (${error.code}: ${error.message}); send it again`);
    }
    if (proof.verdict === 'unlisted') return ignore(approver, `${approver} is not on the approvers list`);
    if (proof.verdict === 'unverified') return ignore(approver, `APPROVAL_UNVERIFIED: ${proof.why}`, 'APPROVAL_UNVERIFIED');
    return { signal: pending.signal, approver, verdict: 'accepted', reason, at };
  }

  /** Applies the approved plan: planned again against the stack as it is now, executed once, waited for and checked. */
  private async apply(): Promise<void> {
    const run = this.run;
    const granted = this.granted as Granted;
    const approved = (this.plan as ShownPlan).digest;
    this.enter(
      'APPLYING',
      `Applying plan ${approved} to stack ${run.stack} in sandbox ${run.sandboxId}. Nothing takes a snapshot first yet: a failed apply leaves what it made (listed here when it ends).`,
    );
    const steps = hostSteps(granted.taskQueue);
    const prepared = await steps.prepareIacApply(this.changeRequest());
    if (prepared.plan.digest !== approved) {
      await steps.discardIacApply({ sandboxId: run.sandboxId, adapter: granted.adapter, runtime: granted.runtime, runId: run.runId, stack: run.stack });
      this.plan = prepared.plan;
      throw new Refused('FAILED', 'PLAN_STALE', `stack ${run.stack} changed since the plan was approved (plan ${approved}, now ${prepared.plan.digest}); nothing was applied: plan again`);
    }
    this.removed = prepared.removed;
    this.applyStarted = true;
    let executionError: string | null = null;
    try {
      const executed = await executeStep(granted.taskQueue).executeIacChange({
        sandboxId: run.sandboxId,
        adapter: granted.adapter,
        runtime: granted.runtime,
        runId: run.runId,
        stack: run.stack,
      });
      if (executed.outcome === 'failed') executionError = executed.error;
    } catch (err) {
      if (isCancellation(err)) throw err;
      executionError = `the execution's answer was lost (${failureCode(err, 'INTERNAL').message}); what the stack holds is below`;
    }
    await this.settle(executionError);
  }

  /** Waits for the stack, checks it, and gives the verdict: APPLIED only when the stack holds what the plan said. */
  private async settle(executionError: string | null): Promise<void> {
    const run = this.run;
    const granted = this.granted as Granted;
    const outcome: AppliedChange = await settleStep(granted.taskQueue).settleIacChange({ ...this.changeRequest(), removed: this.removed, executionError });
    this.resources = outcome.resources;
    this.events = outcome.events;
    const summary = { stackStatus: outcome.stackStatus, resources: outcome.resources.map((row) => `${row.logicalId}:${row.status}`) };
    if (outcome.ok) {
      await this.audit('iac_applied', 'plane', 'applied', null, summary);
      this.enter('APPLIED', `Applied to stack ${run.stack}: ${describeRows(outcome.resources)}.`);
      return;
    }
    this.error = { code: 'PROVISION_FAILED', message: outcome.problems.join('; ') };
    await this.audit('iac_failed', 'plane', 'failed', this.error.message, summary);
    this.enter('FAILED', `Failed: ${this.error.message}. What the stack holds is in resources; the emulator does not roll back.`);
  }

  /** A cancelled run ends with a verdict: after the apply began, what the stack holds is checked first. */
  async cancelled(): Promise<void> {
    this.inbox.closeWith('the run was cancelled');
    if (this.admitted === undefined || isIacTerminal(this.state)) return;
    if (this.applyStarted && this.granted !== undefined) {
      try {
        await this.settle('the run was cancelled during the apply');
        return;
      } catch (err) {
        this.error = failureCode(err, 'INTERNAL');
      }
    }
    this.error ??= { code: 'INVALID_STATE', message: 'the run was cancelled before anything was applied' };
    await this.audit('iac_failed', 'plane', 'failed', this.error.message, { code: this.error.code });
    this.enter('FAILED', `Cancelled (${this.error.code}): ${this.error.message}.`);
  }

  /** Gives the stack's turn back to the lifecycle, whatever happened. */
  async finish(): Promise<void> {
    if (this.admitted === undefined || !this.claimed) return;
    await getExternalWorkflowHandle(workflowIdFor(this.run.sandboxId))
      .signal(releaseStackSignal, { runId: this.run.runId, stack: this.run.stack })
      .catch(() => undefined);
  }
}

function describeRows(rows: readonly IacResourceRow[]): string {
  const counts = new Map<string, number>();
  for (const row of rows) counts.set(row.status, (counts.get(row.status) ?? 0) + 1);
  return [...counts].map(([status, count]) => `${count} ${status}`).join(', ') || 'no resources';
}
