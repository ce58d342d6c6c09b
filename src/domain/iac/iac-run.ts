import { z } from 'zod';
import { approvalPayloadSchema, type ApprovalAttempt } from '../lifecycle-messages';
import { cleanDisplayText } from '../display-text';
import { isErrorCode, type ErrorCode } from '../error-codes';
import { sandboxIdSchema } from '../sandbox-id';
import type { IacPlan } from './plan';
import { isSealedParameterValue, parametersForDigest } from './sealed-parameters';
import { sha256Hex } from '../sha256';
import { targetNameSchema } from '../targets';
import { canonicalJson, stackNameSchema, utf8ByteLength } from './template';

/**
 * One IaC change (DESIGN §14): its states, input, status and messages — what the `iacRun`
 * workflow, its activities and every caller share.
 */

/** What CloudFormation takes as a request's TemplateBody: a promotion sends no more (a sandbox takes up to MAX_TEMPLATE_BYTES). */
export const MAX_TARGET_TEMPLATE_BYTES = 51_200;

/** Every state of an IaC run; the terminal ones end it (DESIGN §11, "IaC"). */
export const IAC_STATES = ['PLANNING', 'PLANNED', 'AWAITING_APPROVAL', 'APPLYING', 'APPLIED', 'FAILED', 'DENIED', 'EXPIRED'] as const;
export type IacState = (typeof IAC_STATES)[number];

const TERMINAL: ReadonlySet<IacState> = new Set(['PLANNED', 'APPLIED', 'FAILED', 'DENIED', 'EXPIRED']);

export function isIacTerminal(state: IacState): boolean {
  return TERMINAL.has(state);
}

/**
 * What became of each resource of the applied template, checked through the service's
 * own API where the plane has a check for its type:
 * - `VERIFIED`: the stack lists it and the service answers for it;
 * - `UNVERIFIED`: the stack lists it, but the plane has no check of its own for the type;
 * - `NOT_CREATED`: the emulator does not implement the type (the plan said so);
 * - `MISSING`: the emulator implements the type, yet neither the stack nor the service has it;
 * - `ORPHANED`: the service has it, but the stack does not list it (a failed apply left it);
 * - `TAKEN`: a resource of that name was there before the apply (another stack's, or made by hand);
 * - `MISMATCHED`: the stack lists it and the service has it, but properties the plan set
 *   read back otherwise (`mismatches` says which): the emulator did not honour them, so
 *   the row is never a proof;
 * - `REMOVED` / `STILL_PRESENT`: a resource the change removes is gone, or is not.
 */
export const IAC_RESOURCE_STATUSES = ['VERIFIED', 'UNVERIFIED', 'MISMATCHED', 'NOT_CREATED', 'MISSING', 'ORPHANED', 'TAKEN', 'REMOVED', 'STILL_PRESENT'] as const;
export type IacResourceStatus = (typeof IAC_RESOURCE_STATUSES)[number];

/** Statuses that make an apply FAILED: the stack does not hold what the plan said it would. */
export const FAILING_RESOURCE_STATUSES: ReadonlySet<IacResourceStatus> = new Set(['MISMATCHED', 'MISSING', 'ORPHANED', 'TAKEN', 'STILL_PRESENT']);

export interface IacResourceRow {
  readonly logicalId: string;
  readonly type: string;
  readonly physicalId: string | null;
  readonly status: IacResourceStatus;
  /** Why, when the status alone does not say (the stack's reason, the service's answer). */
  readonly detail?: string;
  /** For `MISMATCHED`: each planned property the service reads back otherwise (`path` as the template names it, `Properties.…`). */
  readonly mismatches?: readonly { readonly path: string; readonly planned: unknown; readonly observed: unknown }[];
}

/** A run's id: its workflow is `iac-<runId>`; it also names the run's change sets. */
export const IAC_RUN_ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;
/** Run ids no caller may choose: `iac-turns-<target>` is the workflow that keeps a target's stack turns (DESIGN §18: no agent-chosen id names a plane workflow). */
export const RESERVED_IAC_RUN_ID_PREFIX = 'turns-';
export const iacRunIdSchema = z
  .string()
  .regex(IAC_RUN_ID_PATTERN, 'must be 1-63 lowercase letters, digits or dashes, starting with a letter or digit')
  .refine((id) => !id.startsWith(RESERVED_IAC_RUN_ID_PREFIX), `must not begin '${RESERVED_IAC_RUN_ID_PREFIX}': iac-turns-<target> keeps a target's stack turns`);

export const IAC_MODES = ['plan', 'apply'] as const;
export type IacMode = (typeof IAC_MODES)[number];

/** Where the template came from: shown to reviewers, never interpreted. */
export const iacSourceSchema = z.object({
  kind: z.enum(['template', 'cdk']),
  name: z.string().max(300).transform(cleanDisplayText),
});
export type IacSource = z.infer<typeof iacSourceSchema>;

/**
 * The input of an `iacRun`, as a caller sends it. The template itself is checked by
 * validateTemplate (template.ts), the one home of its rules.
 */
export const iacRunInputSchema = z
  .object({
    runId: iacRunIdSchema,
    mode: z.enum(IAC_MODES),
    /** The sandbox to change (`cloud.iac.local`)... */
    sandboxId: sandboxIdSchema.optional(),
    /** ...or the operator's target to promote to (`cloud.staging.apply`, `cloud.production.apply`). */
    target: targetNameSchema.optional(),
    principal: z.string().trim().min(1, 'name the principal').max(200),
    stack: stackNameSchema,
    template: z.record(z.string(), z.unknown()),
    // CloudFormation takes 4096 characters a value; a sealed NoEcho value carries its MAC, IV and tag besides.
    parameters: z
      .record(
        z.string(),
        z
          .string()
          .max(8192)
          .refine((value) => value.length <= 4096 || isSealedParameterValue(value), 'must be at most 4096 characters'),
      )
      .default({}),
    source: iacSourceSchema,
  })
  .strict()
  .refine((run) => (run.sandboxId === undefined) !== (run.target === undefined), { message: 'name exactly one of sandboxId and target', path: ['sandboxId'] })
  // CloudFormation itself takes at most this much template in a request: a target is real CloudFormation.
  .refine((run) => run.target === undefined || utf8ByteLength(JSON.stringify(run.template)) <= MAX_TARGET_TEMPLATE_BYTES, {
    message: `a target takes at most ${MAX_TARGET_TEMPLATE_BYTES} bytes of template (CloudFormation's TemplateBody limit); split the stack`,
    path: ['template'],
  })
  // A target's plan reads its stack and makes a change set there: only an apply, which people approve, goes that far.
  .refine((run) => run.target === undefined || run.mode === 'apply', {
    message: "a target is planned only as part of its apply (sandboxctl iac apply --target), which shows the plan and waits for people's approval",
    path: ['mode'],
  });
export type IacRunInput = z.input<typeof iacRunInputSchema>;
export type AdmittedIacRun = z.output<typeof iacRunInputSchema>;

/** The plan as a run shows it: the plane's verdict, and where the emulator's own change set disagreed. */
export interface ShownPlan extends IacPlan {
  /** Differences between the plane's diff and the emulator's change set, in words; empty when they agree. */
  readonly crossCheck: readonly string[];
}

/** The sandbox run a promotion rests on (DESIGN §14, "the gate"): the same template and parameters, APPLIED and verified. */
export interface IacProof {
  readonly sandboxId: string;
  readonly workflowId: string;
  readonly iacRunId: string;
  readonly at: string;
}

/**
 * IaC runs one principal may have open at once (DESIGN §11 "Bounds and ownership"): each
 * holds a template of up to 1 MiB in history and may wait days for people, so a loop of
 * plans must stop somewhere. Past it a new run is QUOTA_EXCEEDED, nothing started.
 */
export const IAC_RUNS_IN_FLIGHT_PER_PRINCIPAL = 8;

/** How long a sandbox proof counts for a promotion. */
export const PROOF_WINDOW_SECONDS = 24 * 3600;

/** An approval or denial that counted. */
export interface IacApproval {
  readonly approver: string;
  readonly reason: string;
  readonly at: string;
}

/** What `iac status`, the `status` query and every update answer (DESIGN §11, "IaC"). */
export interface IacStatus {
  readonly runId: string;
  readonly workflowId: string;
  /** The digest of the request (see iacRequestDigest): the same run id sent again must repeat it. */
  readonly requestDigest: string;
  readonly state: IacState;
  readonly mode: IacMode;
  /** The sandbox it changes, or `null` for a target's run. */
  readonly sandboxId: string | null;
  /** The operator's target it promotes to, or `null` for a sandbox's run. */
  readonly target: string | null;
  readonly principal: string;
  readonly stack: string;
  readonly source: IacSource;
  readonly plan: ShownPlan | null;
  /** The policy's word on the run (`null` until screened, or when its input was refused). */
  readonly decision: { readonly effect: string; readonly reasons: readonly string[] } | null;
  /** For a target: the sandbox run that applied the same template and parameters (the gate), once found. */
  readonly proof: IacProof | null;
  /** How many different approvers the apply needs: 0 when policy allows it, 2 for production. */
  readonly approvalsNeeded: number;
  readonly approvals: readonly IacApproval[];
  /** Approvals and denials that did not count (wrong code, another plan, not an approver), newest last. */
  readonly approvalAttempts: readonly ApprovalAttempt[];
  readonly resources: readonly IacResourceRow[];
  /** The latest stack events the apply saw, newest last. */
  readonly events: readonly string[];
  readonly waitingFor: string;
  readonly error: { readonly code: ErrorCode; readonly message: string } | null;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** How far a caller waits: `planned` returns once the plan is shown (or the run ended), `ended` once it ended. */
export const IAC_AWAIT_TARGETS = ['planned', 'ended'] as const;
export type IacAwaitTarget = (typeof IAC_AWAIT_TARGETS)[number];

export const iacAwaitPayloadSchema = z.object({
  until: z.enum(IAC_AWAIT_TARGETS),
  /** The digest of the request the caller sent: a different request under the same run id is refused. */
  requestDigest: z.string().max(64).optional(),
  /** Answer by then at the latest, with the status as it is (the caller says WAIT_TIMEOUT). */
  timeoutSeconds: z.number().int().positive().max(86_400).optional(),
});
export type IacAwaitPayload = z.input<typeof iacAwaitPayloadSchema>;

export function iacHasReached(until: IacAwaitTarget, state: IacState): boolean {
  if (isIacTerminal(state)) return true;
  return until === 'planned' && state !== 'PLANNING';
}

/** The `approve`/`deny` payload of an IaC run: a sandbox approval that also names the plan it approves. */
export const iacApprovalPayloadSchema = approvalPayloadSchema.extend({
  planDigest: z
    .string()
    .trim()
    .regex(/^[0-9a-f]{64}$/, 'must be the plan digest the run shows (64 hex digits)'),
});
export type IacApprovalPayload = z.input<typeof iacApprovalPayloadSchema>;

/** Approve or deny from a program (`decide` update), judged like the signals. */
export const iacDecidePayloadSchema = iacApprovalPayloadSchema.extend({ decision: z.enum(['approve', 'deny']) });
export type IacDecidePayload = z.input<typeof iacDecidePayloadSchema>;

/** A run's claim of its stack's turn, as it sends it to the keeper (a sandbox's lifecycle, or a target's turns). */
export interface IacStackClaim {
  readonly runId: string;
  readonly stack: string;
  readonly principal: string;
  /** How long the run may hold the stack once granted: its approval wait and its steps' whole retry budget. */
  readonly leaseMs: number;
  /** The services the template touches: a sandbox takes only templates within the services it was granted. */
  readonly services: readonly string[];
}

export const iacStackClaimSchema = z.object({
  runId: iacRunIdSchema,
  stack: stackNameSchema,
  principal: z.string().max(200),
  leaseMs: z
    .number()
    .int()
    .positive()
    .max(7 * 86_400_000),
  services: z.array(z.string().max(64)).max(200),
});

/** The lifecycle's answer to a claim: the run holds the stack now, waits behind another, or is refused. */
export type IacClaimAnswer =
  | { readonly answer: 'granted'; readonly sandbox?: IacSandboxGrant }
  | { readonly answer: 'queued'; readonly behind: string; readonly leaseUntilMs: number }
  | { readonly answer: 'refused'; readonly code: ErrorCode; readonly message: string };

/** A keeper's answer as a run receives it: a signal anyone could send, so checked like any input. */
export const iacClaimAnswerSchema: z.ZodType<IacClaimAnswer, z.ZodTypeDef, unknown> = z.discriminatedUnion('answer', [
  z.object({
    answer: z.literal('granted'),
    sandbox: z
      .object({
        adapter: z.string().max(32),
        placement: z.object({ hostId: z.string().max(200), taskQueue: z.string().min(1).max(500) }),
        runtime: z.object({ runtimeIds: z.array(z.string().max(200)).max(16), engineId: z.string().max(500).optional() }),
      })
      .optional(),
  }),
  z.object({ answer: z.literal('queued'), behind: z.string().max(100), leaseUntilMs: z.number().int().nonnegative() }),
  z.object({ answer: z.literal('refused'), code: z.string().refine(isErrorCode, 'must be a taxonomy code') as unknown as z.ZodType<ErrorCode>, message: z.string().max(4000) }),
]) as unknown as z.ZodType<IacClaimAnswer, z.ZodTypeDef, unknown>;

/** What a sandbox's lifecycle tells the run it grants a stack: where the sandbox runs. */
export interface IacSandboxGrant {
  readonly adapter: string;
  readonly placement: { readonly hostId: string; readonly taskQueue: string };
  readonly runtime: IacRuntimeRef;
}

/** Which containers the sandbox runs in and where: enough for a docker activity to find them, no credentials. */
export interface IacRuntimeRef {
  readonly runtimeIds: readonly string[];
  readonly engineId?: string;
}

/** What a run changes, as its `IacTarget` search attribute and its plan's digest name it: `sandbox:<id>`... */
export function iacTargetOfSandbox(sandboxId: string): string {
  return `sandbox:${sandboxId}`;
}

/** ...or `target:<name>` for an operator's target (promotion). */
export function iacTargetOfTarget(name: string): string {
  return `target:${name}`;
}

/** The digest of a run's request: the same run id sent again with anything else is IDEMPOTENCY_CONFLICT. */
export function iacRequestDigest(input: AdmittedIacRun): string {
  // Sealed NoEcho values by their keyed MAC: a resent request seals afresh, and is still the same request.
  return sha256Hex(canonicalJson({ ...input, parameters: parametersForDigest(input.parameters) }));
}
