import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  log,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../../activities';
import type { RuntimeHandle as ProvisionedSandbox } from '../../domain/lifecycle-record';
import { clientConfigFor } from '../../domain/client-config';
import { NON_RETRYABLE_ERROR_TYPES } from '../../domain/error-codes';
import { formatDuration } from '../../domain/duration';
import type { LifecycleSettings } from '../../domain/lifecycle-settings';
import {
  approvalPayloadSchema,
  destroyPayloadSchema,
  extendPayloadSchema,
  type ApprovalAttempt,
  type SandboxStatus,
} from '../../domain/lifecycle-messages';
import type { Decision } from '../../domain/screening';
import { SandboxExpiresAt, SandboxState as SandboxStateKey } from '../../domain/search-attributes';
import { isTerminal, type SandboxState } from '../../domain/sandbox-states';
import { checkExtension } from '../../domain/ttl';
import { describeIssues } from '../../domain/validation';
import {
  approveSignal,
  denySignal,
  destroyUpdate,
  extendUpdate,
  resourcesUpdate,
  statusQuery,
  type LifecycleInput,
} from '../sandbox-messages';
import { failureCode } from '../workflow-failures';

const nonRetryableErrorTypes = [...NON_RETRYABLE_ERROR_TYPES];

// No attempt cap: giving up on the projection would end the workflow, and with it the
// TTL timer that tears the sandbox down. Non-retryable taxonomy codes still stop at once.
const projection = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumInterval: '1 minute', nonRetryableErrorTypes },
});

const runtime = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '2 seconds', maximumAttempts: 5, nonRetryableErrorTypes },
});

interface PendingSignal {
  readonly signal: 'approve' | 'deny';
  readonly payload: unknown;
}

interface Operation {
  readonly action: string;
  readonly actor: string;
  readonly effect: string;
  readonly reason?: string | null;
  readonly summary?: Record<string, unknown>;
}

const APPROVAL_EXAMPLE = '{"approver": "<your name>", "reason": "<why>"}';

/** Update results are kept in the history, so they never carry the client config. */
function withoutCredentials(status: SandboxStatus): SandboxStatus {
  return { ...status, clientConfig: null };
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/** Version-1 runs always carried the digest their client computed. */
interface LifecycleInputV1 extends LifecycleInput {
  readonly requestDigest: string;
}

/**
 * FROZEN: the lifecycle as it was before the state machine (`patched(STATE_MACHINE_PATCH)`
 * is false only when replaying a run that started under it). Runs started before the
 * upgrade finish here, so their histories replay; delete this file once no such run is
 * open (`temporal workflow list --query "WorkflowType='sandboxLifecycle' AND ExecutionStatus='Running'"`
 * shows none older than the upgrade), together with the patch check (docs/lifecycle.md).
 *
 * One sandbox, from request to teardown (DESIGN §2). Screening happens before any
 * runtime is touched; approval waits on signals; READY lasts exactly as long as the
 * TTL timer, which `extend` moves and `destroy` cuts short. Every transition is
 * recorded in the projection and reflected in the search attributes and in the
 * current details, which say in plain words what the sandbox is waiting for.
 */
export async function sandboxLifecycleV1(input: LifecycleInputV1): Promise<SandboxStatus> {
  const { request } = input;
  const { workflowId, firstExecutionRunId: runId } = workflowInfo();
  const createdAtMs = Date.now();

  let state: SandboxState = 'REQUESTED';
  /** Set while a transition is being recorded: validators judge by where the sandbox is going. */
  let leavingFor: SandboxState | undefined;
  let step = 0;
  let waitingFor = 'Screening the request against flags, policy, catalog, TTL rules and quota.';
  let decision: Decision | null = null;
  let settings: LifecycleSettings | null = null;
  let provisioned: ProvisionedSandbox | null = null;
  let expiresAtMs: number | null = null;
  let expiringRecorded = false;
  let approval: SandboxStatus['approval'] = null;
  const approvalAttempts: ApprovalAttempt[] = [];
  let error: SandboxStatus['error'] = null;
  let destroyRequest: { reason: string; actor: string } | undefined;
  const inbox: PendingSignal[] = [];

  const status = (): SandboxStatus => ({
    id: request.id,
    workflowId,
    state,
    principal: request.principal,
    capability: request.capability,
    adapter: request.adapter,
    services: request.services,
    purpose: request.purpose ?? null,
    labels: request.labels,
    createdAt: new Date(createdAtMs).toISOString(),
    expiresAt: iso(expiresAtMs),
    timeLeftSeconds: null,
    endpoint: state === 'READY' ? (provisioned?.endpoint ?? null) : null,
    region: state === 'READY' ? (provisioned?.region ?? null) : null,
    // Fields added to status since version 1; version 1 has no health watch.
    runtimeIds: provisioned?.runtimeIds ?? [],
    host: null,
    health: { status: 'unknown', checkedAt: null, restarts: 0 },
    clientConfig: state === 'READY' && provisioned !== null ? clientConfigFor(request.adapter, provisioned.endpoint, provisioned.region, provisioned.credentials) : null,
    fidelity: decision?.fidelity ?? {},
    decision: decision === null ? null : { effect: decision.effect, reasons: decision.reasons, code: decision.code ?? null },
    waitingFor,
    approval,
    approvalAttempts: [...approvalAttempts],
    expiring: expiringRecorded,
    error,
    requestDigest: input.requestDigest,
  });

  const snapshot = (stateNow: SandboxState = state) => ({
    id: request.id,
    workflowId,
    runId,
    principal: request.principal,
    capability: request.capability,
    adapter: request.adapter,
    services: request.services,
    state: stateNow,
    purpose: request.purpose ?? null,
    labels: request.labels,
    requestDigest: input.requestDigest,
    endpoint: provisioned?.endpoint ?? null,
    expiresAt: iso(expiresAtMs),
    createdAt: new Date(createdAtMs).toISOString(),
  });

  const explain = (text: string) => {
    waitingFor = text;
    setCurrentDetails(text);
  };

  const reflectState = () => {
    upsertSearchAttributes([
      { key: SandboxStateKey, value: state },
      { key: SandboxExpiresAt, value: expiresAtMs === null ? null : new Date(expiresAtMs) },
    ]);
  };

  /** Appends one audit row with the snapshot (in `stateNow`); steps are numbered in order. */
  const record = async (operation: Operation, stateNow: SandboxState = state) => {
    step += 1;
    await projection.recordTransition({
      snapshot: snapshot(stateNow),
      operation: { reason: null, summary: {}, ...operation, step },
    });
  };

  /**
   * Records the transition first and shows it after: whoever sees the new state in
   * status, the UI or a search also finds it in the audit trail.
   */
  const enter = async (next: SandboxState, details: string, operation: Operation) => {
    leavingFor = next;
    await record(operation, next);
    leavingFor = undefined;
    state = next;
    reflectState();
    explain(details);
  };

  const readyDetails = () =>
    `Ready at ${provisioned?.endpoint}. Expires at ${iso(expiresAtMs)} unless extended (update "extend" with ` +
    `{"ttlSeconds": N}) or destroyed earlier (update "destroy").`;

  setHandler(statusQuery, status);
  setHandler(approveSignal, (payload: unknown) => void inbox.push({ signal: 'approve', payload }));
  setHandler(denySignal, (payload: unknown) => void inbox.push({ signal: 'deny', payload }));

  setHandler(
    extendUpdate,
    async (payload) => {
      const { ttlSeconds, reason, actor } = extendPayloadSchema.parse(payload);
      const previous = expiresAtMs as number;
      expiresAtMs = previous + ttlSeconds * 1000;
      expiringRecorded = false;
      reflectState();
      explain(readyDetails());
      await record({
        action: 'extended',
        actor: actor ?? 'api',
        effect: 'extended',
        reason: reason ?? null,
        summary: { bySeconds: ttlSeconds, from: iso(previous), to: iso(expiresAtMs) },
      });
      return withoutCredentials(status());
    },
    {
      validator: (payload) => {
        const parsed = extendPayloadSchema.safeParse(payload);
        if (!parsed.success) throw ApplicationFailure.create({ type: 'INVALID_INPUT', message: `invalid extend payload: ${describeIssues(parsed.error.issues)}`, nonRetryable: true });
        const current = leavingFor ?? state;
        if (current !== 'READY' || destroyRequest !== undefined || expiresAtMs === null || settings === null || decision === null) {
          throw ApplicationFailure.create({ type: 'INVALID_STATE', message: `only a READY sandbox can be extended; this one is ${current}`, nonRetryable: true });
        }
        const verdict = checkExtension({
          nowMs: Date.now(),
          createdAtMs,
          expiresAtMs,
          extendBySeconds: parsed.data.ttlSeconds,
          maxTtlSeconds: decision.maxTtlSeconds,
          maxLifetimeSeconds: settings.maxLifetimeSeconds,
        });
        if (!verdict.ok) throw ApplicationFailure.create({ type: 'TTL_EXCEEDS_CEILING', message: verdict.reason, nonRetryable: true });
      },
    },
  );

  setHandler(
    resourcesUpdate,
    () => runtime.listSandboxResources({ sandboxId: request.id, adapter: request.adapter, services: request.services }),
    {
      validator: () => {
        const current = leavingFor ?? state;
        if (current !== 'READY') {
          throw ApplicationFailure.create({ type: 'INVALID_STATE', message: `only a READY sandbox can list resources; this one is ${current}`, nonRetryable: true });
        }
      },
    },
  );

  setHandler(
    destroyUpdate,
    async (payload) => {
      const { reason, actor } = destroyPayloadSchema.parse(payload);
      destroyRequest ??= { reason: reason ?? 'destroy requested', actor: actor ?? 'api' };
      await condition(() => isTerminal(state));
      return withoutCredentials(status());
    },
    {
      validator: (payload) => {
        const parsed = destroyPayloadSchema.safeParse(payload);
        if (!parsed.success) throw ApplicationFailure.create({ type: 'INVALID_INPUT', message: `invalid destroy payload: ${describeIssues(parsed.error.issues)}`, nonRetryable: true });
        if (isTerminal(state)) {
          throw ApplicationFailure.create({ type: 'INVALID_STATE', message: `the sandbox is already ${state}`, nonRetryable: true });
        }
      },
    },
  );

  const finish = async (): Promise<SandboxStatus> => {
    await condition(allHandlersFinished);
    return status();
  };

  // REQUESTED: visible in the projection before anything else happens.
  reflectState();
  explain(waitingFor);
  try {
    await record({ action: 'requested', actor: request.principal, effect: 'requested', reason: request.purpose ?? null, summary: { services: request.services, adapter: request.adapter, capability: request.capability } });
  } catch (err) {
    // The projection refuses a reused id (IDEMPOTENCY_CONFLICT): end here, having touched nothing.
    error = failureCode(err, 'INTERNAL');
    state = 'DENIED';
    reflectState();
    explain(`Refused before screening (${error.code}): ${error.message}. Nothing was recorded or provisioned.`);
    return finish();
  }

  // Screening: flags, policy, catalog, TTL, quota; recorded by the activity itself.
  step += 1;
  const screening = await projection.screenRequest({ snapshot: snapshot(), request, step });
  decision = screening.decision;
  settings = screening.settings;
  state = screening.state;
  reflectState();

  if (decision.effect === 'deny') {
    error = { code: decision.code ?? 'POLICY_DENIED', message: decision.reasons.join('; ') };
    explain(`Denied at screening (${error.code}): ${error.message}. Nothing was provisioned.`);
    return finish();
  }

  if (decision.effect === 'require_approval') {
    const deadlineMs = Date.now() + settings.approvalTimeoutSeconds * 1000;
    explain(
      // The Temporal UI renders this as Markdown in a small frame: code spans keep the payload
      // copyable (no tags eaten, no curly quotes), and the reasons stay in status.decision.
      `Waiting for a human's approval until ${iso(deadlineMs)} (${formatDuration(settings.approvalTimeoutSeconds)}). ` +
        `To approve, send the signal \`approve\` with the JSON payload \`${APPROVAL_EXAMPLE}\`; to refuse, send \`deny\` with the same payload. ` +
        `The approver must be on the approvers list and must not be ${request.principal}.`,
    );
    const approvedBy = await awaitApproval(deadlineMs);
    if (approvedBy === undefined) return finish();
    approval = approvedBy;
    await enter('PROVISIONING', `Approved by ${approvedBy.approver}; provisioning through the ${request.adapter} adapter.`, {
      action: 'approved',
      actor: approvedBy.approver,
      effect: 'allow',
      reason: approvedBy.reason || null,
    });
  } else if (destroyRequest !== undefined) {
    await enter('DESTROYED', `Withdrawn before provisioning (${destroyRequest.reason}). Nothing was provisioned.`, {
      action: 'withdrawn',
      actor: destroyRequest.actor,
      effect: 'destroyed',
      reason: destroyRequest.reason,
    });
    return finish();
  } else {
    explain(`Provisioning through the ${request.adapter} adapter.`);
  }

  // PROVISIONING: the projection row already says PROVISIONING, so a crash here leaves a visible sandbox.
  try {
    provisioned = await runtime.provisionSandbox({ sandboxId: request.id, adapter: request.adapter, services: request.services, labels: request.labels });
  } catch (err) {
    error = failureCode(err, 'PROVISION_FAILED');
    const leftovers = await compensate();
    const teardown = leftovers.length === 0 ? 'Whatever was created was torn down.' : `Teardown left ${leftovers.join(', ')}; the cleanup sweep will find it.`;
    await enter('FAILED', `Provisioning failed (${error.code}): ${error.message}. ${teardown}`, {
      action: 'provision_failed',
      actor: 'worker',
      effect: 'failed',
      reason: error.message,
      summary: { code: error.code, leftovers },
    });
    return finish();
  }

  expiresAtMs = Date.now() + decision.ttlSeconds * 1000;
  let ending: { reason: string; actor: string };
  try {
    await enter('READY', readyDetails(), {
      action: 'ready',
      actor: 'worker',
      effect: 'ready',
      summary: { endpoint: provisioned.endpoint, runtimeIds: provisioned.runtimeIds, expiresAt: iso(expiresAtMs) },
    });
    ending = await awaitExpiryOrDestroy(settings.expiryWarningSeconds);
  } catch (err) {
    // Something provisioned must never outlive its workflow: tear down whatever went wrong.
    ending = { reason: `unexpected failure while READY: ${failureCode(err, 'INTERNAL').message}`, actor: 'worker' };
  }

  await enter('DESTROYING', `Tearing down (${ending.reason}).`, { action: 'destroying', actor: ending.actor, effect: 'destroy', reason: ending.reason });
  try {
    const report = await runtime.destroySandbox({ sandboxId: request.id, adapter: request.adapter });
    if (report.remaining.length > 0) {
      error = { code: 'DESTROY_FAILED', message: `still present after teardown: ${report.remaining.join(', ')}` };
    } else {
      await enter('DESTROYED', `Destroyed (${ending.reason}).`, { action: 'destroyed', actor: 'worker', effect: 'destroyed', summary: { removed: report.removed } });
      return finish();
    }
  } catch (err) {
    error = failureCode(err, 'DESTROY_FAILED');
  }
  await enter('DESTROY_FAILED', `Teardown failed (${error.code}): ${error.message}. The leak is recorded; the cleanup sweep retries it.`, {
    action: 'destroy_failed',
    actor: 'worker',
    effect: 'failed',
    reason: error.message,
    summary: { code: error.code },
  });
  return finish();

  /** Handles approve/deny signals until one counts, the request is withdrawn, or time runs out. */
  async function awaitApproval(deadlineMs: number): Promise<{ approver: string; reason: string; at: string } | undefined> {
    for (;;) {
      const remaining = deadlineMs - Date.now();
      const woke = remaining > 0 && (await condition(() => inbox.length > 0 || destroyRequest !== undefined, remaining));
      if (!woke) {
        error = { code: 'APPROVAL_EXPIRED', message: `no approval within ${formatDuration(settings?.approvalTimeoutSeconds ?? 0)}` };
        await enter('EXPIRED', `Expired: nobody approved within ${formatDuration(settings?.approvalTimeoutSeconds ?? 0)}. Nothing was provisioned.`, {
          action: 'approval_expired',
          actor: 'timer',
          effect: 'expired',
          reason: error.message,
        });
        return undefined;
      }
      if (destroyRequest !== undefined) {
        await enter('DESTROYED', `Withdrawn before approval (${destroyRequest.reason}). Nothing was provisioned.`, {
          action: 'withdrawn',
          actor: destroyRequest.actor,
          effect: 'destroyed',
          reason: destroyRequest.reason,
        });
        return undefined;
      }
      const next = inbox.shift() as PendingSignal;
      const accepted = await judgeSignal(next);
      if (accepted === undefined) continue;
      if (next.signal === 'deny') {
        error = { code: 'APPROVAL_DENIED', message: `denied by ${accepted.approver}${accepted.reason ? `: ${accepted.reason}` : ''}` };
        await enter('DENIED', `Denied by ${accepted.approver}. Nothing was provisioned.`, {
          action: 'denied',
          actor: accepted.approver,
          effect: 'deny',
          reason: accepted.reason || null,
        });
        return undefined;
      }
      return accepted;
    }
  }

  /** Validates one signal; an invalid or unauthorized one is audited and ignored, never fatal. */
  async function judgeSignal(pending: PendingSignal): Promise<{ approver: string; reason: string; at: string } | undefined> {
    const at = new Date().toISOString();
    const ignore = async (approver: string | null, why: string) => {
      approvalAttempts.push({ signal: pending.signal, approver, verdict: 'ignored', reason: why, at });
      log.warn('approval signal ignored', { signal: pending.signal, approver, why });
      await record({ action: `${pending.signal}_ignored`, actor: approver ?? 'unknown', effect: 'ignored', reason: why });
    };
    const parsed = approvalPayloadSchema.safeParse(pending.payload);
    if (!parsed.success) {
      await ignore(null, `malformed payload (${describeIssues(parsed.error.issues)}); send ${APPROVAL_EXAMPLE}`);
      return undefined;
    }
    const { approver, reason } = parsed.data;
    if (approver === request.principal) {
      await ignore(approver, `${approver} requested this sandbox and cannot ${pending.signal} it`);
      return undefined;
    }
    if (!(await projection.isListedApprover({ approver }))) {
      await ignore(approver, `${approver} is not on the approvers list`);
      return undefined;
    }
    approvalAttempts.push({ signal: pending.signal, approver, verdict: 'accepted', reason, at });
    return { approver, reason, at };
  }

  /** Waits in READY until the TTL fires or destroy is asked; records the "expiring" event on the way. */
  async function awaitExpiryOrDestroy(warningSeconds: number): Promise<{ reason: string; actor: string }> {
    for (;;) {
      if (destroyRequest !== undefined) return destroyRequest;
      const now = Date.now();
      const expiry = expiresAtMs as number;
      if (now >= expiry) return { reason: 'TTL expired', actor: 'timer' };
      const warnAt = expiry - warningSeconds * 1000;
      if (!expiringRecorded && now >= warnAt) {
        expiringRecorded = true;
        explain(`${readyDetails()} Expiring: ${Math.round((expiry - now) / 1000)} s left.`);
        await record({ action: 'expiring', actor: 'timer', effect: 'warning', reason: `expires at ${iso(expiry)}`, summary: { expiresAt: iso(expiry) } });
        continue;
      }
      const wakeAt = expiringRecorded ? expiry : Math.min(warnAt, expiry);
      await condition(() => destroyRequest !== undefined || expiresAtMs !== expiry, Math.max(1, wakeAt - now));
    }
  }

  /** Best effort after a failed provision (the adapter's destroy is idempotent); returns what stayed. */
  async function compensate(): Promise<string[]> {
    try {
      return [...(await runtime.destroySandbox({ sandboxId: request.id, adapter: request.adapter })).remaining];
    } catch (err) {
      const failure = failureCode(err, 'DESTROY_FAILED');
      log.error('compensation after a failed provision failed; the sweep will find the leftovers', { error: failure });
      return [`unknown (teardown failed: ${failure.message})`];
    }
  }
}
