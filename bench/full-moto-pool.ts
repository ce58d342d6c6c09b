import { StoreClient } from '../src/client/store-client';
import { PLANE_LABEL } from '../src/domain/docker-labels';
import { NETWORK_POOL_LABEL } from '../src/domain/network-pool';
import { dockerClient } from '../test/harness/container-events';
import { eventually } from '../test/harness/eventually';
import type { TestWorker } from '../test/harness/test-worker';

/** Waits, untimed, until the worker's moto pool holds its target of started containers again: a refill then runs during no timed step. */
export async function fullMotoPool(worker: TestWorker, timeoutMs = 180_000): Promise<void> {
  const store = new StoreClient({ client: worker.client, taskQueue: worker.config.taskQueue });
  await eventually(
    'a full moto pool',
    async () => {
      const pool = (await store.warmPools()).pools.find((candidate) => candidate.adapter === 'moto');
      return pool !== undefined && pool.ready >= pool.target ? true : undefined;
    },
    timeoutMs,
  );
}

/**
 * Waits, untimed, until the worker's host holds its pre-made sealed networks again
 * (SANDBOXPLANE_NETWORK_POOL; the bench destroys each sandbox before the next step, so
 * every pooled network of the plane is idle): a refill then runs during no timed step.
 */
export async function fullNetworkPool(worker: TestWorker, timeoutMs = 60_000): Promise<void> {
  const docker = dockerClient(worker.config.dockerHost);
  const label = [`${NETWORK_POOL_LABEL}=${worker.config.host.id}`, `${PLANE_LABEL}=${worker.config.planeId ?? ''}`];
  await eventually('a full network pool', async () => ((await docker.listNetworks({ filters: { label } })).length >= worker.config.networkPool ? true : undefined), timeoutMs);
}
