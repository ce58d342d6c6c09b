import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client, type ScheduleDescription } from '@temporalio/client';
import { SandboxPlaneError } from '../domain/errors';
import type { SweepReport } from '../domain/leaks';
import { CLEANUP_SCHEDULE_ID, CLEANUP_SWEEP_WORKFLOW_ID, CLEANUP_WORKFLOW } from '../domain/contract-names';

export interface CleanupScheduleOptions {
  readonly taskQueue: string;
  readonly intervalSeconds: number;
}

function action(options: CleanupScheduleOptions) {
  return {
    type: 'startWorkflow' as const,
    workflowType: CLEANUP_WORKFLOW,
    taskQueue: options.taskQueue,
    workflowId: CLEANUP_SWEEP_WORKFLOW_ID,
    workflowExecutionTimeout: '10 minutes',
  };
}

function matches(description: ScheduleDescription, options: CleanupScheduleOptions): boolean {
  const intervals = description.spec.intervals ?? [];
  return (
    intervals.length === 1 &&
    intervals[0]?.every === options.intervalSeconds * 1000 &&
    description.action.type === 'startWorkflow' &&
    description.action.workflowType === CLEANUP_WORKFLOW &&
    description.action.taskQueue === options.taskQueue
  );
}

/**
 * Creates the cleanup schedule, or brings an existing one in line when its interval or
 * task queue changed; never a second one. Overlap SKIP: a slow sweep is never stacked.
 */
export async function ensureCleanupSchedule(client: Client, options: CleanupScheduleOptions): Promise<'created' | 'updated' | 'unchanged'> {
  const spec = { intervals: [{ every: options.intervalSeconds * 1000 }] };
  try {
    await client.schedule.create({
      scheduleId: CLEANUP_SCHEDULE_ID,
      spec,
      action: action(options),
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' },
    });
    return 'created';
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  const handle = client.schedule.getHandle(CLEANUP_SCHEDULE_ID);
  if (matches(await handle.describe(), options)) return 'unchanged';
  await handle.update((previous) => ({
    ...previous,
    spec,
    action: action(options),
    policies: { ...previous.policies, overlap: ScheduleOverlapPolicy.SKIP },
  }));
  return 'updated';
}

/**
 * Runs the cleanup schedule's action now and, with `wait`, resolves with that sweep's
 * report. NOT_FOUND when no worker has created the schedule yet.
 */
export async function triggerSweep(client: Client, options: { wait: boolean; timeoutMs?: number }): Promise<{ workflowId: string; report?: SweepReport }> {
  const handle = client.schedule.getHandle(CLEANUP_SCHEDULE_ID);
  let before: ScheduleDescription;
  try {
    before = await handle.describe();
  } catch (err) {
    throw new SandboxPlaneError('NOT_FOUND', `no schedule ${CLEANUP_SCHEDULE_ID}: ${(err as Error).message}`, {
      hint: 'Start a worker (`sandboxctl worker` or `sandboxctl dev`): it creates the schedule.',
    });
  }
  const known = new Set([...before.info.recentActions.map((result) => result.action), ...before.info.runningActions].map((started) => started.workflow.workflowId));
  const deadline = Date.now() + (options.timeoutMs ?? 120_000);
  // SKIP, like the schedule: a sweep already running is the one to wait for, never a second beside it.
  const running = before.info.runningActions[0]?.workflow.workflowId;
  if (running !== undefined) return options.wait ? { workflowId: running, report: await resultBy(client, running, deadline) } : { workflowId: running };
  await handle.trigger(ScheduleOverlapPolicy.SKIP);
  let workflowId: string | undefined;
  while (workflowId === undefined) {
    const now = await handle.describe();
    const started = [...now.info.runningActions, ...now.info.recentActions.map((result) => result.action)];
    workflowId = started.map((action) => action.workflow.workflowId).find((id) => !known.has(id));
    if (workflowId !== undefined) break;
    if (Date.now() > deadline) throw new SandboxPlaneError('WAIT_TIMEOUT', 'the triggered sweep did not start in time');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  if (!options.wait) return { workflowId };
  return { workflowId, report: await resultBy(client, workflowId, deadline) };
}

async function resultBy(client: Client, workflowId: string, deadline: number): Promise<SweepReport> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new SandboxPlaneError('WAIT_TIMEOUT', `sweep ${workflowId} has not finished yet; its result will be in the Temporal UI`)),
      Math.max(0, deadline - Date.now()),
    );
  });
  try {
    return await Promise.race([client.workflow.getHandle(workflowId).result() as Promise<SweepReport>, late]);
  } finally {
    clearTimeout(timer);
  }
}
