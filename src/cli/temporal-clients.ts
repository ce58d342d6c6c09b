import type { Client } from '@temporalio/client';
import type { SandboxClient } from '../client/sandbox-client';
import type { StoreClient } from '../client/store-client';
import type { Config } from '../config/config';
import type { SandboxStatus } from '../domain/lifecycle-messages';

/** Runs `work` with a client connected to the configured Temporal, and always closes the connection. */
export async function withClient<T>(config: Config, work: (client: Client) => Promise<T>): Promise<T> {
  const { withTemporalClient } = await import('../client/temporal-connection.js');
  const { payloadCodecFor } = await import('../codec/codec-settings.js');
  return withTemporalClient({ address: config.temporalAddress, namespace: config.temporalNamespace, payloadCodec: payloadCodecFor(config.codec), tls: config.temporalTls ?? null }, work);
}

/** Runs `work` with the SDK's sandbox client, acting as SANDBOXPLANE_PRINCIPAL when set. */
export async function withSandboxClient<T>(config: Config, work: (sandboxes: SandboxClient) => Promise<T>): Promise<T> {
  const { SandboxClient } = await import('../client/sandbox-client.js');
  const principal = config.principal !== undefined ? { principal: config.principal } : {};
  return withClient(config, (client) => work(new SandboxClient({ client, taskQueue: config.taskQueue, forkMax: config.snapshots.forkMax, ...principal })));
}

/**
 * A sandbox's status, as `SandboxClient.status` gives it: one query over `node:http2`
 * without loading the Temporal SDK when that query can say it as the SDK would
 * (`leanSandboxStatus`), else the SDK's client. With tracing on it is the SDK's client,
 * whose interceptors carry the trace to the worker.
 */
export async function sandboxStatus(config: Config, id: string): Promise<SandboxStatus> {
  if (config.telemetry.traces === undefined) {
    const { payloadCodecFor } = await import('../codec/codec-settings.js');
    const { leanSandboxStatus } = await import('../client/lean-status-query.js');
    const status = await leanSandboxStatus(id, {
      address: config.temporalAddress,
      namespace: config.temporalNamespace,
      tls: config.temporalTls,
      payloadCodec: payloadCodecFor(config.codec),
      principal: config.principal,
    });
    if (status !== undefined) return status;
  }
  return withSandboxClient(config, (sandboxes) => sandboxes.status(id));
}

/** Runs `work` with a store client, bound to SANDBOXPLANE_PRINCIPAL when set (operator commands are then refused). The CLI never opens SANDBOXPLANE_DB for these commands: the store role does. */
export async function withStoreClient<T>(config: Config, work: (store: StoreClient) => Promise<T>): Promise<T> {
  const { StoreClient } = await import('../client/store-client.js');
  const principal = config.principal !== undefined ? { principal: config.principal } : {};
  return withClient(config, (client) => work(new StoreClient({ client, taskQueue: config.taskQueue, ...principal })));
}

/** Runs `work` with a client for an operator's command (`what`): PRINCIPAL_MISMATCH when SANDBOXPLANE_PRINCIPAL is set (DESIGN §18). */
export async function withOperatorClient<T>(config: Config, what: string, work: (client: Client) => Promise<T>): Promise<T> {
  const { refuseUnlessOperator } = await import('../domain/operator-only.js');
  refuseUnlessOperator(config.principal, what);
  return withClient(config, work);
}
