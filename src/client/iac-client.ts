import { AesGcmPayloadCodec } from '../codec/aes-gcm-codec';
import { agentIacView } from '../domain/caller-view';
import { randomBytes } from 'node:crypto';
import { WithStartWorkflowOperation, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import { z } from 'zod';
import { IAC_RUN_WORKFLOW, IAC_WORKFLOW_ID_PREFIX, iacWorkflowIdFor, workflowIdFor } from '../domain/contract-names';
import { isErrorCode } from '../domain/error-codes';
import { SandboxPlaneError } from '../domain/errors';
import {
  iacHasReached,
  iacRequestDigest,
  iacRunIdSchema,
  iacRunInputSchema,
  iacTargetOfSandbox,
  iacTargetOfTarget,
  IAC_RUNS_IN_FLIGHT_PER_PRINCIPAL,
  type AdmittedIacRun,
  type IacAwaitTarget,
  type IacState,
  type IacStatus,
} from '../domain/iac/iac-run';
import { templateServices } from '../domain/iac/iac-screening';
import { isSealedParameterValue, noEchoParameters } from '../domain/iac/sealed-parameters';
import { defaultStackName, validateTemplate, type CfnTemplate } from '../domain/iac/template';
import { readTemplateText } from '../domain/iac/template-yaml';
import { sandboxIdSchema } from '../domain/sandbox-id';
import { targetNameSchema } from '../domain/targets';
import { IacState as IacStateKey, IacTarget, SandboxCapability, SandboxPrincipal } from '../domain/search-attributes';
import { parseOrThrow } from '../domain/validation';
import { iacAwaitUpdate, iacDecideUpdate, iacStatusQuery } from '../workflows/iac-messages';
import { statusQuery } from '../workflows/sandbox-messages';
import { sandboxNotFound } from './sandbox-not-found';
import { toSandboxError } from './client-errors';
import { quoted } from './visibility-query';
import { PlaneClient } from './plane-client';
import { StoreClient } from './store-client';
import { synthesizeCdkApp } from './cdk-synth';

/**
 * What to plan or apply: a template (its text, JSON or YAML, or the parsed object) or a
 * CDK app directory the caller's side synthesizes (`cdk synth` with the app's own
 * aws-cdk-lib; workers never run an agent's code).
 */
export interface IacRequest {
  /** The sandbox to change (one of the caller's)... */
  readonly sandboxId?: string;
  /** ...or the operator's target to promote to: only what was APPLIED in a sandbox of the caller within 24 h (PROOF_MISSING otherwise), and only with people's approval. */
  readonly target?: string;
  /** The template's text (JSON or YAML with CloudFormation's short tags) or its parsed JSON form. */
  readonly template?: string | Record<string, unknown>;
  /** Where the template came from, for reviewers and the default stack name (e.g. `stack.yaml`). */
  readonly templateName?: string;
  /** A CDK v2 app directory (with its cdk.json), instead of `template`. */
  readonly cdkApp?: string;
  /** The stack to change; by default derived from the template's file name (or the CDK stack's). */
  readonly stack?: string;
  readonly parameters?: Readonly<Record<string, string>>;
  /** Whose change it is; a principal-bound client fills in its own and refuses another. */
  readonly principal?: string;
  /** The run's id, the idempotency key (`iac-<runId>`); a fresh one when left out. */
  readonly runId?: string;
}

export interface IacWaitOptions {
  /** `planned` (default for apply): return once the plan is shown (and approval asked for, if needed). `ended`: once applied, refused or failed. */
  readonly wait?: IacAwaitTarget;
  /** Give up waiting after this long with WAIT_TIMEOUT; the run itself goes on. Default 10 minutes. */
  readonly timeoutMs?: number;
}

/** One row of `list`: what the search attributes say. */
export interface IacRunSummary {
  readonly runId: string;
  readonly workflowId: string;
  readonly state: IacState | null;
  readonly principal: string | null;
  readonly target: string | null;
  readonly startedAt: string;
  readonly workflowStatus: string;
}

const waitOptionsSchema = z
  .object({
    wait: z.enum(['planned', 'ended']).default('planned'),
    timeoutMs: z
      .number()
      .positive('must be positive')
      .max(86_400_000, 'must be at most a day (86400000)')
      .default(10 * 60_000),
  })
  .strict();

/** A fresh run id for a request that names none. */
export function generateIacRunId(): string {
  return `run-${randomBytes(6).toString('hex')}`;
}

/** States after which a run is over without having done what was asked. */
const UNSUCCESSFUL: ReadonlySet<IacState> = new Set(['FAILED', 'DENIED', 'EXPIRED']);

/** Temporal keeps a run's workflow this long at most: well past any approval timeout and apply. */
const RUN_EXECUTION_TIMEOUT = '3 days';

/**
 * Infrastructure as code in a sandbox (DESIGN §14): plans, applies, approvals and their
 * status, as `sandboxctl iac …`, the MCP tools and agents' programs use them. Every
 * method throws a {@link SandboxPlaneError} with a taxonomy code; bad input (a malformed
 * template, an unknown intrinsic, an undeclared parameter, a bad stack name, over 1 MB)
 * is INVALID_INPUT before anything is started.
 *
 * @example
 * const run = await sandboxes.iac.plan({ sandboxId: 'sbx-1', template: readFileSync('stack.yaml', 'utf8'), templateName: 'stack.yaml' });
 * console.log(run.plan?.changes);
 */
export class IacClient extends PlaneClient {
  /** Plans a change: the run ends PLANNED, with nothing changed in the sandbox. */
  async plan(request: IacRequest, options: Omit<IacWaitOptions, 'wait'> = {}): Promise<IacStatus> {
    return this.start('plan', request, { ...options, wait: 'ended' });
  }

  /**
   * Plans and applies a change, through approval when policy asks for one. Returns once
   * the plan is shown (`wait: 'planned'`), or once the run ended (`wait: 'ended'`); a run
   * that ends FAILED, DENIED or EXPIRED throws its code, its status in `details.status`.
   */
  async apply(request: IacRequest, options: IacWaitOptions = {}): Promise<IacStatus> {
    return this.start('apply', request, options);
  }

  /**
   * Waits inside a run until it is planned or has ended (as `apply` does with its start),
   * and answers like `apply`: a run that ends FAILED, DENIED or EXPIRED throws its code.
   */
  async waitFor(runId: string, options: IacWaitOptions = {}): Promise<IacStatus> {
    const { wait, timeoutMs } = parseOrThrow(waitOptionsSchema, options, 'IaC wait options');
    const current = await this.status(runId);
    let status: IacStatus;
    try {
      status = await this.client.workflow.getHandle(current.workflowId).executeUpdate(iacAwaitUpdate, { args: [{ until: wait, timeoutSeconds: Math.max(1, Math.ceil(timeoutMs / 1000)) }] });
    } catch (err) {
      // A run that has ended takes no update: its result is the answer.
      status = await this.finalStatus(current.runId).catch(() => {
        throw notFoundAsRun(err, current.runId);
      });
    }
    return this.settle(status, wait, timeoutMs);
  }

  /** A run's status (the workflow's `status` query); NOT_FOUND when there is none, or it is another principal's. */
  async status(runId: string): Promise<IacStatus> {
    const id = parseOrThrow(iacRunIdSchema, runId, 'IaC run id');
    let status: IacStatus;
    try {
      status = await this.client.workflow.getHandle(iacWorkflowIdFor(id)).query(iacStatusQuery);
    } catch (err) {
      throw notFoundAsRun(err, id);
    }
    return this.seenBy(status);
  }

  /** Runs by search attributes, newest first: all, or those of one sandbox. */
  async list(filter: { sandboxId?: string; target?: string; limit?: number } = {}): Promise<IacRunSummary[]> {
    const clauses = [`WorkflowType = ${quoted(IAC_RUN_WORKFLOW)}`];
    if (filter.sandboxId !== undefined) clauses.push(`IacTarget = ${quoted(iacTargetOfSandbox(parseOrThrow(sandboxIdSchema, filter.sandboxId, 'sandbox id')))}`);
    if (filter.target !== undefined) clauses.push(`IacTarget = ${quoted(iacTargetOfTarget(parseOrThrow(targetNameSchema, filter.target, 'target name')))}`);
    if (this.principal !== undefined) clauses.push(`SandboxPrincipal = ${quoted(this.principal)}`);
    const rows: IacRunSummary[] = [];
    try {
      for await (const execution of this.client.workflow.list({ query: clauses.join(' AND ') })) {
        const attributes = execution.typedSearchAttributes;
        rows.push({
          runId: execution.workflowId.slice(IAC_WORKFLOW_ID_PREFIX.length),
          workflowId: execution.workflowId,
          state: (attributes.get(IacStateKey) as IacState | undefined) ?? null,
          principal: attributes.get(SandboxPrincipal) ?? null,
          target: attributes.get(IacTarget) ?? null,
          startedAt: execution.startTime.toISOString(),
          workflowStatus: execution.status.name,
        });
        if (rows.length >= (filter.limit ?? 100)) break;
      }
    } catch (err) {
      throw toSandboxError(err, '(iac list)');
    }
    // Visibility lists open runs before closed ones: newest first is the caller's order.
    return rows.sort((a, b) => b.startedAt.localeCompare(a.startedAt));
  }

  /**
   * Approves a run AWAITING_APPROVAL: `planDigest` is the plan the approver read (by
   * default the one the run shows now); another is PLAN_STALE. `code` is the approver's
   * current TOTP code (APPROVAL_UNVERIFIED without a valid, unused one).
   */
  async approve(runId: string, approval: { approver: string; code?: string; reason?: string; planDigest?: string }): Promise<IacStatus> {
    return this.decide(runId, 'approve', approval);
  }

  /** Denies a run AWAITING_APPROVAL (it ends DENIED, nothing applied); see {@link approve}. */
  async deny(runId: string, denial: { approver: string; code?: string; reason?: string; planDigest?: string }): Promise<IacStatus> {
    return this.decide(runId, 'deny', denial);
  }

  private async decide(runId: string, decision: 'approve' | 'deny', payload: { approver: string; code?: string; reason?: string; planDigest?: string }): Promise<IacStatus> {
    // A bound caller sees only its own runs, which are the ones it must never decide.
    if (this.principal !== undefined) {
      throw new SandboxPlaneError('PRINCIPAL_MISMATCH', `this client acts as ${this.principal}, who cannot ${decision} an IaC run`, {
        hint: 'Reviewers decide with an unbound client (no SANDBOXPLANE_PRINCIPAL) and their own code.',
      });
    }
    const current = await this.status(runId);
    const planDigest = payload.planDigest ?? current.plan?.digest;
    if (planDigest === undefined) throw new SandboxPlaneError('INVALID_STATE', `IaC run ${current.runId} is ${current.state} and has no plan to ${decision} yet`);
    try {
      const status = await this.client.workflow.getHandle(current.workflowId).executeUpdate(iacDecideUpdate, {
        args: [{ decision, approver: payload.approver, reason: payload.reason ?? '', planDigest, ...(payload.code !== undefined ? { code: payload.code } : {}) }],
      });
      return this.seenBy(status);
    } catch (err) {
      const mapped = notFoundAsRun(err, current.runId);
      if (mapped.code === 'NOT_FOUND' || mapped.code === 'INTERNAL') {
        const after = await this.status(runId).catch(() => undefined);
        if (after !== undefined && after.state !== 'AWAITING_APPROVAL') {
          throw new SandboxPlaneError('INVALID_STATE', `IaC run ${after.runId} is ${after.state}, not AWAITING_APPROVAL`, {
            hint: `\`sandboxctl iac status ${after.runId}\` shows it.`,
            details: { status: after },
          });
        }
      }
      throw mapped;
    }
  }

  /** The run's input, checked here as the workflow checks it again: bad input never starts a run. */
  private async prepare(mode: 'plan' | 'apply', request: IacRequest): Promise<AdmittedIacRun> {
    const principal = this.asCaller(request.principal);
    let template: CfnTemplate;
    let source: { kind: 'template' | 'cdk'; name: string };
    let stack = request.stack;
    if ((request.template === undefined) === (request.cdkApp === undefined)) {
      throw new SandboxPlaneError('INVALID_INPUT', 'give exactly one of template (a template file) and cdkApp (a CDK app directory)');
    }
    if (request.cdkApp !== undefined) {
      const synthesized = await synthesizeCdkApp(request.cdkApp, stack === undefined ? {} : { stack });
      template = synthesized.template as CfnTemplate;
      source = { kind: 'cdk', name: `${request.cdkApp} (${synthesized.stackName})` };
      stack ??= defaultStackName(synthesized.stackName);
    } else {
      const name = request.templateName ?? 'template';
      template = (typeof request.template === 'string' ? readTemplateText(request.template, name) : request.template) as CfnTemplate;
      source = { kind: 'template', name };
      stack ??= defaultStackName(name);
    }
    const given = { ...(request.parameters ?? {}) };
    validateTemplate(template, given);
    const parameters = this.sealNoEcho(template, given, principal);
    return parseOrThrow(
      iacRunInputSchema,
      {
        runId: request.runId ?? generateIacRunId(),
        mode,
        ...(request.sandboxId !== undefined ? { sandboxId: request.sandboxId } : {}),
        ...(request.target !== undefined ? { target: request.target } : {}),
        principal,
        stack,
        template,
        parameters,
        source,
      },
      'IaC request',
    );
  }

  /**
   * NoEcho values sealed before they enter the run's input (DESIGN §14), with the keys of
   * this client's payload codec; without the plane's codec there is nothing to seal with,
   * and they are refused rather than sent in clear.
   */
  private sealNoEcho(template: CfnTemplate, parameters: Record<string, string>, principal: string): Record<string, string> {
    const secret = noEchoParameters(template).filter((name) => Object.hasOwn(parameters, name) && !isSealedParameterValue(parameters[name] as string));
    if (secret.length === 0) return parameters;
    const codec = this.client.options.loadedDataConverter.payloadCodecs.find((one): one is AesGcmPayloadCodec => one instanceof AesGcmPayloadCodec);
    if (codec === undefined) {
      throw new SandboxPlaneError('INVALID_INPUT', `NoEcho parameters (${secret.join(', ')}) are sealed with the plane's payload codec keys, and this client has none`, {
        hint: "Connect with the plane's payload codec (the default of SandboxClient.connect), or leave the NoEcho parameters to their Defaults.",
      });
    }
    const seal = codec.parameterSeal();
    return Object.fromEntries(Object.entries(parameters).map(([name, value]) => [name, secret.includes(name) ? seal.seal({ principal, parameter: name }, value) : value]));
  }

  /**
   * Ownership before anything is written (DESIGN §18): a sandbox that is not the run's
   * principal's reads exactly like one that does not exist, and no run, audit row or
   * signal reaches it. The lifecycle's `status` query writes no history.
   */
  private async ownSandbox(sandboxId: string, principal: string): Promise<void> {
    let owner: string;
    try {
      owner = (await this.client.workflow.getHandle(workflowIdFor(sandboxId)).query(statusQuery)).principal;
    } catch (err) {
      throw toSandboxError(err, sandboxId);
    }
    if (owner !== principal) throw sandboxNotFound(sandboxId);
  }

  /** Whether a run of this id was ever started (a repeated request joins it, and is admitted again by nobody). */
  private async runExists(workflowId: string): Promise<boolean> {
    try {
      await this.client.workflow.getHandle(workflowId).describe();
      return true;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return false;
      throw toSandboxError(err, workflowId);
    }
  }

  /**
   * What a new run must pass before its template enters history (DESIGN §11 "Bounds and
   * ownership"): its principal's runs open at once, and the policy rows over the template's
   * services. The run screens again once started (the plan's services count too); this
   * first look only keeps what policy already refuses out of history.
   */
  private async admit(mode: 'plan' | 'apply', run: AdmittedIacRun): Promise<void> {
    const query = `WorkflowType = ${quoted(IAC_RUN_WORKFLOW)} AND ExecutionStatus = 'Running' AND ${SandboxPrincipal.name} = ${quoted(run.principal)}`;
    const { count } = await this.client.workflow.count(query);
    if (count >= IAC_RUNS_IN_FLIGHT_PER_PRINCIPAL) {
      throw new SandboxPlaneError(
        'QUOTA_EXCEEDED',
        `${run.principal} has ${count} IaC runs open; at most ${IAC_RUNS_IN_FLIGHT_PER_PRINCIPAL} may be at once, so run ${run.runId} was not started`,
        {
          hint: 'Wait for one to end (`sandboxctl iac list` shows them; one awaiting approval ends when a reviewer decides or its approval times out).',
          details: { runId: run.runId },
        },
      );
    }
    const decision = await new StoreClient(this.sameCaller).screenIacRun({
      principal: run.principal,
      services: templateServices(run.template),
      ...(run.target !== undefined ? { target: run.target } : {}),
    });
    if (decision.effect === 'deny') {
      throw new SandboxPlaneError(decision.code ?? 'POLICY_DENIED', `IaC ${mode} of stack ${run.stack} refused before it started: ${decision.reasons.join('; ')}`, {
        details: { runId: run.runId },
      });
    }
  }

  private async start(mode: 'plan' | 'apply', request: IacRequest, options: IacWaitOptions): Promise<IacStatus> {
    const { wait, timeoutMs } = parseOrThrow(waitOptionsSchema, options, 'IaC wait options');
    const run = await this.prepare(mode, request);
    if (run.sandboxId !== undefined) await this.ownSandbox(run.sandboxId, run.principal);
    const digest = iacRequestDigest(run);
    const workflowId = iacWorkflowIdFor(run.runId);
    if (!(await this.runExists(workflowId))) await this.admit(mode, run);
    const startOperation = new WithStartWorkflowOperation(IAC_RUN_WORKFLOW, {
      taskQueue: this.taskQueue,
      workflowId,
      args: [run],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      workflowExecutionTimeout: RUN_EXECUTION_TIMEOUT,
      typedSearchAttributes: [
        { key: IacStateKey, value: 'PLANNING' },
        { key: SandboxPrincipal, value: run.principal },
        ...(run.sandboxId !== undefined ? [{ key: SandboxCapability, value: 'cloud.iac.local' }] : []),
        { key: IacTarget, value: run.sandboxId !== undefined ? iacTargetOfSandbox(run.sandboxId) : iacTargetOfTarget(run.target as string) },
      ],
      staticSummary: `IaC ${mode} of stack ${run.stack} in ${run.sandboxId !== undefined ? `sandbox ${run.sandboxId}` : `target ${run.target as string}`} for ${run.principal}`,
    });
    let status: IacStatus;
    try {
      // One call: starts the run (or joins it) and waits inside it.
      status = await this.client.workflow.executeUpdateWithStart(iacAwaitUpdate, {
        args: [{ until: wait, requestDigest: digest, timeoutSeconds: Math.max(1, Math.ceil(timeoutMs / 1000)) }],
        startWorkflowOperation: startOperation,
      });
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw notFoundAsRun(err, run.runId);
      status = await this.finalStatus(run.runId);
      if (status.requestDigest !== digest) {
        throw new SandboxPlaneError('IDEMPOTENCY_CONFLICT', `IaC run ${run.runId} exists for a different request`, {
          hint: 'Choose another run id, or leave it out.',
          details: { runId: run.runId },
        });
      }
    }
    return this.settle(status, wait, timeoutMs);
  }

  private async finalStatus(runId: string): Promise<IacStatus> {
    try {
      return await this.client.workflow.getHandle(iacWorkflowIdFor(runId)).result();
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw notFoundAsRun(err, runId);
      return this.status(runId);
    }
  }

  private settle(status: IacStatus, until: IacAwaitTarget, timeoutMs: number): IacStatus {
    const seen = this.seenBy(status);
    if (UNSUCCESSFUL.has(seen.state)) {
      const code = isErrorCode(seen.error?.code) ? seen.error.code : 'INTERNAL';
      // An unknown target is the run's NOT_FOUND too: its hint is the targets'.
      const hint = code === 'NOT_FOUND' && seen.target !== null ? { hint: '`sandboxctl targets list` shows the targets an operator registered.' } : {};
      throw new SandboxPlaneError(code, `IaC run ${seen.runId} is ${seen.state}: ${seen.error?.message ?? seen.waitingFor}`, { ...hint, details: { status: seen, runId: seen.runId } });
    }
    if (!iacHasReached(until, seen.state)) {
      throw new SandboxPlaneError('WAIT_TIMEOUT', `IaC run ${seen.runId} is still ${seen.state} after ${Math.round(timeoutMs / 1000)} s: ${seen.waitingFor}`, {
        hint: `The run goes on: \`sandboxctl iac status ${seen.runId}\` shows it (or wait longer with --timeout).`,
        details: { status: seen, runId: seen.runId },
      });
    }
    return seen;
  }

  private asCaller(asked: string | undefined): string {
    if (this.principal === undefined) {
      if (asked === undefined) throw new SandboxPlaneError('INVALID_INPUT', 'name the principal whose change this is (--principal P, or SANDBOXPLANE_PRINCIPAL)');
      return asked;
    }
    if (asked !== undefined && asked !== this.principal) {
      throw new SandboxPlaneError('PRINCIPAL_MISMATCH', `this client acts as ${this.principal} and cannot change infrastructure as ${asked}`, {
        hint: `Leave the principal out (it is ${this.principal}), or use a client started for that principal.`,
      });
    }
    return this.principal;
  }

  /** A bound caller sees only its own runs (another principal's is NOT_FOUND, as if it did not exist), and no approver's name. */
  private seenBy(status: IacStatus): IacStatus {
    if (this.principal === undefined) return status;
    if (status.principal !== this.principal) throw new SandboxPlaneError('NOT_FOUND', `no IaC run ${status.runId}`, { hint: '`sandboxctl iac list` shows your runs.' });
    return agentIacView(status);
  }
}

/** The taxonomy error of a call about a run, its hint naming the run's commands rather than a sandbox's. */
function notFoundAsRun(err: unknown, runId: string): SandboxPlaneError {
  const mapped = toSandboxError(err, runId);
  if (mapped.code === 'NOT_FOUND') return new SandboxPlaneError('NOT_FOUND', `no IaC run ${runId}`, { hint: '`sandboxctl iac list` shows the runs.', details: { runId } });
  if (mapped.code === 'INVALID_STATE')
    return new SandboxPlaneError('INVALID_STATE', mapped.message, { hint: `\`sandboxctl iac status ${runId}\` shows its state.`, details: mapped.details });
  return mapped;
}
