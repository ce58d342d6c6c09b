import type { ContainerBroker } from '../docker';
import { PLANE_LABEL } from '../domain/docker-labels';
import type { HostMemoryInUse } from '../domain/hosts';
import { withTaxonomy } from './activity-failure';
import { inParallel } from './in-parallel';

/** Stats read at once: one engine call each, so a host of a hundred sandboxes answers in a few seconds. */
const STATS_CONCURRENCY = 8;

/** The docker role's answer to "how much memory do this plane's containers use now" (`sandboxctl hosts`). */
export function createHostMemoryActivities(deps: { readonly broker: ContainerBroker; readonly plane: string }) {
  return {
    /**
     * The memory this plane's running containers on this engine use now, sandboxes' and
     * warm pools' alike (one `stats` read each, DESIGN §19). A container that ends
     * between the listing and its read is not counted, and neither is anything not the plane's.
     */
    async readMemoryInUse(): Promise<HostMemoryInUse> {
      return withTaxonomy(async () => {
        const running = (await deps.broker.list({ [PLANE_LABEL]: deps.plane })).filter((container) => container.state === 'running');
        const reads = await inParallel(running, STATS_CONCURRENCY, (container) => deps.broker.stats(container.id).catch(() => undefined));
        const read = reads.filter((stats) => stats !== undefined);
        return { bytes: read.reduce((sum, stats) => sum + stats.memoryBytes, 0), containers: read.length };
      });
    },
  };
}
