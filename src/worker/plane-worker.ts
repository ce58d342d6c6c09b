import type { Client } from '@temporalio/client';
import { connectTemporal, dataConverterFor } from '../client/temporal-connection';
import { readTemporalTls } from '../config/temporal-tls';
import { payloadCodecFor } from '../codec/codec-settings';
import { NativeConnection, type WorkflowBundle } from '@temporalio/worker';
import { SnapshotContents } from '../activities/snapshot-contents';
import type { AdapterRegistry } from '../adapters/cloud-emulator-adapter';
import { DockerContainerBroker, type ContainerBroker } from '../docker';
import type { Config } from '../config/config';
import { SandboxPlaneError } from '../domain/errors';
import { WORKER_ROLES, type WorkerRole } from '../domain/task-queues';
import type { Logger } from '../logging/logger';
import type { Store } from '../store';
import { buildAdapterRegistry } from './adapter-registry';
import { resolvePlaneId } from './plane-identity';
import { RoleWorkers, workerIdentity, type RoleContext, type RoleStart } from './role-workers';
import { installWorkerRuntime } from './runtime-logger';
import { freeLoopbackPort } from '../adapters/free-port';
import { serveMetrics } from '../telemetry/metrics-server';
import { tracingWorkerOptions } from '../telemetry/tracing';
import { startDockerRole } from './start-docker-role';
import { startLifecycleRole, type LifecycleStart } from './start-lifecycle-role';
import { startStoreRole } from './start-store-role';
import { startTargetsRole } from './start-targets-role';
import { TemporalHostDirectory } from './temporal-host-directory';
import type { PromotionOutcome, PromotionPolicy } from './build-promotion';

export interface PlaneWorkerOptions {
  readonly config: Config;
  /** The SQLite projection; required when the store role runs here, and never opened otherwise. */
  readonly store?: Store;
  readonly logger: Logger;
  /** The roles to run; `config.workerRoles` (all three unless configured) by default. */
  readonly roles?: readonly WorkerRole[];
  /** A bundle of the caller's (tests build one and share it); otherwise the build's, or bundled at start. */
  readonly workflowBundle?: WorkflowBundle;
  readonly identity?: string;
  /** The emulator adapters this worker runs, given its plane id; by default those the configuration enables. */
  readonly adapters?: (planeId: string) => AdapterRegistry;
  /** The Docker broker; by default one for DOCKER_HOST (it does not connect until used). */
  readonly broker?: ContainerBroker;
  /** How often the warm pools look at their idle containers (tests shorten it). */
  readonly warmPoolTiming?: { readonly checkIntervalMs: number };
  /**
   * Whether the lifecycle role makes its build current once it polls (DESIGN §16):
   * `if-none` (default) only while the deployment has no current build, so the first
   * start of a plane just works and a rollout promotes explicitly; `always` for the dev
   * launcher, the whole plane in one process.
   */
  readonly promote?: PromotionPolicy;
  /** The lifecycle worker's workflow cache (`config.workflowCacheSize` unless given; 0 makes every task a replay, as tests of determinism want). */
  readonly maxCachedWorkflows?: number;
}

export interface PlaneWorker {
  /** The workers of every role this process runs, driven as one. */
  readonly worker: RoleWorkers;
  readonly identity: string;
  readonly roles: readonly WorkerRole[];
  /** The task queues this process polls, by role. */
  readonly queues: Readonly<Partial<Record<WorkerRole, string>>>;
  /** The value of `io.sandboxplane.plane` on this worker's containers (SANDBOXPLANE_PLANE_ID or derived). */
  readonly planeId: string;
  /** The lifecycle role's build id in SANDBOXPLANE_DEPLOYMENT; `undefined` without that role. */
  readonly buildId: string | undefined;
  /** A Temporal client on the worker's namespace (schedules, queries). */
  readonly client: Client;
  /** Closes the worker's connections; call after `worker.run()` has resolved. */
  close(): Promise<void>;
}

/**
 * The SDK's Runtime, with its Prometheus exporter on a loopback port of its own when this
 * process serves metrics, and the /metrics server that shows both (DESIGN §17).
 */
async function startRuntimeAndMetrics(config: Config, logger: Logger): Promise<void> {
  const address = config.telemetry.metricsAddress;
  const { sdkMetricsUrl } = installWorkerRuntime(logger, address === undefined ? undefined : `127.0.0.1:${await freeLoopbackPort()}`);
  if (address === undefined) return;
  const server = await serveMetrics(address, sdkMetricsUrl);
  logger.info({ metrics: server.url }, 'metrics served');
}

/**
 * Connects to Temporal and builds one worker per role (DESIGN §10): lifecycle workflows
 * on `<tq>`, the projection on `<tq>-store`, this engine's runtime on
 * `<tq>-docker-<hostId>`.
 */
export async function createPlaneWorker(options: PlaneWorkerOptions): Promise<PlaneWorker> {
  const { config, logger, store } = options;
  const roles = options.roles ?? config.workerRoles;
  const has = (role: WorkerRole) => roles.includes(role);
  if (roles.length === 0) throw new SandboxPlaneError('INVALID_INPUT', 'a worker runs at least one role');
  if (has('store') && store === undefined) throw new SandboxPlaneError('INVALID_INPUT', 'the store role needs the SQLite projection');
  await startRuntimeAndMetrics(config, logger);
  const identity = options.identity ?? workerIdentity('worker');
  const broker = options.broker ?? new DockerContainerBroker({ dockerHost: config.dockerHost, logger });
  // Read before connecting: a bad key file is a CONFIG error, not a half-started worker.
  const payloadCodec = payloadCodecFor(config.codec);
  const tls = config.temporalTls === undefined ? {} : { tls: readTemporalTls(config.temporalTls) };
  const connection = await NativeConnection.connect({ address: config.temporalAddress, ...tls }).catch((err: unknown) => {
    const how = config.temporalTls === undefined ? 'without TLS' : `with client certificate ${config.temporalTls.certPath ?? 'none'}`;
    throw new SandboxPlaneError('TEMPORAL_UNREACHABLE', `cannot reach Temporal at ${config.temporalAddress} (${how}): ${(err as Error).message}`, { cause: err });
  });
  const { client, connection: clientConnection } = await connectTemporal({
    address: config.temporalAddress,
    namespace: config.temporalNamespace,
    payloadCodec,
    tls: config.temporalTls ?? null,
  }).catch(async (err: unknown) => {
    await connection.close();
    throw err;
  });
  const started = new Map<WorkerRole, RoleStart>();
  const close = async () => {
    for (const role of started.values()) await role.stop?.();
    await clientConnection.close();
    await connection.close();
  };
  try {
    const planeId = await resolvePlaneId(config, clientConnection.workflowService);
    const namespace = config.temporalNamespace;
    const hosts = store === undefined ? undefined : new TemporalHostDirectory(store, clientConnection.workflowService, namespace);
    const adapters = has('docker') ? (options.adapters?.(planeId) ?? buildAdapterRegistry(config.emulators, broker, planeId)) : undefined;
    let lifecycle: LifecycleStart | undefined;
    const queues: Partial<Record<WorkerRole, string>> = {};
    // "worker ready" means new sandboxes can start (DESIGN §16): with the lifecycle role, once its build is current or it is known why not.
    const sayReady = (outcome: PromotionOutcome | Record<string, never>): void =>
      logger.info({ roles, queues, namespace, identity, planeId, deployment: config.deployment.name, buildId: lifecycle?.buildId, ...outcome }, 'worker ready');
    const ctx: RoleContext = {
      config,
      logger,
      client,
      payloadCodec,
      identity,
      planeId,
      contents: new SnapshotContents(config.snapshots.dir, payloadCodec.snapshotSeal()),
      // Tracing's interceptors and the workflow spans' sink (DESIGN §17): a sink that drops them when tracing is off.
      workerOptions: { connection, namespace, shutdownGraceTime: '10 seconds', dataConverter: dataConverterFor(payloadCodec), ...tracingWorkerOptions() },
    };
    if (has('store') && store !== undefined && hosts !== undefined) started.set('store', await startStoreRole(ctx, store, hosts));
    if (has('docker') && adapters !== undefined) started.set('docker', await startDockerRole(ctx, { broker, adapters, hosts, ...options.warmPoolTiming }));
    if (has('targets')) started.set('targets', await startTargetsRole(ctx));
    if (has('lifecycle')) {
      lifecycle = await startLifecycleRole(ctx, options, sayReady);
      started.set('lifecycle', lifecycle);
    }
    for (const [role, { queue }] of started) queues[role] = queue;
    for (const role of started.values()) await role.announce?.();
    if (lifecycle === undefined) sayReady({});
    // The lifecycle worker first: RoleWorkers' state is its.
    const workers = WORKER_ROLES.flatMap((role) => started.get(role)?.worker ?? []);
    return { worker: new RoleWorkers(workers, lifecycle?.whileRunning), identity, roles, queues, planeId, buildId: lifecycle?.buildId, client, close };
  } catch (err) {
    await close();
    throw err;
  }
}
