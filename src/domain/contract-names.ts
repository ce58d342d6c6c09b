/**
 * The names other programs rely on (DESIGN §11): workflow types, workflow ids, message
 * names and the schedule id. One home, so a rename is one edit that review cannot miss.
 */

/** Workflow type of one sandbox's lifecycle. */
export const SANDBOX_LIFECYCLE_WORKFLOW = 'sandboxLifecycle';
/** Workflow type of one cleanup pass. */
export const CLEANUP_WORKFLOW = 'cleanupSweep';
/** Workflow type of the probe that proves a worker serves a task queue. */
export const ROUND_TRIP_WORKFLOW = 'roundTrip';
/** Workflow type of one caller's read or write of the store (policy, approvers, audit, leaks, hosts). */
export const STORE_COMMAND_WORKFLOW = 'storeCommand';
/** Prefix of a store command's workflow id: `store-<kind>-<uuid>`, the kind's dots as dashes. */
export const STORE_COMMAND_WORKFLOW_ID_PREFIX = 'store-';

/** Workflow type that asks every live docker host about its warm pools (`sandboxctl pools`). */
export const WARM_POOL_REPORT_WORKFLOW = 'warmPoolReport';
/** Prefix of its workflow id: `pools-<uuid>`. */
export const WARM_POOL_REPORT_WORKFLOW_ID_PREFIX = 'pools-';

/** Workflow type that asks every live docker host how much memory its containers use now (`sandboxctl hosts`). */
export const HOST_MEMORY_REPORT_WORKFLOW = 'hostMemoryReport';
/** Prefix of its workflow id: `hosts-memory-<uuid>`. */
export const HOST_MEMORY_REPORT_WORKFLOW_ID_PREFIX = 'hosts-memory-';

/** The Temporal Schedule that runs {@link CLEANUP_WORKFLOW}. */
export const CLEANUP_SCHEDULE_ID = 'sandboxplane-cleanup';
/** Workflow id of the sweep the schedule (or `sandboxctl sweep`) starts. */
export const CLEANUP_SWEEP_WORKFLOW_ID = 'sandboxplane-cleanup-sweep';

/** Prefix of every lifecycle workflow id: `sandbox-<id>`. */
export const SANDBOX_WORKFLOW_ID_PREFIX = 'sandbox-';

/** Message names of the lifecycle workflow. */
export const LIFECYCLE_MESSAGES = {
  /** Signals, for people in the Temporal UI. */
  approveSignal: 'approve',
  denySignal: 'deny',
  /** Updates, for programs. */
  extendUpdate: 'extend',
  destroyUpdate: 'destroy',
  listResourcesUpdate: 'listResources',
  /** Update-with-start target of `create`: returns once screened, READY or ended. */
  awaitStateUpdate: 'awaitState',
  /** Approve/deny for programs: the same judging as the signals, with the verdict returned. */
  decideUpdate: 'decide',
  /** From the cleanup sweep: it saw a mismatch under this READY sandbox; the health watch looks now. */
  checkHealthSignal: 'checkHealth',
  /** Snapshots (DESIGN §15): take one of a READY sandbox, put one back, pause (snapshot, no container) and resume. */
  snapshotUpdate: 'snapshot',
  restoreUpdate: 'restore',
  pauseUpdate: 'pause',
  resumeUpdate: 'resume',
  statusQuery: 'status',
} as const;

/** Workflow type of one infrastructure-as-code change (DESIGN §14), id `iac-<runId>`. */
export const IAC_RUN_WORKFLOW = 'iacRun';
export const IAC_WORKFLOW_ID_PREFIX = 'iac-';

/** Message names of an IaC run, and those it exchanges with its sandbox's lifecycle for the stack's turn. */
export const IAC_MESSAGES = {
  /** Signals, for people in the Temporal UI: `{"approver", "reason", "code", "planDigest"}`. */
  approveSignal: 'approve',
  denySignal: 'deny',
  /** Update-with-start target of `iac plan|apply`: returns once planned, or once ended. */
  awaitUpdate: 'awaitIac',
  /** Approve/deny for programs, the verdict returned. */
  decideUpdate: 'decide',
  statusQuery: 'status',
  /** Run → lifecycle: may this run change the stack now? */
  claimStackSignal: 'iacClaimStack',
  /** Run → lifecycle: the run is done with the stack. */
  releaseStackSignal: 'iacReleaseStack',
  /** Lifecycle → run: granted, queued behind another run, or refused. */
  stackAnswerSignal: 'iacStackAnswer',
} as const;

/** Workflow type of the keeper of one target's stack turns (promotion): `iac-turns-<target>`, started by the first claim. */
export const IAC_TARGET_TURNS_WORKFLOW = 'iacTargetTurns';

export function iacTargetTurnsWorkflowId(target: string): string {
  return `iac-turns-${target}`;
}

export function iacWorkflowIdFor(runId: string): string {
  return `${IAC_WORKFLOW_ID_PREFIX}${runId}`;
}

export function workflowIdFor(sandboxId: string): string {
  return `${SANDBOX_WORKFLOW_ID_PREFIX}${sandboxId}`;
}

export function sandboxIdFromWorkflowId(workflowId: string): string | undefined {
  return workflowId.startsWith(SANDBOX_WORKFLOW_ID_PREFIX) ? workflowId.slice(SANDBOX_WORKFLOW_ID_PREFIX.length) : undefined;
}

/** Visibility query for every lifecycle workflow that is still open. */
export const OPEN_LIFECYCLES_QUERY = `WorkflowType = '${SANDBOX_LIFECYCLE_WORKFLOW}' AND ExecutionStatus = 'Running'`;
