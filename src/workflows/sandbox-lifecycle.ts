import { allHandlersFinished, CancellationScope, condition, continueAsNew, isCancellation, log, workflowInfo } from '@temporalio/workflow';
import { sandboxIdFromWorkflowId, workflowIdFor } from '../domain/contract-names';
import { lifecycleInputSchema, type SandboxStatus } from '../domain/lifecycle-messages';
import { stateOf, type Phase, type SandboxRecord } from '../domain/lifecycle-record';
import { requestDigestOf, type IdentifiedRequest } from '../domain/sandbox-request';
import { describeIssues } from '../domain/validation';
import { LifecycleContext, type CarriedLifecycle } from './lifecycle-context';
import { endIacTurns, registerIacTurns } from './lifecycle-iac-turns';
import { registerLifecycleHandlers } from './lifecycle-handlers';
import { registerSnapshotHandlers } from './lifecycle-snapshots';
import { awaitingApproval } from './phase-awaiting-approval';
import { cancelled, ending } from './phase-ending';
import { provisioning } from './phase-provisioning';
import { paused } from './phase-paused';
import { ready } from './phase-ready';
import { requested } from './phase-requested';
import type { LifecycleInput } from './sandbox-messages';

/**
 * One sandbox, from request to teardown (DESIGN §2): each phase is one function that
 * returns the next, so the loop below is the diagram.
 *
 *   requested ─▶ awaiting_approval ─▶ provisioning ─▶ ready ─▶ ending ─▶ ended
 *        └──────────────┴─────────────────┴─────────────────────────────▶ ended
 *                                         ▲              │
 *                       resume: again ────┴── paused ◀───┘ pause   (paused ─▶ ended: no teardown)
 */
export async function sandboxLifecycle(input: LifecycleInput): Promise<SandboxStatus> {
  const admitted = admit(input);
  const ctx = new LifecycleContext(admitted.record, admitted.carried);
  registerLifecycleHandlers(ctx);
  registerIacTurns(ctx);
  registerSnapshotHandlers(ctx);
  // One upsert for the state and who asked (a request that was admitted).
  ctx.showInitial(admitted.ok ? admitted.record.request : undefined);

  try {
    let phase: Phase = ctx.phase;
    while (phase.name !== 'ended') {
      switch (phase.name) {
        case 'requested':
          phase = await requested(ctx);
          break;
        case 'awaiting_approval':
          phase = await awaitingApproval(ctx, phase);
          // Handing over keeps the queue: its signals go along to the next run.
          if (!ctx.continuing) ctx.inbox.close(stateOf(ctx.phase));
          break;
        case 'provisioning':
          phase = await provisioning(ctx, phase);
          break;
        case 'ready':
          phase = await ready(ctx);
          // IaC runs change a READY sandbox only: those holding or waiting for a stack hear it is ending.
          if (phase.name !== 'ready') endIacTurns(ctx);
          break;
        case 'paused':
          phase = await paused(ctx);
          break;
        case 'ending':
          phase = await ending(ctx, phase);
          break;
      }
      if (ctx.continuing) await handOver(ctx);
    }
  } catch (err) {
    if (!isCancellation(err)) throw err;
    await CancellationScope.nonCancellable(() => cancelled(ctx));
  }
  ctx.inbox.close(stateOf(ctx.phase));
  endIacTurns(ctx);
  await CancellationScope.nonCancellable(async () => {
    await ctx.journal.settleBackground();
    await ctx.usage.settle();
    await ctx.journal.flush(ctx.record);
  });
  // Not cancellable: a cancelled run still answers the updates that wait on it, then ends DESTROYED.
  await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
  return ctx.status();
}

/**
 * Continues as new (DESIGN §2: history stays bounded), carrying the record, the audit
 * rows not yet written, the rate limit's window, a pending destroy and the signals still
 * to be judged. Updates that wait are told RUN_CONTINUED, and their callers ask the next
 * run; the SDK and CLI do that on their own.
 */
async function handOver(ctx: LifecycleContext): Promise<never> {
  ctx.inbox.releaseWaitingDecisions();
  await ctx.journal.settleBackground();
  await ctx.usage.settle();
  await condition(allHandlersFinished);
  log.info('continuing as new to keep the history short', { historyLength: workflowInfo().historyLength });
  return continueAsNew<typeof sandboxLifecycle>({ request: ctx.record.request, carried: ctx.carried() });
}

type Admission = { ok: true; record: SandboxRecord; carried?: Omit<CarriedLifecycle, 'record'> } | { ok: false; record: SandboxRecord; carried?: undefined };

/**
 * Re-validates the input with the SDK's own schema and checks that the request's id is
 * this workflow's: a malformed run (started by hand in the UI or with `temporal workflow
 * start`) ends DENIED with INVALID_INPUT, having recorded and provisioned nothing.
 */
function admit(input: unknown): Admission {
  const { workflowId, firstExecutionRunId: runId } = workflowInfo();
  const base = { workflowId, runId, createdAtMs: Date.now(), approval: null, approvalAttempts: [] };
  const result = lifecycleInputSchema.safeParse(input);
  let problem: string;
  if (!result.success) {
    problem = describeIssues(result.error.issues);
  } else if (workflowIdFor(result.data.request.id) !== workflowId) {
    problem = `request.id: must match the workflow id (${workflowId} is for id '${sandboxIdFromWorkflowId(workflowId) ?? workflowId}'), got '${result.data.request.id}'`;
  } else if (result.data.carried !== undefined && workflowInfo().continuedFromExecutionRunId === undefined) {
    // Only a run this workflow continued as new carries state; a run started by hand never does.
    problem = 'carried: only a run that continued as new carries state; start a sandbox with `request` alone';
  } else if (result.data.carried !== undefined && result.data.carried.record.workflowId !== workflowId) {
    problem = `carried.record.workflowId: must be this workflow's id (${workflowId}), got '${result.data.carried.record.workflowId}'`;
  } else if (result.data.carried !== undefined) {
    // A run this workflow continued as new: go on exactly where the last run stopped.
    const { record, ...carried } = result.data.carried as unknown as CarriedLifecycle;
    return { ok: true, record: { ...record, request: result.data.request }, carried };
  } else {
    const request: IdentifiedRequest = result.data.request;
    return {
      ok: true,
      record: {
        ...base,
        request,
        requestDigest: requestDigestOf(request),
        phase: { name: 'requested' },
        waitingFor: 'Screening the request against flags, policy, catalog, TTL rules and quota.',
      },
    };
  }
  return {
    ok: false,
    record: {
      ...base,
      request: placeholderRequest(input, workflowId),
      requestDigest: '',
      phase: { name: 'ended', state: 'DENIED', screening: null, runtime: null, expiresAtMs: null, error: { code: 'INVALID_INPUT', message: problem } },
      waitingFor: `Refused (INVALID_INPUT): the workflow input is not a valid sandbox request: ${problem}. Nothing was recorded or provisioned; start it again with a valid input (docs/lifecycle.md).`,
    },
  };
}

/** What status shows of a request it could not read: the principal if there is one, nothing made up beyond that. */
function placeholderRequest(input: unknown, workflowId: string): IdentifiedRequest {
  const raw = (input as { request?: { principal?: unknown } } | null)?.request;
  const principal = typeof raw?.principal === 'string' ? raw.principal.slice(0, 200) : '';
  return { id: sandboxIdFromWorkflowId(workflowId) ?? workflowId, principal, capability: 'cloud.sandbox', adapter: 'memory', services: [], labels: {} };
}
