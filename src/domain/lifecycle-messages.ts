import { z } from 'zod';
import type { Capability } from './capabilities';
import type { ClientConfig } from './client-config';
import type { ErrorCode } from './error-codes';
import type { PolicyEffect } from './policy';
import { cleanDisplayText } from './display-text';
import { sandboxIdSchema, sandboxRequestSchema } from './sandbox-request';
import { isTerminal, type SandboxState } from './sandbox-states';
import type { AdapterName, Fidelity } from './service-catalog';

/**
 * The largest signal or update payload the lifecycle takes, as JSON characters: every
 * payload stays in the workflow's history, so a flood of large ones must not fill it.
 */
export const MAX_PAYLOAD_CHARS = 8_192;

/** The size {@link MAX_PAYLOAD_CHARS} limits; what JSON cannot encode counts as 0. */
export function payloadChars(payload: unknown): number {
  try {
    return JSON.stringify(payload)?.length ?? 0;
  } catch {
    return 0;
  }
}

/** Payload of the `approve` and `deny` signals, as a person types it in the Temporal UI. */
export const approvalPayloadSchema = z.object({
  approver: z.string().transform(cleanDisplayText).pipe(z.string().trim().min(1, 'name the approver').max(200)),
  reason: z.string().max(1000).transform(cleanDisplayText).default(''),
  /**
   * The approver's current TOTP code (RFC 6238, 6 digits, 30 s; DESIGN §12). A number is
   * taken too, as typed into the UI's JSON (`123456`; leading zeros lost are put back).
   */
  code: z
    .union([
      z
        .string()
        .trim()
        .regex(/^\d{6}$/, 'must be the 6 digits your authenticator shows'),
      z.number().int().min(0).max(999_999),
    ])
    .transform((code) => String(code).padStart(6, '0'))
    .optional(),
});
export type ApprovalPayload = z.input<typeof approvalPayloadSchema>;

/** Payload of the `extend` update: add `ttlSeconds` to the current expiry. */
export const extendPayloadSchema = z.object({
  ttlSeconds: z.number().int('must be whole seconds').positive('must be positive').max(31_536_000, 'must be at most a year (31536000)'),
  reason: z.string().max(1000).transform(cleanDisplayText).optional(),
  /** Who asks; recorded in the audit trail. */
  actor: z.string().max(200).transform(cleanDisplayText).optional(),
});
export type ExtendPayload = z.input<typeof extendPayloadSchema>;

/** Payload of the `destroy` update. */
export const destroyPayloadSchema = z
  .object({
    reason: z.string().max(1000).transform(cleanDisplayText).optional(),
    actor: z.string().max(200).transform(cleanDisplayText).optional(),
  })
  .default({});
export type DestroyPayload = z.input<typeof destroyPayloadSchema>;

/**
 * How far `create` waits (the `awaitState` update): `screened` returns once policy has
 * answered (PROVISIONING, AWAITING_APPROVAL, or a refusal), `ready` once READY or ended,
 * `ended` once the sandbox has ended.
 */
export const AWAIT_STATE_TARGETS = ['screened', 'ready', 'ended'] as const;
export type AwaitStateTarget = (typeof AWAIT_STATE_TARGETS)[number];

/** Whether a sandbox in `state` has got as far as `until` (or past it: a refusal ends every wait). */
export function hasReached(until: AwaitStateTarget, state: SandboxState): boolean {
  if (isTerminal(state)) return true;
  if (until === 'screened') return state !== 'REQUESTED';
  if (until === 'ready') return state === 'READY' || state === 'DESTROYING';
  return false;
}

/** Payload of the `awaitState` update, which `create` sends with the start (update-with-start). */
export const awaitStatePayloadSchema = z
  .object({
    until: z.enum(AWAIT_STATE_TARGETS),
    /** The digest of the caller's request: a different request under the same id is refused. */
    requestDigest: z.string().max(200).optional(),
    /** Answer with the status as it is after this long, whatever the state. */
    timeoutSeconds: z.number().int().positive().max(86_400).optional(),
  })
  .strict();
export type AwaitStatePayload = z.input<typeof awaitStatePayloadSchema>;

/** Payload of the `decide` update: approve or deny from a program, judged like the signals. */
export const decidePayloadSchema = approvalPayloadSchema.extend({ decision: z.enum(['approve', 'deny']) });
export type DecidePayload = z.input<typeof decidePayloadSchema>;

/**
 * Input of the lifecycle workflow, re-validated by the workflow itself with the schema
 * the SDK uses: a run started by hand (UI, `temporal workflow start`) is not trusted.
 */
export const lifecycleInputSchema = z.object({
  request: sandboxRequestSchema.extend({ id: sandboxIdSchema }),
  /** Ignored since the workflow computes its own; accepted so older clients still start runs. */
  requestDigest: z.string().optional(),
  /**
   * What a run that continued as new hands to the next (workflows/lifecycle-context.ts
   * `CarriedLifecycle`): checked for its shape here, written only by the workflow itself.
   */
  carried: z
    .object({
      record: z
        .object({
          workflowId: z.string(),
          runId: z.string(),
          requestDigest: z.string(),
          createdAtMs: z.number(),
          // The phases whose loops hand over to a fresh run (historyIsLong): awaiting approval, READY and PAUSED.
          phase: z.object({ name: z.enum(['awaiting_approval', 'ready', 'paused']) }).passthrough(),
          waitingFor: z.string(),
          approvalAttempts: z.array(z.unknown()),
        })
        .passthrough(),
      step: z.number().int().nonnegative(),
      unrecorded: z.array(z.object({ step: z.number().int() }).passthrough()),
      extendTimesMs: z.array(z.number()),
      destroyRequest: z.object({ reason: z.string(), actor: z.string() }).nullable(),
      inbox: z.array(z.object({ signal: z.enum(['approve', 'deny']), payload: z.unknown(), oversizedChars: z.number().optional() })),
      /** Stacks IaC runs hold or wait for (workflows/iac-stack-locks.ts). */
      iacLocks: z
        .array(
          z.object({
            stack: z.string(),
            holder: z.object({ runId: z.string(), stack: z.string(), leaseMs: z.number(), leaseUntilMs: z.number(), services: z.array(z.string()) }).passthrough(),
            waiting: z.array(z.object({ runId: z.string(), stack: z.string(), leaseMs: z.number(), services: z.array(z.string()) }).passthrough()),
          }),
        )
        .default([]),
    })
    .optional(),
});

/** The codes an approval without proof is refused with. */
export type ApprovalRefusal = 'APPROVAL_UNVERIFIED' | 'RATE_LIMITED';

/** A signal the workflow received while waiting for approval, and what it made of it. */
export interface ApprovalAttempt {
  readonly signal: 'approve' | 'deny';
  readonly approver: string | null;
  readonly verdict: 'accepted' | 'ignored';
  readonly reason: string;
  readonly at: string;
  /** Why an ignored attempt was refused, when it lacked proof: APPROVAL_UNVERIFIED, or RATE_LIMITED for a locked-out name (else APPROVER_NOT_ALLOWED). */
  readonly refusal?: ApprovalRefusal;
}

/** What the `decide` update answers: the verdict on this attempt, and the status after it. */
export interface DecideResult {
  readonly attempt: ApprovalAttempt;
  readonly status: SandboxStatus;
}

/** What the health watch last saw of the emulator: `unknown` before the first check and when not READY. */
export type HealthStatus = 'ok' | 'unhealthy' | 'unknown';

export interface SandboxHealth {
  readonly status: HealthStatus;
  readonly checkedAt: string | null;
  /** How often the emulator was restarted after dying (its state was lost each time). */
  readonly restarts: number;
}

/** What the `status` query answers (DESIGN §11 lists the fields agents rely on). */
export interface SandboxStatus {
  readonly id: string;
  readonly workflowId: string;
  readonly state: SandboxState;
  readonly principal: string;
  readonly capability: Capability;
  readonly adapter: AdapterName;
  readonly services: readonly string[];
  readonly purpose: string | null;
  readonly labels: Readonly<Record<string, string>>;
  readonly createdAt: string;
  readonly expiresAt: string | null;
  /** Filled in by the client from `expiresAt` and its own clock; `null` when not running. */
  readonly timeLeftSeconds: number | null;
  readonly endpoint: string | null;
  /** The emulator's region while READY, else `null`. */
  readonly region: string | null;
  /** The runtime's handles (container ids) once provisioned; `[]` when none. */
  readonly runtimeIds: readonly string[];
  readonly health: SandboxHealth;
  /** The docker host it runs on (DESIGN §11); null before placement and for sandboxes placed before hosts existed. */
  readonly host: string | null;
  readonly clientConfig: ClientConfig | null;
  readonly fidelity: Readonly<Record<string, Fidelity>>;
  /** `details`: what a refusal says besides its reasons, when it has more (the daily cap: used, cap, when it resets). */
  readonly decision: { readonly effect: PolicyEffect; readonly reasons: readonly string[]; readonly code: ErrorCode | null; readonly details?: Readonly<Record<string, unknown>> } | null;
  /** What the sandbox is waiting for, in plain words (the same text as the UI's current details). */
  readonly waitingFor: string;
  readonly approval: { readonly approver: string; readonly reason: string; readonly at: string } | null;
  readonly approvalAttempts: readonly ApprovalAttempt[];
  /** Set once the "expiring" event was recorded for the current expiry. */
  readonly expiring: boolean;
  /** Why a sandbox ended up DENIED, EXPIRED, FAILED or DESTROY_FAILED. */
  readonly error: { readonly code: ErrorCode; readonly message: string } | null;
  readonly requestDigest: string;
  /** A fork's parent: the sandbox its snapshot was taken of (DESIGN §15); `null` for a sandbox that is no fork. */
  readonly parent: string | null;
  /** The first sandbox of its tree: its own id unless it is a fork. A fork never outlives its root (its TTL is clamped to the root's). */
  readonly root: string;
}
