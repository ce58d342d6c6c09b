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
  };
}
