import { isCancellation, log, setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { PlannedChange } from '../activities';
import type { ErrorCode } from '../domain/error-codes';
import {
  iacRequestDigest,
  iacTargetOfSandbox,
  iacTargetOfTarget,
  type AdmittedIacRun,
  type IacProof,
  type IacResourceRow,
  type IacState,
  type IacStatus,
  type ShownPlan,
} from '../domain/iac/iac-run';
import type { IacDecision } from '../domain/iac/iac-screening';
import { planDetailsMarkdown } from '../domain/iac/plan-text';
import { IacState as IacStateKey, IacTarget, SandboxCapability, SandboxPrincipal } from '../domain/search-attributes';
import type { TargetRecord } from '../domain/targets';
import { storeActivities } from './activity-routes';
import { IacApprovals } from './iac-approvals';
import type { IacCheckpoint } from './iac-checkpoint';
import type { Granted, IacStackTurn } from './iac-stack-turn';
import { failureCode } from './workflow-failures';

/** What a run shows: its state and what it waits for, the plan and the policy's word, and what the apply made. */
export interface IacShown {
  state: IacState;
  waitingFor: string;
  plan: ShownPlan | null;
  decision: IacDecision | null;
  resources: readonly IacResourceRow[];
  events: readonly string[];
  error: { code: ErrorCode; message: string } | null;
  proof: IacProof | null;
  approvalsNeeded: number;
}

/** Where the run works: the target it promotes to, and the stack's turn once asked for and granted. */
export interface IacPlaceState {
  target?: TargetRecord;
  turn?: IacStackTurn;
  granted?: Granted;
}

/** The apply, once it began: when, what the change removes and found already there, and the sandbox's checkpoint. */
export interface IacApplyState {
  started: boolean;
  startedAt: string | null;
  removed: PlannedChange['removed'];
  preexisting: PlannedChange['preexisting'];
  checkpoint?: IacCheckpoint;
}

/**
 * One IaC run's state (DESIGN §14), in small objects with one job each: what it shows
 * (`shown`), where it works (`place`), its apply (`apply`) and its approvals; and how it
 * tells: search attributes, the UI's details and the audit trail.
 */
export class IacRunContext {
  readonly digest: string;
  readonly createdAt = new Date().toISOString();
  private updatedAt = this.createdAt;
  readonly shown: IacShown;
  readonly place: IacPlaceState = {};
  readonly apply: IacApplyState = { started: false, startedAt: null, removed: [], preexisting: {} };
  readonly approvals: IacApprovals;
  private auditStep = 0;
  private shownState: IacState | undefined;

  /** @param admitted the run's checked input, or undefined when it was refused (`refusal` says why) */
  constructor(
    private readonly input: unknown,
    readonly admitted: AdmittedIacRun | undefined,
    refusal: string | undefined,
  ) {
    this.digest = admitted === undefined ? '' : iacRequestDigest(admitted);
    this.approvals = new IacApprovals(admitted?.principal ?? '', (action, actor, effect, reason) => this.audit(action, actor, effect, reason));
    this.shown = {
      state: refusal === undefined ? 'PLANNING' : 'FAILED',
      waitingFor: refusal === undefined ? 'Screening the change against flags and policy.' : `Refused (INVALID_INPUT): ${refusal}. Nothing was planned or applied.`,
      plan: null,
      decision: null,
      resources: [],
      events: [],
      error: refusal === undefined ? null : { code: 'INVALID_INPUT', message: refusal },
      proof: null,
      approvalsNeeded: 0,
    };
    this.show(true);
  }

  /** The admitted run; only asked for once the run was admitted. */
  get run(): AdmittedIacRun {
    return this.admitted as AdmittedIacRun;
  }

  /** What the run changes, as its search attribute and plan name it: `sandbox:<id>` or `target:<name>`. */
  get where(): string {
    const { sandboxId, target } = this.run;
    return sandboxId !== undefined ? iacTargetOfSandbox(sandboxId) : iacTargetOfTarget(target as string);
  }

  /** The same, in words. */
  get whereText(): string {
    const { sandboxId, target } = this.run;
    return sandboxId !== undefined ? `sandbox ${sandboxId}` : `target ${target as string}`;
  }

  /** The granted turn's place and queue; only asked for once granted. */
  get granted(): Granted {
    return this.place.granted as Granted;
  }

  /** What every planning step needs. */
  changeRequest() {
    return { place: this.granted.place, runId: this.run.runId, stack: this.run.stack, template: this.run.template, parameters: this.run.parameters, principal: this.run.principal };
  }

  status(): IacStatus {
    const run = this.admitted;
    const raw = (this.input ?? {}) as { runId?: unknown; mode?: unknown; sandboxId?: unknown; principal?: unknown; stack?: unknown };
    const text = (value: unknown) => (typeof value === 'string' ? value.slice(0, 200) : '');
    const { shown } = this;
    return {
      runId: run?.runId ?? text(raw.runId),
      workflowId: workflowInfo().workflowId,
      requestDigest: this.digest,
      state: shown.state,
      mode: run?.mode ?? (raw.mode === 'apply' ? 'apply' : 'plan'),
      sandboxId: run === undefined ? text(raw.sandboxId) || null : (run.sandboxId ?? null),
      target: run === undefined ? null : (run.target ?? null),
      principal: run?.principal ?? text(raw.principal),
      stack: run?.stack ?? text(raw.stack),
      source: run?.source ?? { kind: 'template', name: '' },
      plan: shown.plan,
      decision: shown.decision === null ? null : { effect: shown.decision.effect, reasons: [...shown.decision.reasons] },
      proof: shown.proof,
      approvalsNeeded: shown.approvalsNeeded,
      approvals: [...this.approvals.given],
      approvalAttempts: [...this.approvals.ignored],
      resources: [...shown.resources],
      events: [...shown.events],
      waitingFor: shown.waitingFor,
      error: shown.error,
      createdAt: this.createdAt,
      updatedAt: this.updatedAt,
    };
  }

  /** Search attributes and the UI's details: the plan in full once there is one, the sentence before. */
  show(first = false): void {
    this.updatedAt = new Date().toISOString();
    const { state, plan, waitingFor } = this.shown;
    const attributes = [{ key: IacStateKey, value: state }];
    // Each upsert is a history event: only a change of state is one (a flood of ignored approvals is not).
    if (first && this.admitted !== undefined) {
      upsertSearchAttributes([
        ...attributes,
        { key: SandboxPrincipal, value: this.run.principal },
        ...(this.run.sandboxId !== undefined ? [{ key: SandboxCapability, value: 'cloud.iac.local' as const }] : []),
        { key: IacTarget, value: this.where },
      ]);
    } else if (first || this.shownState !== state) {
      upsertSearchAttributes(attributes);
    }
    this.shownState = state;
    const details =
      plan === null || this.admitted === undefined
        ? waitingFor
        : planDetailsMarkdown(plan, {
            runId: this.run.runId,
            stack: this.run.stack,
            target: this.whereText,
            proof: this.shown.proof,
            crossCheck: plan.crossCheck,
            principal: this.run.principal,
            state,
            waitingFor,
          });
    setCurrentDetails(details);
  }

  enter(state: IacState, waitingFor: string): void {
    this.shown.state = state;
    this.shown.waitingFor = waitingFor;
    this.show();
  }

  /** What the run waits for now, said without a change of state. */
  tell(waitingFor: string): void {
    this.shown.waitingFor = waitingFor;
    this.show();
  }

  /** One row of the trail: the sandbox's, or the target's. A store outage loses the row, never the run. */
  async audit(action: string, actor: string, effect: string, reason: string | null, summary: Record<string, unknown> = {}): Promise<void> {
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
}
