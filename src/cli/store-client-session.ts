import type { StoreClient } from '../client/store-client';
import type { Config } from '../config/config';

/**
 * Runs `work` with a store client connected to the configured Temporal, and always
 * closes it. The CLI never opens SANDBOXPLANE_DB for these commands: the store role does.
 */
export async function withStoreClient<T>(config: Config, work: (store: StoreClient) => Promise<T>): Promise<T> {
  const { StoreClient } = await import('../client/store-client.js');
  const { payloadCodecFor } = await import('../codec/codec-settings.js');
  const store = await StoreClient.connect({
    address: config.temporalAddress,
    namespace: config.temporalNamespace,
    taskQueue: config.taskQueue,
    payloadCodec: payloadCodecFor(config.codec),
  });
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}
