import { log } from '@temporalio/workflow';
import type { IdentifiedRequest } from '../domain/sandbox-request';
import type { ContainerUsage, UsageReport } from '../domain/usage';
import { storeActivities } from './activity-routes';
import { failureCode } from './workflow-failures';

/**
 * A READY sandbox's usage reads between its start and its end (DESIGN §19): what the
 * health watch's slow look read, and what a dead container used before its restart. Sent
 * in order and without holding the lifecycle back; a report the store does not take is
 * logged and dropped: usage never costs a sandbox its lifecycle. Settled before the run
 * hands over or ends. Becoming live and stopping need no report: the store derives them
 * from the `ready`/`resumed` and `paused`/`destroyed` rows it writes (with
 * {@link usageSummary}'s reads).
 */
export class UsageMeter {
  private sent: Promise<void> = Promise.resolve();

  constructor(private readonly request: () => IdentifiedRequest) {}

  /** Queues a read, stamped with the workflow's clock now. */
  report(event: 'reading', readings: readonly ContainerUsage[]): void {
    const { id, principal, adapter } = this.request();
    const report: UsageReport = { sandboxId: id, principal, adapter, event, atMs: Date.now(), readings: [...readings] };
    this.sent = this.sent.then(async () => {
      try {
        await storeActivities().recordUsage(report);
      } catch (err) {
        log.warn('usage report not recorded; dropped', { event, error: failureCode(err, 'STORE_UNAVAILABLE') });
      }
    });
  }

  /** Waits until every queued report was sent (or dropped). */
  async settle(): Promise<void> {
    await this.sent;
  }
}

/** Teardown's reads for the audit row that says the containers went (`summary.usage`); nothing when there are none. */
export function usageSummary(usage: readonly ContainerUsage[] | undefined): { usage?: ContainerUsage[] } {
  return usage === undefined || usage.length === 0 ? {} : { usage: [...usage] };
}
