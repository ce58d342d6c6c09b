import { log } from '@temporalio/workflow';
import type { IdentifiedRequest } from '../domain/sandbox-request';
import type { ContainerUsage, UsageReport } from '../domain/usage';
import { storeActivities } from './activity-routes';
import { failureCode } from './workflow-failures';

/**
 * A lifecycle's usage reports to the store (DESIGN §19), sent in order and without holding
 * the lifecycle back: when the sandbox becomes live (READY), the reads the health watch's
 * slow look takes, and when it stops being live (torn down, paused) with the reads taken
 * just before its containers went. A report the store does not take is logged and dropped:
 * usage never costs a sandbox its lifecycle. Settled before the run hands over or ends.
 */
export class UsageMeter {
  private sent: Promise<void> = Promise.resolve();

  constructor(private readonly request: () => IdentifiedRequest) {}

  /** Queues a report, stamped with the workflow's clock now. */
  report(event: UsageReport['event'], readings: readonly ContainerUsage[] = []): void {
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
