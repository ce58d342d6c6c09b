import type { WorkflowService } from '@temporalio/client';
import type { Store } from '../store';
import { StoreHostDirectory } from '../store/host-directory';
import { lastPoll, POLLER_SILENCE_LIMIT_MS, queuePollers } from '../client/queue-pollers';

/** A host's liveness is how recently a worker polled its docker queue, as Temporal records it. */
export class TemporalHostDirectory extends StoreHostDirectory {
  constructor(store: Store, service: WorkflowService, namespace: string) {
    super(store, async (host) => {
      const { lastSeenAt, live } = lastPoll(await queuePollers(service, namespace, host.taskQueue));
      // A worker registers just before it polls: a fresh registration counts as live until its first poll shows.
      return { lastSeenAt, live: live || Date.now() - Date.parse(host.updatedAt) <= POLLER_SILENCE_LIMIT_MS };
    });
  }
}
