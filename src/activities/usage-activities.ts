import { log } from '@temporalio/activity';
import { usageReportSchema, type UsageReportInput } from '../domain/usage';
import { parseOrThrow } from '../domain/validation';
import type { Store } from '../store';
import { withTaxonomy } from './activity-failure';

/**
 * The store role's usage activity (DESIGN §19): lifecycles report when a sandbox becomes
 * live, reads of its containers while it is, and when it stops; the store is the one
 * writer. A retried report changes nothing (see UsageRepository).
 */
export function createUsageActivities(deps: { readonly store: Store }) {
  return {
    async recordUsage(input: UsageReportInput): Promise<void> {
      return withTaxonomy(() => {
        const report = parseOrThrow(usageReportSchema, input, 'usage report');
        deps.store.usage.record(report);
        log.debug('usage recorded', { sandboxId: report.sandboxId, event: report.event, readings: report.readings.length });
      });
    },
  };
}
