import type { Client, Connection } from '@temporalio/client';
import type { PayloadCodec } from '@temporalio/common';
import type { TemporalTlsSettings } from '../config/temporal-tls';
import { principalSchema } from '../domain/sandbox-request';
import { parseOrThrow } from '../domain/validation';
import { connectTemporal } from './temporal-connection';

/** What every plane client is built on: one connected Temporal client, the workers' queue, and whose calls these are. */
export interface PlaneClientOptions {
  /** A connected Temporal client. */
  readonly client: Client;
  /** The task queue the lifecycle workers poll (`<tq>`; the store worker polls `<tq>-store`). */
  readonly taskQueue: string;
  /**
   * The caller's identity (DESIGN §12, §18): a client bound to a principal acts only as
   * that principal, sees only its own sandboxes, runs and snapshots (another's is
   * NOT_FOUND), is shown no approver names, and is refused operator commands
   * (PRINCIPAL_MISMATCH). Unbound, it acts as an operator.
   */
  readonly principal?: string;
}

export interface ConnectOptions {
  readonly address: string;
  readonly namespace: string;
  readonly taskQueue: string;
  /** See {@link PlaneClientOptions.principal}. */
  readonly principal?: string;
  /** The most sandboxes one `fork` with `count` makes (SANDBOXPLANE_FORK_MAX; default 20); a sandbox client's. */
  readonly forkMax?: number;
  /**
   * The payload codec the workers use (e.g. `new AesGcmPayloadCodec(readCodecKeysFile(file))`);
   * by default the one SANDBOXPLANE_CODEC_KEYS, SANDBOXPLANE_CODEC_KEYS_FILE or this
   * checkout's `.data/codec-keys` gives; `null` for none (docs/security.md#payload-encryption).
   */
  readonly payloadCodec?: PayloadCodec | null;
  /**
   * mTLS to Temporal (a cluster started by scripts/cluster.sh requires it): the client
   * certificate, key and CA files; by default those SANDBOXPLANE_TEMPORAL_TLS_CERT, _KEY and
   * _CA name, plain gRPC when they are unset; `null` for plain gRPC (docs/security.md).
   */
  readonly tls?: TemporalTlsSettings | null;
}

/**
 * The base of `SandboxClient`, `StoreClient` and `IacClient` (as sdk-typescript's
 * sub-clients share one connection on a small base): the connection, the queue, the
 * caller, and closing a connection the client opened itself.
 */
export abstract class PlaneClient {
  protected readonly client: Client;
  protected readonly taskQueue: string;
  /** The principal this client acts as, or `undefined` for an operator's client. */
  readonly principal: string | undefined;
  private ownConnection: Connection | undefined;

  constructor(options: PlaneClientOptions) {
    this.client = options.client;
    this.taskQueue = options.taskQueue;
    this.principal = options.principal === undefined ? undefined : parseOrThrow(principalSchema, options.principal, 'caller principal');
  }

  /** What a sub-client is built from: this client's connection, queue and caller. */
  protected get sameCaller(): PlaneClientOptions {
    return { client: this.client, taskQueue: this.taskQueue, ...(this.principal !== undefined ? { principal: this.principal } : {}) };
  }

  /** Closes the connection opened by `connect`; a no-op for an injected client. */
  async close(): Promise<void> {
    await this.ownConnection?.close();
    this.ownConnection = undefined;
  }

  /**
   * Connects to Temporal and builds a client with `make` that owns the connection (its
   * `close` releases it). The caller is checked first: a malformed principal opens nothing.
   */
  protected static async connectOwning<T extends PlaneClient>(options: ConnectOptions, make: (parts: PlaneClientOptions) => T): Promise<T> {
    const principal = options.principal === undefined ? {} : { principal: parseOrThrow(principalSchema, options.principal, 'caller principal') };
    const { client, connection } = await connectTemporal(options);
    const made = make({ client, taskQueue: options.taskQueue, ...principal });
    made.ownConnection = connection;
    return made;
  }
}
