import type { PoolStatus } from '../domain/warm-pool';
import { withTaxonomy } from './activity-failure';

/** What the activity reads of the docker worker's pools (src/worker/warm-pools.ts). */
export interface WarmPoolReporter {
  statuses(): Promise<PoolStatus[]>;
}

/** The docker role's answer about its warm pools (`sandboxctl pools`). */
export function createWarmPoolActivities(deps: { readonly warmPools?: WarmPoolReporter }) {
  return {
    async describeWarmPools(): Promise<PoolStatus[]> {
      return withTaxonomy(async () => (deps.warmPools === undefined ? [] : deps.warmPools.statuses()));
    },
  };
}
