import {
  ActivityFailure,
  CancellationScope,
  TimeoutFailure,
  allHandlersFinished,
  condition,
  isCancellation,
  log,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { AppliedChange, PlannedChange } from '../activities';
import type { Capability } from '../domain/capabilities';
import { formatDuration } from '../domain/duration';
import type { ErrorCode } from '../domain/error-codes';
import { isSandboxPlaneError } from '../domain/errors';
import { iacWorkflowIdFor } from '../domain/contract-names';
import {
  iacAwaitPayloadSchema,
  iacDecidePayloadSchema,
  iacHasReached,
  iacRequestDigest,
  iacRunInputSchema,
  iacTargetOfSandbox,
  iacTargetOfTarget,
  isIacTerminal,
  PROOF_WINDOW_SECONDS,
  type AdmittedIacRun,
  type IacProof,
  type IacResourceRow,
  type IacState,
  type IacStatus,
  type ShownPlan,
} from '../domain/iac/iac-run';
import { planScreening, templateServices, type IacDecision } from '../domain/iac/iac-screening';
import { planDetailsMarkdown } from '../domain/iac/plan-text';
import { templateDigest } from '../domain/iac/plan';
import { unsealedNoEchoParameters } from '../domain/iac/sealed-parameters';
import { validateTemplate } from '../domain/iac/template';
import { MAX_PAYLOAD_CHARS, payloadChars, type ApprovalAttempt } from '../domain/lifecycle-messages';
import { IacState as IacStateKey, IacTarget, SandboxCapability, SandboxPrincipal } from '../domain/search-attributes';
import { approvalsNeeded, capabilityOfEnvironment, type TargetRecord } from '../domain/targets';
import { describeIssues } from '../domain/validation';
import { storeActivities } from './activity-routes';
import type { PendingApproval } from './approval-inbox';
import { IacApprovals } from './iac-approvals';
import { iacApproveSignal, iacAwaitUpdate, iacDecideUpdate, iacDenySignal, iacStatusQuery, stackAnswerSignal } from './iac-messages';
import { IacRefused } from './iac-refusal';
import { IacStackTurn, type Granted } from './iac-stack-turn';
import { IacCheckpoint } from './iac-checkpoint';
import { executeStep, planningSteps, settleStep, STEP_PICKUP } from './iac-steps';
import { iso } from './iso-time';
import { failureCode, refusal } from './workflow-failures';

/**
 * What a run may take beyond waiting for people: planning, applying and checking with
 * every retry its steps allow (the settle step alone may take 5 × 15 minutes). Its stack
 * turn is leased for that long, counted from the grant, and the approval wait on top.
 */
const RUN_BUDGET_MS = 3 * 3_600_000;

/** Approvals that did not count, at most, before the run ends DENIED: the history of one run stays bounded. */
const MAX_IGNORED_APPROVALS = 100;

/** Resource statuses a sandbox proof accepts: every supported resource checked through its service, nothing left standing. */
const PROVEN_STATUSES: ReadonlySet<IacResourceRow['status']> = new Set(['VERIFIED', 'REMOVED', 'NOT_CREATED']);

/**
 * One infrastructure-as-code change of one stack, in a sandbox or promoted to an
 * operator's target (DESIGN §14):
 *
 *   PLANNING ─▶ PLANNED                                  (iac plan)
 *      └──────▶ AWAITING_APPROVAL ─▶ APPLYING ─▶ APPLIED | FAILED
 *                     └─▶ DENIED | EXPIRED
 *
 * The plan is the plane's own diff, cross-checked with the target's change set; an
 * approval names its digest; the apply is checked through each service's own API. A
 * target's run needs a sandbox proof (the same template APPLIED in a sandbox of the
 * same principal), and always people: two different ones for production.
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
  private resources: readonly IacResourceRow[] = [];
  private events: readonly string[] = [];
  private error: { code: ErrorCode; message: string } | null = null;
  private readonly approvals: IacApprovals;
  /** A target's run: the target as its operator registered it, and the sandbox run it rests on. */
  private targetRecord: TargetRecord | undefined;
  private proof: IacProof | null = null;
  private approvalsNeeded = 0;
  /** The stack's turn, once asked for; where the steps go, once granted. */
  private turn: IacStackTurn | undefined;
  private granted: Granted | undefined;
  private applyStarted = false;
  /** When the execution began: the stack's events before it are earlier runs'. */
  private applyStartedAt: string | null = null;
  private removed: PlannedChange['removed'] = [];
  private preexisting: PlannedChange['preexisting'] = {};
  private auditStep = 0;
  private shownState: IacState | undefined;
  /** A sandbox's state before the apply, put back when it fails. */
  private checkpoint: IacCheckpoint | undefined;

  constructor(private readonly input: unknown) {
    const parsed = iacRunInputSchema.safeParse(input);
    let problem: string | undefined;
    if (!parsed.success) problem = describeIssues(parsed.error.issues);
    else if (iacWorkflowIdFor(parsed.data.runId) !== workflowInfo().workflowId) problem = `runId: must match the workflow id (${workflowInfo().workflowId}), got '${parsed.data.runId}'`;
    else {
      try {
        validateTemplate(parsed.data.template, parsed.data.parameters);
        const clear = unsealedNoEchoParameters(parsed.data.template, parsed.data.parameters);
        if (clear.length > 0) problem = `parameters: NoEcho ${clear.join(', ')} arrived in clear; sandboxctl and the SDK seal them with the plane's payload codec keys`;
      } catch (err) {
        problem = isSandboxPlaneError(err) ? err.message : String(err);
      }
    }
    this.admitted = problem === undefined && parsed.success ? parsed.data : undefined;
    this.approvals = new IacApprovals(this.admitted?.principal ?? '', (action, actor, effect, reason) => this.audit(action, actor, effect, reason));
    this.digest = this.admitted === undefined ? '' : iacRequestDigest(this.admitted);
    if (problem !== undefined) {
      this.state = 'FAILED';
      this.error = { code: 'INVALID_INPUT', message: problem };
      this.waitingFor = `Refused (INVALID_INPUT): ${problem}. Nothing was planned or applied.`;
    }
    this.show(true);
  }

  /** What the run changes, as its search attribute and plan name it: `sandbox:<id>` or `target:<name>`. */
  private get where(): string {
    const { sandboxId, target } = this.run;
    return sandboxId !== undefined ? iacTargetOfSandbox(sandboxId) : iacTargetOfTarget(target as string);
  }

  /** The same, in words. */
  private get whereText(): string {
    const { sandboxId, target } = this.run;
    return sandboxId !== undefined ? `sandbox ${sandboxId}` : `target ${target as string}`;
  }

  private get run(): AdmittedIacRun {
    return this.admitted as AdmittedIacRun;
  }

  register(): void {
    setHandler(iacStatusQuery, () => this.status());
    setHandler(stackAnswerSignal, (answer) => this.turn?.heard(answer));
    const onSignal = (signal: 'approve' | 'deny') => (payload: unknown) => {
      if (this.state !== 'AWAITING_APPROVAL') return;
      const size = payloadChars(payload);
      this.approvals.inbox.enqueue(size > MAX_PAYLOAD_CHARS ? { signal, payload: null, oversizedChars: size } : { signal, payload });
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
        if (!this.approvals.inbox.enqueue(pending)) throw refusal('INVALID_STATE', 'too many approvals are waiting to be judged; try again shortly');
        await CancellationScope.nonCancellable(() => condition(() => pending.verdict !== undefined));
        const attempt = pending.verdict as ApprovalAttempt;
        if (pending.tooLate === true) throw refusal('INVALID_STATE', `IaC run ${this.run.runId} no longer awaits approval: ${attempt.reason}`);
        if (attempt.verdict === 'ignored') throw refusal(attempt.refusal ?? 'APPROVER_NOT_ALLOWED', `the ${decision} was ignored: ${attempt.reason}`);
        // Answer with what the decision did: the run applying, denied, or waiting for the next approver.
        await CancellationScope.nonCancellable(() => condition(() => this.state !== 'AWAITING_APPROVAL' || this.approvals.hasTaken(pending)));
        return this.status();
      },
      {
        validator: (payload) => {
          if (payloadChars(payload) > MAX_PAYLOAD_CHARS) throw refusal('INVALID_INPUT', `the decide payload is larger than ${MAX_PAYLOAD_CHARS} characters of JSON`);
          const parsed = iacDecidePayloadSchema.safeParse(payload);
          if (!parsed.success) throw refusal('INVALID_INPUT', `invalid decide payload: ${describeIssues(parsed.error.issues)}`);
          if (this.state !== 'AWAITING_APPROVAL') throw refusal('INVALID_STATE', `IaC run ${this.admitted?.runId ?? ''} is ${this.state}, not AWAITING_APPROVAL`);
          if (this.approvals.inbox.full) throw refusal('RATE_LIMITED', 'too many approvals are waiting to be judged; try again shortly');
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
      sandboxId: run === undefined ? text(raw.sandboxId) || null : (run.sandboxId ?? null),
      target: run === undefined ? null : (run.target ?? null),
      principal: run?.principal ?? text(raw.principal),
      stack: run?.stack ?? text(raw.stack),
      source: run?.source ?? { kind: 'template', name: '' },
      plan: this.plan,
      decision: this.decision === null ? null : { effect: this.decision.effect, reasons: [...this.decision.reasons] },
      proof: this.proof,
      approvalsNeeded: this.approvalsNeeded,
      approvals: [...this.approvals.given],
      approvalAttempts: [...this.approvals.ignored],
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
    // Each upsert is a history event: only a change of state is one (a flood of ignored approvals is not).
    if (first && this.admitted !== undefined) {
      upsertSearchAttributes([
        ...attributes,
        { key: SandboxPrincipal, value: this.run.principal },
        ...(this.run.sandboxId !== undefined ? [{ key: SandboxCapability, value: 'cloud.iac.local' as const }] : []),
        { key: IacTarget, value: this.where },
      ]);
    } else if (first || this.shownState !== this.state) {
      upsertSearchAttributes(attributes);
    }
    this.shownState = this.state;
    const details =
      this.plan === null || this.admitted === undefined
        ? this.waitingFor
        : planDetailsMarkdown(this.plan, {
            runId: this.run.runId,
            stack: this.run.stack,
            target: this.whereText,
            proof: this.proof,
            crossCheck: this.plan.crossCheck,
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
      const home = this.run.sandboxId !== undefined ? { sandboxId: this.run.sandboxId } : { target: this.run.target as string };
      await storeActivities().recordIacOperations({ home, workflowId: workflowInfo().workflowId, operations: [operation] });
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
      if (run.target !== undefined) this.targetRecord = await storeActivities().iacTarget({ name: run.target });
      const capability = this.targetRecord === undefined ? 'cloud.iac.local' : capabilityOfEnvironment(this.targetRecord.environment);
      if (this.targetRecord !== undefined) upsertSearchAttributes([{ key: SandboxCapability, value: capability }]);
      const screening = await storeActivities().screenIacRun({ principal: run.principal, template: run.template, capability });
      this.decision = screening.decision;
      if (screening.decision.effect === 'deny') throw new IacRefused('DENIED', screening.decision.code ?? 'POLICY_DENIED', screening.decision.reasons.join('; '));
      this.approvalsNeeded = this.targetRecord !== undefined ? approvalsNeeded(this.targetRecord.environment) : screening.decision.effect === 'require_approval' ? 1 : 0;
      if (this.targetRecord !== undefined && run.mode === 'apply') await this.findProof();
      this.enter('PLANNING', `Waiting for the turn of stack ${run.stack} in ${this.whereText}.`);
      const leaseMs = RUN_BUDGET_MS + (run.mode === 'apply' ? screening.approvalTimeoutSeconds * 1000 : 0);
      this.turn = new IacStackTurn(run, this.targetRecord);
      this.granted = await this.turn.claim(leaseMs, templateServices(run.template), (behind, leaseUntilMs) =>
        this.enter('PLANNING', `Waiting for stack ${run.stack}: run ${behind} changes it now (its turn ends by ${iso(leaseUntilMs)} at the latest).`),
      );
      this.enter('PLANNING', `Planning stack ${run.stack} in ${this.whereText}.`);
      const planned = await planningSteps(this.granted.taskQueue).planIacChange(this.changeRequest());
      this.plan = planned.plan;
      await this.audit('iac_planned', 'plane', 'planned', null, {
        digest: planned.plan.digest,
        changes: planned.plan.changes.length,
        unsupported: planned.plan.unsupported.length,
        security: planned.plan.security.length,
      });
      await this.screenPlan(capability);
      if (run.mode === 'plan') {
        const seeded = run.source.kind === 'cdk' && run.sandboxId !== undefined ? " (but for the CDK bootstrap parameter, the plane's own, which it keeps in the sandbox)" : '';
        const next =
          planned.plan.changes.length === 0
            ? `the stack already matches this template: applying it would change nothing`
            : `to make these changes, apply the same template and parameters to ${this.whereText} (sandboxctl iac apply)`;
        this.enter('PLANNED', `Planned: nothing was changed${seeded}; ${next}.`);
        return;
      }
      if (this.approvalsNeeded > 0) await this.awaitApproval(screening.approvalTimeoutSeconds);
      await this.apply();
    } catch (err) {
      if (err instanceof IacRefused) {
        this.error = { code: err.code, message: err.message };
        await this.audit(`iac_${err.state.toLowerCase()}`, 'plane', err.state.toLowerCase(), err.message, { code: err.code });
        this.enter(err.state, `${err.state === 'DENIED' ? 'Refused' : 'Failed'} (${err.code}): ${err.message}`);
        return;
      }
      if (isCancellation(err)) throw err;
      const error = noWorkerFor(err, this.granted) ?? failureCode(err, 'INTERNAL');
      this.error = error;
      await this.audit('iac_failed', 'plane', 'failed', error.message, { code: error.code });
      this.enter('FAILED', `Failed (${error.code}): ${error.message}`);
    }
  }

  /**
   * Screens the plan as well as the template (DESIGN §14): what it removes or replaces is
   * screened by its service too, and a change that loses data needs a person whatever the
   * row says. Asked only when the plan adds something to judge.
   */
  private async screenPlan(capability: Capability): Promise<void> {
    const run = this.run;
    const fromTemplate = templateServices(run.template);
    const screening = planScreening((this.plan as ShownPlan).changes);
    const more = screening.services.some((service) => !fromTemplate.includes(service));
    if (!more && screening.dataLoss.length === 0) return;
    const services = [...new Set([...fromTemplate, ...screening.services])].sort();
    const again = await storeActivities().screenIacRun({ principal: run.principal, capability, plan: { services, dataLoss: screening.dataLoss } });
    this.decision = again.decision;
    if (again.decision.effect === 'deny')
      throw new IacRefused('DENIED', again.decision.code ?? 'POLICY_DENIED', `${again.decision.reasons.join('; ')} (screened with what the plan removes or replaces)`);
    if (again.decision.effect === 'require_approval') this.approvalsNeeded = Math.max(this.approvalsNeeded, 1);
  }

  /**
   * The gate of a promotion: the same template and parameters APPLIED, every supported
   * resource verified, in a sandbox of the same principal within the window. Without it
   * the run ends before anything is asked of the target.
   */
  private async findProof(): Promise<void> {
    const run = this.run;
    const digest = templateDigest(run.template, run.parameters);
    this.proof = await storeActivities().findIacProof({ principal: run.principal, templateDigest: digest, withinSeconds: PROOF_WINDOW_SECONDS });
    if (this.proof === null) {
      await this.audit('iac_proof_missing', 'plane', 'refused', null, { templateDigest: digest });
      throw new IacRefused(
        'FAILED',
        'PROOF_MISSING',
        `no sandbox of ${run.principal} APPLIED this template with these parameters (digest ${digest}) with every supported resource verified in the last ${PROOF_WINDOW_SECONDS / 3600} h; nothing was asked of ${this.whereText}`,
      );
    }
    await this.audit('iac_proof_found', 'plane', 'proof', null, { templateDigest: digest, ...this.proof });
  }

  private changeRequest() {
    const granted = this.granted as Granted;
    return { place: granted.place, runId: this.run.runId, stack: this.run.stack, template: this.run.template, parameters: this.run.parameters };
  }

  private async awaitApproval(timeoutSeconds: number): Promise<void> {
    const run = this.run;
    const plan = this.plan as ShownPlan;
    const deadlineMs = Date.now() + timeoutSeconds * 1000;
    const needed = this.approvalsNeeded;
    const waitingNow = () =>
      `Waiting for ${needed === 1 ? 'a reviewer' : `${needed - this.approvals.given.length} more of ${needed} different reviewers`} to approve plan ${plan.digest} by ${iso(deadlineMs)}, ` +
      `each with their current code; ${run.principal}, who asked, cannot.`;
    let waiting = waitingNow();
    this.enter('AWAITING_APPROVAL', waiting);
    await this.audit('iac_awaiting_approval', 'policy', 'require_approval', (this.decision?.reasons ?? []).join('; ') || null, { digest: plan.digest });
    for (;;) {
      const remaining = deadlineMs - Date.now();
      if (remaining <= 0 || !(await condition(() => this.approvals.inbox.size > 0 || this.turn?.ended !== undefined, remaining))) {
        this.approvals.inbox.closeWith('the run has EXPIRED, no longer awaiting approval');
        throw new IacRefused('EXPIRED', 'APPROVAL_EXPIRED', `no approval within ${formatDuration(timeoutSeconds)}; nothing was applied`);
      }
      const ended = this.turn?.ended;
      if (ended !== undefined) {
        this.approvals.inbox.closeWith('the sandbox is no longer READY');
        throw new IacRefused('FAILED', ended.code, ended.message);
      }
      const pending = this.approvals.inbox.take() as PendingApproval;
      const attempt = await this.approvals.judge(pending, plan.digest, needed);
      pending.verdict = attempt;
      if (attempt.verdict === 'ignored' && this.approvals.ignoredInAll >= MAX_IGNORED_APPROVALS) {
        // Each judged attempt stays in the history: a flood must not grow it until Temporal ends the run without a verdict.
        this.approvals.inbox.closeWith('the run has ended: too many approvals that did not count');
        throw new IacRefused('DENIED', 'RATE_LIMITED', `${MAX_IGNORED_APPROVALS} approvals or denials did not count; nothing was applied. Apply again for a fresh run`);
      }
      if (attempt.verdict === 'ignored') {
        // Whoever signalled from the UI reads why here: a signal has no answer of its own.
        this.waitingFor = `${waiting} The last ${attempt.signal} (${attempt.approver ?? 'unnamed'}, ${attempt.at}) was ignored: ${attempt.reason}`;
        this.show();
        continue;
      }
      const approval = this.approvals.count(attempt);
      if (pending.signal === 'deny') {
        this.approvals.inbox.closeWith('the run was denied already');
        throw new IacRefused('DENIED', 'APPROVAL_DENIED', `denied by ${approval.approver}${approval.reason ? `: ${approval.reason}` : ''}; nothing was applied`);
      }
      await this.audit('iac_approved', approval.approver, 'allow', approval.reason || null, { digest: plan.digest, approvals: this.approvals.given.length, needed });
      if (this.approvals.given.length >= needed) {
        this.approvals.inbox.closeWith('the run was approved already');
        return;
      }
      waiting = waitingNow();
      this.waitingFor = `${waiting} Approved so far by ${this.approvals.given.map((given) => given.approver).join(', ')}.`;
      this.show();
      this.approvals.answer(pending);
    }
  }

  /** Applies the approved plan: planned again against the stack as it is now, executed once, waited for and checked. */
  private async apply(): Promise<void> {
    const run = this.run;
    const granted = this.granted as Granted;
    const approved = (this.plan as ShownPlan).digest;
    const leftBehind =
      granted.place.kind === 'sandbox'
        ? ' The sandbox is checkpointed first, so that a failed apply can be undone.'
        : ' A failed apply is rolled back by CloudFormation as it does; what the stack then holds is listed here.';
    this.enter('APPLYING', `Applying plan ${approved} to stack ${run.stack} in ${this.whereText}.${leftBehind}`);
    // Before the change set is made: put back, the sandbox holds neither it nor a new stack's shell.
    if (granted.place.kind === 'sandbox') await this.takeCheckpoint(new IacCheckpoint(granted.place, granted.taskQueue));
    const steps = planningSteps(granted.taskQueue);
    const prepared = await steps.prepareIacApply(this.changeRequest());
    if (prepared.plan.digest !== approved) {
      await steps.discardIacApply({ place: granted.place, runId: run.runId, stack: run.stack });
      this.plan = prepared.plan;
      throw new IacRefused('FAILED', 'PLAN_STALE', `stack ${run.stack} changed since the plan was approved (plan ${approved}, now ${prepared.plan.digest}); nothing was applied: plan again`);
    }
    this.removed = prepared.removed;
    this.preexisting = prepared.preexisting;
    // The proof must still hold when the change is made, not only when it was asked for.
    if (this.targetRecord !== undefined) await this.findProof();
    const lost = this.turn?.ended;
    if (lost !== undefined) {
      await steps.discardIacApply({ place: granted.place, runId: run.runId, stack: run.stack });
      throw new IacRefused('FAILED', lost.code, `${lost.message}; nothing was applied`);
    }
    this.applyStarted = true;
    this.applyStartedAt = new Date().toISOString();
    let executionError: string | null = null;
    try {
      const executed = await executeStep(granted.taskQueue).executeIacChange({ place: granted.place, runId: run.runId, stack: run.stack });
      if (executed.outcome === 'failed') executionError = executed.error;
    } catch (err) {
      if (isCancellation(err)) throw err;
      // Whether it ran is unknown: the stack is waited for and checked as if it had, and says.
      log.warn("the change set's execution did not answer; waiting for the stack", { error: failureCode(err, 'INTERNAL').message });
    }
    await this.settle(executionError);
  }

  /** The sandbox's state before the apply (DESIGN §14, §15): recorded in its trail, and said in the run's details. */
  private async takeCheckpoint(checkpoint: IacCheckpoint): Promise<void> {
    this.checkpoint = checkpoint;
    const taken = await checkpoint.take();
    if (taken !== undefined) await this.audit('iac_checkpoint', 'plane', 'snapshot', null, taken);
    this.waitingFor = `${this.waitingFor.replace(/ The sandbox is checkpointed first.*$/, '')} ${checkpoint.promise}`;
    this.show();
  }

  /** Waits for the stack, checks it, and gives the verdict: APPLIED only when the stack holds what the plan said. */
  private async settle(executionError: string | null, note = ''): Promise<void> {
    const run = this.run;
    const granted = this.granted as Granted;
    const outcome: AppliedChange = await settleStep(granted.taskQueue).settleIacChange({
      ...this.changeRequest(),
      removed: this.removed,
      preexisting: this.preexisting,
      executionError,
      sinceIso: this.applyStartedAt,
    });
    this.resources = outcome.resources;
    this.events = outcome.events;
    const summary = {
      stackStatus: outcome.stackStatus,
      resources: outcome.resources.map((row) => `${row.logicalId}:${row.status}`),
      // What a promotion's proof is looked up by (see findProof).
      principal: run.principal,
      templateDigest: templateDigest(run.template, run.parameters),
      // A template the sandbox could not make any of proves nothing.
      allVerified: outcome.ok && outcome.resources.some((row) => row.status === 'VERIFIED') && outcome.resources.every((row) => PROVEN_STATUSES.has(row.status)),
    };
    if (outcome.ok) {
      await this.audit('iac_applied', 'plane', 'applied', null, summary);
      this.enter('APPLIED', `${note ? `${note} ` : ''}Applied to stack ${run.stack}: ${describeRows(outcome.resources)}.`);
      return;
    }
    this.error = { code: 'IAC_APPLY_FAILED', message: outcome.problems.join('; ') };
    await this.audit('iac_failed', 'plane', 'failed', this.error.message, summary);
    const undone = await this.checkpoint?.putBack();
    if (undone?.restored === true) await this.audit('iac_rolled_back', 'plane', 'restored', null, { stack: run.stack });
    this.enter('FAILED', `${note ? `${note} ` : ''}Failed: ${this.error.message}. ${undone?.note ?? 'What the stack holds is in resources.'}`);
  }

  /** A cancelled run ends with a verdict: after the apply began, what the stack holds is checked first. */
  async cancelled(): Promise<void> {
    this.approvals.inbox.closeWith('the run was cancelled');
    if (this.admitted === undefined || isIacTerminal(this.state)) return;
    if (this.applyStarted && this.granted !== undefined) {
      try {
        // A change set once executed runs to its end: the run waits for it, and says what it made.
        await this.settle(null, 'The run was cancelled during the apply, too late to stop it.');
        return;
      } catch (err) {
        this.error = failureCode(err, 'INTERNAL');
      }
    }
    this.error ??= { code: 'INVALID_STATE', message: 'the run was cancelled before anything was applied' };
    await this.audit('iac_failed', 'plane', 'failed', this.error.message, { code: this.error.code });
    this.enter('FAILED', `Cancelled (${this.error.code}): ${this.error.message}.`);
  }

  /** Gives the stack's turn (or the run's place in line) back to its keeper, whatever happened. */
  async finish(): Promise<void> {
    await this.turn?.release();
  }
}

/** A step nobody picked up: no worker serves the queue of the run's sandbox host or of targets, said so with what to start. */
function noWorkerFor(err: unknown, granted: Granted | undefined): { code: ErrorCode; message: string } | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  if (!(cause instanceof TimeoutFailure) || cause.timeoutType !== 'SCHEDULE_TO_START' || granted === undefined) return undefined;
  const start = granted.place.kind === 'target' ? "`sandboxctl worker --role targets`, where the targets' AWS profiles are" : "the docker worker of the sandbox's host";
  return { code: 'PROVISION_UNAVAILABLE', message: `no worker took the step from ${granted.taskQueue} within ${STEP_PICKUP}: start ${start}` };
}

function describeRows(rows: readonly IacResourceRow[]): string {
  const counts = new Map<string, number>();
  for (const row of rows) counts.set(row.status, (counts.get(row.status) ?? 0) + 1);
  return [...counts].map(([status, count]) => `${count} ${status}`).join(', ') || 'no resources';
}
