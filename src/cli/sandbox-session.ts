import type { SandboxClient } from '../client/sandbox-client';
import type { Config } from '../config/config';

/** Runs `work` with a client connected to the configured Temporal, and always closes it. */
export async function withSandboxClient<T>(config: Config, work: (sandboxes: SandboxClient) => Promise<T>): Promise<T> {
  const { SandboxClient } = await import('../client/sandbox-client.js');
  const { payloadCodecFor } = await import('../codec/codec-settings.js');
  const sandboxes = await SandboxClient.connect({
    address: config.temporalAddress,
    namespace: config.temporalNamespace,
    taskQueue: config.taskQueue,
    payloadCodec: payloadCodecFor(config.codec),
    ...(config.principal !== undefined ? { principal: config.principal } : {}),
  });
  try {
    return await work(sandboxes);
  } finally {
    await sandboxes.close();
  }
}
