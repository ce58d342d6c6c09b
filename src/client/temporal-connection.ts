import { Client, Connection } from '@temporalio/client';
import type { DataConverter, PayloadCodec } from '@temporalio/common';
import { payloadCodecFor } from '../codec/codec-settings';
import { loadCodecSettings } from '../config/config';
import { SandboxPlaneError } from '../domain/errors';
import { tracingClientInterceptors } from '../telemetry/tracing';

/** A Temporal client and the connection it owns: close the connection when done. */
export interface TemporalSession {
  readonly client: Client;
  readonly connection: Connection;
}

export interface TemporalConnectOptions {
  readonly address: string;
  readonly namespace: string;
  readonly connectTimeoutMs?: number;
  /**
   * The payload codec; by default the plane's AES-GCM codec with the keys of
   * SANDBOXPLANE_CODEC_KEYS, SANDBOXPLANE_CODEC_KEYS_FILE or `.data/codec-keys` (read,
   * never made: CodecKeysMissingError when the plane has not made it yet); `null` for none.
   */
  readonly payloadCodec?: PayloadCodec | null;
}

/** The data converter of every client and worker: the default converter, then `codec` (if any). */
export function dataConverterFor(codec: PayloadCodec | null): DataConverter {
  return codec === null ? {} : { payloadCodecs: [codec] };
}

/**
 * The one way this project opens a client connection to a Temporal frontend. A frontend
 * that does not answer is TEMPORAL_UNREACHABLE (with the address), never a raw gRPC error.
 */
export async function connectTemporal(options: TemporalConnectOptions): Promise<TemporalSession> {
  const codec = options.payloadCodec === undefined ? payloadCodecFor(loadCodecSettings()) : options.payloadCodec;
  let connection: Connection;
  try {
    connection = await Connection.connect({ address: options.address, connectTimeout: options.connectTimeoutMs ?? 5_000 });
  } catch (err) {
    throw new SandboxPlaneError('TEMPORAL_UNREACHABLE', `cannot reach Temporal at ${options.address}: ${(err as Error).message}`, { cause: err });
  }
  return { client: new Client({ connection, namespace: options.namespace, dataConverter: dataConverterFor(codec), interceptors: tracingClientInterceptors() }), connection };
}

/** Runs `work` with a client on a fresh connection, and always closes it. */
export async function withTemporalClient<T>(options: TemporalConnectOptions, work: (client: Client) => Promise<T>): Promise<T> {
  const { client, connection } = await connectTemporal(options);
  try {
    return await work(client);
  } finally {
    await connection.close();
  }
}
