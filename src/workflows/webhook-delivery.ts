import { ActivityFailure, condition, continueAsNew, defineSignal, isCancellation, log, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import { z } from 'zod';
import type { StoreActivities } from '../activities';
import { storeQueue } from '../domain/task-queues';
import { webhookIdSchema } from '../domain/webhooks';

/** The store says new events were written that this endpoint wants (signal-with-start starts the workflow). */
export const eventsWrittenSignal = defineSignal('eventsWritten');

export interface WebhookDeliveryInput {
  readonly webhookId: string;
}

const inputSchema = z.object({ webhookId: webhookIdSchema });

/** With nothing to deliver for this long the workflow ends: an idle endpoint costs nothing, and the next event starts it again. */
const IDLE_MS = 10 * 60_000;
const HISTORY_EVENTS_BEFORE_CONTINUE = 2_000;

/**
 * Delivery: the receiver has a day to take an event, tried again with backoff (at most
 * 30 s apart, so a receiver back after minutes hears within half a minute); the retry sends
 * the same event with the same body. Heartbeats after each event, so a killed store
 * worker's batch is taken over within the heartbeat timeout.
 */
function deliveries(): StoreActivities {
  return proxyActivities<StoreActivities>({
    taskQueue: storeQueue(workflowInfo().taskQueue),
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: '30 seconds',
    scheduleToCloseTimeout: '1 day',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
  });
}

/** Bookkeeping on the store: its own short budget. */
function bookkeeping(): StoreActivities {
  return proxyActivities<StoreActivities>({
    taskQueue: storeQueue(workflowInfo().taskQueue),
    startToCloseTimeout: '30 seconds',
    retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
  });
}

/**
 * One webhook endpoint's deliveries (DESIGN §19): events in their one order (so in order
 * per sandbox), at least once, each event's id and body the same on every attempt. The
 * endpoint's place in the order is the store's, moved on as each event is taken, so this
 * workflow carries nothing: it may end when idle, continue as new, or be started again,
 * and goes on where the last left off. A slow or dead receiver holds back only its own
 * endpoint, never a lifecycle.
 */
export async function webhookDelivery(input: unknown): Promise<void> {
  const parsed = inputSchema.safeParse(input);
  if (!parsed.success) {
    log.error('webhookDelivery started with a bad input; ending', { input: JSON.stringify(input)?.slice(0, 500) });
    return;
  }
  const { webhookId } = parsed.data;
  let woken = true;
  setHandler(eventsWrittenSignal, () => {
    woken = true;
  });
  const long = () => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength >= HISTORY_EVENTS_BEFORE_CONTINUE;

  for (;;) {
    if (!woken && !(await condition(() => woken, IDLE_MS))) return;
    woken = false;
    for (;;) {
      let outcome: { removed: boolean; more: boolean };
      try {
        outcome = await deliveries().deliverWebhookEvents({ webhookId });
      } catch (err) {
        if (isCancellation(err) || !(err instanceof ActivityFailure)) throw err;
        // A day of attempts: the head event is given up on, and the rest go on.
        await bookkeeping().giveUpWebhookEvent({ webhookId });
        continue;
      }
      if (outcome.removed) return;
      if (!outcome.more) break;
      if (long()) await continueAsNew<typeof webhookDelivery>({ webhookId });
    }
    if (long()) await continueAsNew<typeof webhookDelivery>({ webhookId });
  }
}
