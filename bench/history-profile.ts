import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

/** How many Temporal round trips a workflow took, read from its history (`temporal workflow show`). */
export interface HistoryProfile {
  readonly events: number;
  /** Workflow tasks completed: each one a poll, a replay step and a reply by the worker. */
  readonly workflowTasks: number;
  readonly activities: number;
  readonly timers: number;
  readonly signals: number;
  readonly updates: number;
  readonly childWorkflows: number;
  /** From the first event to the last, as the server stamped them. */
  readonly wallMs: number;
  /**
   * Where that time went, per activity type in order of first use: how many ran, their
   * time queued (scheduled → started) and running (started → closed), each summed. What
   * the activities leave of `wallMs` is workflow tasks and the round trips between.
   */
  readonly activitySteps: readonly ActivityStep[];
}

export interface ActivityStep {
  readonly activityType: string;
  readonly count: number;
  readonly queuedMs: number;
  readonly runningMs: number;
}

function millis(event: temporal.api.history.v1.IHistoryEvent | undefined): number {
  const time = event?.eventTime;
  return time === null || time === undefined ? NaN : Number(time.seconds ?? 0) * 1000 + Math.floor((time.nanos ?? 0) / 1e6);
}

/** Each activity's queued and running time from its scheduled, started and closing events, summed per type. */
function activityStepsOf(events: readonly temporal.api.history.v1.IHistoryEvent[]): ActivityStep[] {
  const byId = new Map(events.map((event) => [Number(event.eventId), event]));
  const steps = new Map<string, { count: number; queuedMs: number; runningMs: number }>();
  for (const event of events) {
    const closed = event.activityTaskCompletedEventAttributes ?? event.activityTaskFailedEventAttributes ?? event.activityTaskTimedOutEventAttributes;
    if (closed === null || closed === undefined) continue;
    const scheduled = byId.get(Number(closed.scheduledEventId));
    const started = byId.get(Number(closed.startedEventId));
    const type = scheduled?.activityTaskScheduledEventAttributes?.activityType?.name ?? 'unknown';
    const step = steps.get(type) ?? { count: 0, queuedMs: 0, runningMs: 0 };
    steps.set(type, { count: step.count + 1, queuedMs: step.queuedMs + (millis(started) - millis(scheduled)), runningMs: step.runningMs + (millis(event) - millis(started)) });
  }
  return [...steps].map(([activityType, step]) => ({ activityType, ...step }));
}

/** `list 1×5 ms (queued 2 ms)`-style text of the steps, for a figure's detail line. */
export function stepsText(profile: Pick<HistoryProfile, 'wallMs' | 'activitySteps'>): string {
  const activities = profile.activitySteps.reduce((sum, step) => sum + step.queuedMs + step.runningMs, 0);
  const steps = profile.activitySteps.map((step) => `${step.activityType} ${step.count}× ${step.runningMs} ms (queued ${step.queuedMs} ms)`);
  return `${profile.wallMs} ms: ${steps.join(', ')}; workflow tasks and round trips between ${profile.wallMs - activities} ms`;
}

const { EventType } = temporal.api.enums.v1;

/** Counts the events of one workflow's (latest run's) history by kind. */
export async function historyProfile(client: Client, workflowId: string): Promise<HistoryProfile> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const events = history.events ?? [];
  const count = (type: number) => events.filter((event) => event.eventType === type).length;
  return {
    events: events.length,
    workflowTasks: count(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED),
    activities: count(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED),
    timers: count(EventType.EVENT_TYPE_TIMER_STARTED),
    signals: count(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED),
    updates: count(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED),
    childWorkflows: count(EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED),
    wallMs: millis(events.at(-1)) - millis(events[0]),
    activitySteps: activityStepsOf(events),
  };
}
