/**
 * One memory lifecycle's history, event by event (docs/performance.md, P3): a dev server
 * and a worker of all roles of its own, create → READY → destroy through the SDK, then
 * every event with the queue of each task and activity. Run:
 *
 *   node --import tsx bench/lifecycle-history.ts
 */
import { temporal } from '@temporalio/proto';
import { startTestDevServer } from '../test/harness/test-temporal';
import { startTestWorker } from '../test/harness/test-worker';

const { EventType } = temporal.api.enums.v1;
const typeNames = new Map(Object.entries(EventType).map(([name, value]) => [value, name.replace('EVENT_TYPE_', '')]));

/** What an event is about beside its type: the activity and its queue, the timer, the update or signal. */
function aboutEvent(event: temporal.api.history.v1.IHistoryEvent): string {
  const activity = event.activityTaskScheduledEventAttributes;
  if (activity) return `${activity.activityType?.name ?? ''} on ${activity.taskQueue?.name ?? ''}`;
  const timer = event.timerStartedEventAttributes?.startToFireTimeout;
  if (timer) return `${String(timer.seconds ?? 0)} s`;
  const update = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name;
  if (update) return update;
  return event.workflowExecutionSignaledEventAttributes?.signalName ?? '';
}

async function main(): Promise<void> {
  const server = await startTestDevServer();
  const worker = await startTestWorker(server.address);
  try {
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
    const id = `history-${Date.now()}`;
    await worker.sandboxes.create({ id, principal: 'agent-history', services: ['s3'] }, { wait: 'ready' });
    await worker.sandboxes.destroy(id);
    const history = await worker.client.workflow.getHandle(`sandbox-${id}`).fetchHistory();
    for (const event of history.events ?? []) {
      console.log(`${String(event.eventId).padStart(3)}  ${typeNames.get(event.eventType ?? 0) ?? String(event.eventType)}  ${aboutEvent(event)}`);
    }
  } finally {
    await worker.stop();
    await server.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
