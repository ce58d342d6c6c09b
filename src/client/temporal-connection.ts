import { Client, Connection } from '@temporalio/client';
import type { DataConverter, PayloadCodec } from '@temporalio/common';
import { payloadCodecFor } from '../codec/codec-settings';
import { loadCodecSettings, loadTemporalTlsSettings } from '../config/config';
import { readTemporalTls, type TemporalTlsSettings } from '../config/temporal-tls';
import { tracingClientInterceptors } from '../telemetry/tracing';
import { TEMPORAL_CONNECT_TIMEOUT_MS, temporalUnreachable } from './temporal-unreachable';

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
  /**
   * mTLS to the frontend: the client certificate, key and CA; by default those named by
   * SANDBOXPLANE_TEMPORAL_TLS_CERT, _KEY, _CA (and _SERVER_NAME), plain gRPC when none is set;
   * `null` for plain gRPC whatever the environment says.
   */
  readonly tls?: TemporalTlsSettings | null;
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
  const tls = options.tls === undefined ? loadTemporalTlsSettings() : (options.tls ?? undefined);
  let connection: Connection;
  try {
    connection = await Connection.connect({
      address: options.address,
      connectTimeout: options.connectTimeoutMs ?? TEMPORAL_CONNECT_TIMEOUT_MS,
      ...(tls !== undefined ? { tls: readTemporalTls(tls) } : {}),
    });
  } catch (err) {
    throw temporalUnreachable(options.address, tls, (err as Error).message, err);
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
