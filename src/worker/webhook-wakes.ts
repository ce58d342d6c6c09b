import type { Client } from '@temporalio/client';
import type { Logger } from '../logging/logger';
import { webhookWorkflowId } from '../domain/webhooks';
import type { Store } from '../store';

/**
 * How long a wake waits for more rows: the events of a burst (a create's requested and
 * ready, a fork of five) go in one delivery turn, not one turn each; a receiver hears
 * within about a second.
 */
const WAKE_DELAY_MS = 1_000;

/** The delivery workflow's type and signal, by name: the store role does not load workflow code. */
const WEBHOOK_DELIVERY_WORKFLOW = 'webhookDelivery';
const EVENTS_WRITTEN_SIGNAL = 'eventsWritten';

/**
 * Wakes the delivery workflow of each endpoint that wants an event just written (DESIGN
 * §19), starting it if none runs (signal-with-start): after the rows commit, once per burst
 * of rows (a second at most), never in a lifecycle's path (a create does not wait for it). A wake lost to a
 * crash is made good at the next start, which wakes every endpoint with events pending.
 * Returns the function that stops it.
 */
export function wakeWebhooks(input: { store: Store; client: Client; taskQueue: string; logger: Logger }): () => void {
  const { store, client, taskQueue, logger } = input;
  let seen = 0;
  let scheduled = false;

  const wake = (webhookId: string): void => {
    client.workflow
      .signalWithStart(WEBHOOK_DELIVERY_WORKFLOW, {
        workflowId: webhookWorkflowId(webhookId),
        taskQueue,
        args: [{ webhookId }],
        signal: EVENTS_WRITTEN_SIGNAL,
        signalArgs: [],
      })
      .catch((err: unknown) => logger.warn({ webhookId, err: (err as Error).message }, 'webhook delivery not woken; the next event or worker start wakes it'));
  };

  const wakeWanting = (): void => {
    scheduled = false;
    try {
      const after = seen;
      seen = store.events.lastSeq();
      if (seen > after) for (const webhookId of store.webhooks.wanting(after)) wake(webhookId);
    } catch (err) {
      // The store closing under us: nothing left to wake.
      logger.debug({ err: (err as Error).message }, 'webhook wake skipped');
    }
  };

  // At start: every endpoint with anything pending (a wake lost to a crash, events written while no worker ran).
  for (const webhook of store.webhooks.list()) if (store.webhooks.pending(webhook.webhookId, 1).length > 0) wake(webhook.webhookId);
  seen = store.events.lastSeq();

  return store.audits.listen(() => {
    if (scheduled) return;
    scheduled = true;
    // One look per burst of rows: the tap tells of each row once its transaction is over.
    setTimeout(wakeWanting, WAKE_DELAY_MS).unref();
  });
}
