import { Client, Connection } from '@temporalio/client';
import { SandboxPlaneError } from '../domain/errors';

/** A Temporal client and the connection it owns: close the connection when done. */
export interface TemporalSession {
  readonly client: Client;
  readonly connection: Connection;
}

/**
 * The one way this project opens a client connection to a Temporal frontend. A frontend
 * that does not answer is TEMPORAL_UNREACHABLE (with the address), never a raw gRPC error.
 */
export async function connectTemporal(options: { address: string; namespace: string; connectTimeoutMs?: number }): Promise<TemporalSession> {
  let connection: Connection;
  try {
    connection = await Connection.connect({ address: options.address, connectTimeout: options.connectTimeoutMs ?? 5_000 });
  } catch (err) {
    throw new SandboxPlaneError('TEMPORAL_UNREACHABLE', `cannot reach Temporal at ${options.address}: ${(err as Error).message}`, { cause: err });
  }
  return { client: new Client({ connection, namespace: options.namespace }), connection };
}

/** Runs `work` with a client on a fresh connection, and always closes it. */
export async function withTemporalClient<T>(options: { address: string; namespace: string }, work: (client: Client) => Promise<T>): Promise<T> {
  const { client, connection } = await connectTemporal(options);
  try {
    return await work(client);
  } finally {
    await connection.close();
  }
}
