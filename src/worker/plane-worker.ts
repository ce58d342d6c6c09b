import os from 'node:os';
import v8 from 'node:v8';
import type { Client } from '@temporalio/client';
import { connectTemporal, dataConverterFor } from '../client/temporal-connection';
import { readTemporalTls } from '../config/temporal-tls';
import { payloadCodecFor } from '../codec/codec-settings';
import { NativeConnection, Worker, type WorkflowBundle } from '@temporalio/worker';
import { createDockerActivities, createStoreActivities, createTargetActivities } from '../activities';
import { SnapshotContents } from '../activities/snapshot-contents';
import { moveSnapshotContentsOut } from '../activities/snapshot-activities';
import type { AdapterRegistry } from '../adapters/cloud-emulator-adapter';
import { DockerContainerBroker, SealedNetworkPool, type ContainerBroker } from '../docker';
import type { Config } from '../config/config';
import { AUDIT_CHAIN_KEY_PURPOSE, SecretBox } from '../crypto/secret-box';
import { SandboxPlaneError } from '../domain/errors';
import type { HostRegistration } from '../domain/hosts';
import { ADAPTER_NAMES } from '../domain/service-catalog';
import { dockerQueue, storeQueue, targetsQueue, type WorkerRole } from '../domain/task-queues';
import { watchContainerDeaths } from './container-deaths';
import type { Logger } from '../logging/logger';
import type { Store } from '../store';
import { buildAdapterRegistry } from './adapter-registry';
import { measureHostMemory, registerHostUntilDone } from './host-registration';
import { resolvePlaneId } from './plane-identity';
import { RoleWorkers } from './role-workers';
import { installWorkerRuntime } from './runtime-logger';
import { freeLoopbackPort } from '../adapters/free-port';
import { serveMetrics } from '../telemetry/metrics-server';
import { meterPools } from '../telemetry/plane-metrics';
import { tracingWorkerOptions } from '../telemetry/tracing';
import { meterStore } from './store-metrics';
import { wakeWebhooks } from './webhook-wakes';
import { refuseSecondStoreWorker, storeWorkerIdentity } from './store-owner';
import { TemporalHostDirectory } from './temporal-host-directory';
import { startWarmPools, type WarmPools } from './warm-pools';
import { promoteOncePolling, type PromotionOutcome, type PromotionPolicy } from './build-promotion';
import { buildIdOf, builtWorkflowBundle, bundleWorkflows } from './workflow-code';

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

/** The store role's key for approvers' TOTP secrets, created beside the SQLite file on first use. */
function storeSecrets(config: Config): SecretBox {
  try {
    return SecretBox.fromKeyFile(config.storeKeyPath);
  } catch (err) {
    throw new SandboxPlaneError('CONFIG_INVALID', `SANDBOXPLANE_STORE_KEY_FILE ${config.storeKeyPath}: ${(err as Error).message}`, {
      hint: 'Point SANDBOXPLANE_STORE_KEY_FILE at the store key file (32 random bytes, base64), or remove it to start afresh (approvers then re-enrol).',
    });
  }
}

/**
 * The V8 heap limit of the lifecycle worker's workflow thread, in MB: room for a full
 * workflow cache (a held run takes about 1 MB with its garbage) twice over, on top of the
 * bundle and the SDK. Without a limit V8 sizes the thread's heap by the machine's memory
 * and lets it grow with the garbage of evicted runs, so the resident set kept growing with
 * the live sandboxes after the cache was full (docs/performance.md, P5).
 */
export function workflowThreadHeapMb(cacheSize: number): number {
  return 128 + 2 * cacheSize;
}

/** Whether the operator sized V8's heap themselves (`--max-old-space-size` in NODE_OPTIONS or on node's command line): theirs is kept. */
export function heapLimitGiven(execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  return [...execArgv, ...(nodeOptions ?? '').split(/\s+/)].some((arg) => /^--max[-_]old[-_]space[-_]size(=|$)/.test(arg));
}

/** The build's workflow bundle when it is current; else bundled here (webpack, at debug level). */
async function workflowCode(logger: Logger): Promise<WorkflowBundle> {
  const built = builtWorkflowBundle();
  logger.info({ workflowCode: built.reason }, built.bundle === undefined ? 'bundling the workflow code' : 'workflow code from the build');
  return built.bundle ?? (await bundleWorkflows(logger));
}

/**
 * Connects to Temporal and builds one worker per role (DESIGN §10): lifecycle workflows
 * on `<tq>`, the projection on `<tq>-store`, this engine's runtime on
 * `<tq>-docker-<hostId>`.
 */
export async function createPlaneWorker(options: PlaneWorkerOptions): Promise<PlaneWorker> {
  const { config, logger } = options;
  const roles = options.roles ?? config.workerRoles;
  const has = (role: WorkerRole) => roles.includes(role);
  if (roles.length === 0) throw new SandboxPlaneError('INVALID_INPUT', 'a worker runs at least one role');
  const store = options.store;
  if (has('store') && store === undefined) throw new SandboxPlaneError('INVALID_INPUT', 'the store role needs the SQLite projection');
  await startRuntimeAndMetrics(config, logger);
  const identity = options.identity ?? `sandboxplane-worker@${os.hostname()}:${process.pid}`;
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
  let registration: { stop(): void } | undefined;
  let warmPools: WarmPools | undefined;
  let networkPool: SealedNetworkPool | undefined;
  let deathWatch: { stop(): void } | undefined;
  const unmeter: (() => void)[] = [];
  const close = async () => {
    for (const stop of unmeter) stop();
    registration?.stop();
    deathWatch?.stop();
    await warmPools?.stop();
    if (broker instanceof DockerContainerBroker) broker.useNetworkPool(undefined);
    await networkPool?.stop();
    await clientConnection.close();
    await connection.close();
  };
  try {
    const planeId = await resolvePlaneId(config, clientConnection.workflowService);
    const namespace = config.temporalNamespace;
    const hosts = store === undefined ? undefined : new TemporalHostDirectory(store, clientConnection.workflowService, namespace);
    const adapters = has('docker') ? (options.adapters?.(planeId) ?? buildAdapterRegistry(config.emulators, broker, planeId)) : undefined;
    const workers: Worker[] = [];
    let buildId: string | undefined;
    /** The lifecycle role's self-promotion, started once its worker polls. */
    let whileRunning: ((running: () => boolean) => Promise<void>) | undefined;
    const queues: Partial<Record<WorkerRole, string>> = {};
    // "worker ready" means new sandboxes can start (DESIGN §16): with the lifecycle role, once its build is current or it is known why not.
    const sayReady = (outcome: PromotionOutcome | Record<string, never>): void =>
      logger.info({ roles, queues, namespace, identity, planeId, deployment: config.deployment.name, buildId, ...outcome }, 'worker ready');
    // Tracing's interceptors and the workflow spans' sink (DESIGN §17): a sink that drops them when tracing is off.
    const snapshotContents = new SnapshotContents(config.snapshots.dir, payloadCodec.snapshotSeal());
    const common = { connection, namespace, shutdownGraceTime: '10 seconds', dataConverter: dataConverterFor(payloadCodec), ...tracingWorkerOptions() } as const;

    if (has('store') && store !== undefined && hosts !== undefined) {
      const taskQueue = storeQueue(config.taskQueue);
      const storeIdentity = storeWorkerIdentity(store.file);
      await refuseSecondStoreWorker({ service: clientConnection.workflowService, namespace, taskQueue, identity: storeIdentity });
      const deps = {
        store,
        workerIdentity: storeIdentity,
        flags: config.flags,
        lifecycle: config.lifecycle,
        client,
        hosts,
        maxSandboxes: config.maxSandboxes,
        secrets: storeSecrets(config),
        snapshotQuota: config.snapshotQuota,
        contents: snapshotContents,
      };
      const moved = await moveSnapshotContentsOut(store, deps.secrets, snapshotContents);
      if (moved > 0) logger.info({ moved, dir: snapshotContents.dir }, 'snapshot content moved out of the SQLite file');
      const chained = store.auditChain.useKey(deps.secrets.deriveKey(AUDIT_CHAIN_KEY_PURPOSE));
      if (chained > 0) logger.info({ chained }, 'audit rows of an earlier build chained (DESIGN §19)');
      workers.push(await Worker.create({ ...common, taskQueue, identity: storeIdentity, activities: createStoreActivities(deps) }));
      queues.store = taskQueue;
      unmeter.push(meterStore(store, config.taskQueue, async (query) => (await client.workflow.count(query)).count));
      unmeter.push(wakeWebhooks({ store, client, taskQueue: config.taskQueue, logger }));
    }
    if (has('docker') && adapters !== undefined) {
      const taskQueue = dockerQueue(config.taskQueue, config.host.id);
      // Pre-made sealed networks (DESIGN §12) need an engine's broker; a test's fake makes no networks.
      if (broker instanceof DockerContainerBroker && config.networkPool > 0) {
        networkPool = new SealedNetworkPool({ hostId: config.host.id, plane: planeId, target: config.networkPool, maker: broker, logger: logger.child({ networkPool: config.host.id }) });
        await networkPool.start();
        broker.useNetworkPool(networkPool);
      }
      warmPools = await startWarmPools({ hostId: config.host.id, targets: config.host.warmPool, adapters, broker, logger, ...options.warmPoolTiming });
      const pools = warmPools;
      unmeter.push(meterPools({ hostId: config.host.id, depths: () => pools.depths() }));
      workers.push(
        await Worker.create({
          ...common,
          taskQueue,
          identity: `sandboxplane-docker-${config.host.id}@${os.hostname()}:${process.pid}`,
          activities: createDockerActivities({
            adapters,
            broker,
            plane: planeId,
            sweepRemoveConcurrency: config.sweepRemoveConcurrency,
            warmPools,
            ...(networkPool === undefined ? {} : { networkPool }),
            parameterSeal: payloadCodec.parameterSeal(),
            contents: snapshotContents,
            snapshotMaxBytes: config.snapshots.maxBytes,
          }),
        }),
      );
      queues.docker = taskQueue;
      // The engine announces deaths; a broker that is not an engine's (a test's fake) has none to announce.
      if (broker instanceof DockerContainerBroker) deathWatch = watchContainerDeaths({ source: broker, broker, planeId, client, logger, endedHere: (id) => broker.endedHere(id) });
    }
    if (has('targets')) {
      // IaC against operators' targets: their keys come from this process's AWS SDK credential chain.
      const taskQueue = targetsQueue(config.taskQueue);
      workers.push(
        await Worker.create({
          ...common,
          taskQueue,
          identity: `sandboxplane-targets@${os.hostname()}:${process.pid}`,
          activities: createTargetActivities({ parameterSeal: payloadCodec.parameterSeal() }),
        }),
      );
      queues.targets = taskQueue;
    }
    if (has('lifecycle')) {
      const workflowBundle = options.workflowBundle ?? (await workflowCode(logger));
      const build = config.deployment.buildId ?? buildIdOf(workflowBundle);
      buildId = build;
      whileRunning = (running) =>
        promoteOncePolling({
          client,
          target: { namespace, deployment: config.deployment.name, taskQueue: config.taskQueue },
          buildId: build,
          policy: options.promote ?? 'if-none',
          identity,
          logger,
          running,
          settled: sayReady,
        });
      const maxCachedWorkflows = options.maxCachedWorkflows ?? config.workflowCacheSize;
      if (!heapLimitGiven(process.execArgv, process.env.NODE_OPTIONS)) {
        // Read by V8 when the workflow thread's isolate starts (the SDK gives no resourceLimits); this
        // process's own heap is sized already. A thread that reaches it stops the worker, which restarts
        // and replays: the limit is twice what the cache was measured to hold.
        const heapMb = workflowThreadHeapMb(maxCachedWorkflows);
        v8.setFlagsFromString(`--max-old-space-size=${heapMb}`);
        logger.info({ workflowCacheSize: maxCachedWorkflows, workflowThreadHeapMb: heapMb }, 'workflow cache and workflow thread heap limit');
      }
      workers.unshift(
        await Worker.create({
          ...common,
          taskQueue: config.taskQueue,
          identity,
          workflowBundle,
          // Bounds the worker's memory however many sandboxes live: a run evicted from it replays on its next task.
          maxCachedWorkflows,
          // Lifecycles say PINNED themselves (workflows/index.ts); sweeps and commands follow the current build.
          workerDeploymentOptions: {
            useWorkerVersioning: true,
            version: { deploymentName: config.deployment.name, buildId: build },
            defaultVersioningBehavior: 'AUTO_UPGRADE',
          },
        }),
      );
      queues.lifecycle = config.taskQueue;
    }

    if (has('docker') && adapters !== undefined) {
      const host: HostRegistration = {
        hostId: config.host.id,
        taskQueue: dockerQueue(config.taskQueue, config.host.id),
        adapters: ADAPTER_NAMES.filter((name) => adapters[name] !== undefined),
        capacity: config.host.capacity,
        warmPool: config.host.warmPool,
        engineId: await broker.engineId().catch(() => null),
        identity,
        memory: await measureHostMemory({ broker, adapters, fraction: config.host.memoryFraction, overcommit: config.host.memoryOvercommit, warmPool: config.host.warmPool, logger }),
      };
      // With the store here, before any poll: the first request already finds this host.
      if (hosts !== undefined) await hosts.register(host);
      else registration = registerHostUntilDone({ client, taskQueue: config.taskQueue, registration: host, logger });
    }
    if (whileRunning === undefined) sayReady({});
    return { worker: new RoleWorkers(workers, whileRunning), identity, roles, queues, planeId, buildId, client, close };
  } catch (err) {
    await close();
    throw err;
  }
}
