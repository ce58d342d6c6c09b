import { StoreClient } from '../src/client/store-client';
import { eventually } from '../test/helpers/eventually';
import type { TestWorker } from '../test/helpers/test-worker';

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
