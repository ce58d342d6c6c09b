import { randomBytes } from 'node:crypto';
import type { SandboxCredentials } from '../domain/client-config';
import { DEFAULT_CONTAINER_LOG_LIMIT, type ContainerLogLimit } from '../domain/container-log';
import { sameEngine } from '../domain/engine-identity';
import { iacTargetOfSandbox } from '../domain/iac/iac-run';
import { serviceOfType } from '../domain/iac/iac-screening';
import type { RuntimeHandle } from '../domain/lifecycle-record';
import { PLANE_LABEL, sandboxContainerLabels, SANDBOX_ID_LABEL } from '../domain/docker-labels';
import { isSandboxPlaneError, SandboxPlaneError } from '../domain/errors';
import type { AdapterName, ServiceCatalog } from '../domain/service-catalog';
import type { ContainerUsage } from '../domain/usage';
import { stopAndRemove, type ContainerBroker, type ContainerInfo, type ContainerSummary } from '../docker';
import { belongsTo, containerNameFor, POOL_LABEL } from '../domain/warm-pool';
import type {
  AdapterContext,
  CapturedState,
  CloudEmulatorAdapter,
  DestroyReport,
  HealthReport,
  IacAccess,
  LaunchPlan,
  ProvisionRequest,
  QuietHold,
  RecordedRuntime,
  ResourceListing,
  RestoreTarget,
} from './cloud-emulator-adapter';
import { waitUntilHealthy, type HealthProbe } from './health-gate';
import type { OperatorAccess } from './operator-endpoint';
import type { StartSlots } from './start-slots';

/** The label holding a container's operator token (see ContainerEmulatorOptions.operatorToken). */

/** How long one health look waits for the emulator's answer. */
const HEALTH_PROBE_TIMEOUT_MS = 5_000;
export const OPERATOR_TOKEN_LABEL = 'io.sandboxplane.operator-token';

/**
 * Marks a container whose emulator takes the operator token in a header (`header`). A
 * container with a token and without this label was started by a build that put the
 * token in the URL: this build cannot read its emulator's health, only whether it runs.
 */
export const OPERATOR_API_LABEL = 'io.sandboxplane.operator-api';

/** Labels a sandbox request may pass on to its container, namespaced so they cannot shadow ours. */
const USER_LABEL_PREFIX = 'io.sandboxplane.label.';

export interface ContainerEmulatorOptions {
  readonly adapter: AdapterName;
  readonly catalog: ServiceCatalog;
  readonly broker: ContainerBroker;
  /** Labels every container of this worker carries besides the sandbox's (the plane label). */
  readonly extraLabels?: Readonly<Record<string, string>>;
  /** Pinned by image id or digest; the broker refuses anything else. */
  readonly image: string;
  /** The container's command, when the image's own is not the one to run. */
  readonly command?: readonly string[];
  /** The port the emulator listens on inside its container. */
  readonly containerPort: number;
  readonly region: string;
  readonly memoryBytes: number;
  /** What one of its containers is expected to use (placement's request); at most `memoryBytes`, which it is when not given. */
  readonly memoryRequestBytes?: number;
  readonly pidsLimit: number;
  /** CPU quota in billionths of a CPU (1e9 = one CPU). */
  readonly nanoCpus: number;
  /** How much of its log the container keeps on disk (SANDBOXPLANE_CONTAINER_LOG_MAX); default 10 MiB in 2 files. */
  readonly logLimit?: ContainerLogLimit;
  /** The user the emulator runs as (`uid:gid`), when the image can run as one that is not root; else the image's own. */
  readonly user?: string;
  /** Whether the emulator runs with a read-only root file system (it keeps its state in memory). */
  readonly readonlyRootfs?: boolean;
  /** Counted from when the start takes its slot in `startSlots`, never from when it began waiting for one. */
  readonly healthTimeoutMs: number;
  /** The host's bound on emulators starting at once (SANDBOXPLANE_EMULATOR_START_CONCURRENCY); none: unbounded. */
  readonly startSlots?: StartSlots;
  readonly probe: HealthProbe;
  /**
   * The emulator's environment: from the plan only, never from this process's env.
   * `baseUrl` is set when the host port is chosen before the start (see `hostPort`).
   */
  readonly environment: (plan: { sandboxId: string; labels: Readonly<Record<string, string>>; baseUrl?: string }) => Record<string, string>;
  /**
   * Chooses the host port before the container starts, for an emulator that must know
   * its own public URL. By default the engine assigns one.
   */
  readonly hostPort?: () => Promise<number>;
  /**
   * Lists what the emulator holds, naming each service it could not list (see
   * CloudEmulatorAdapter); `credentials` are the sandbox's own, when it has any.
   */
  readonly listResources: (endpoint: string, services: readonly string[], credentials?: SandboxCredentials) => Promise<ResourceListing>;
  /**
   * Mints the sandbox's own credentials in its (healthy, empty) emulator, allowed only the
   * granted services; called again on a retry, so it must replace what an earlier call made.
   * Without it the adapter's client settings carry fake credentials.
   */
  readonly mintCredentials?: (access: OperatorAccess, grant: { sandboxId: string; services: readonly string[] }, signal: AbortSignal) => Promise<SandboxCredentials>;
  /**
   * `mintCredentials` empties the emulator first (with `reset`) and fails on one that does
   * not serve: a claimed pool container is then minted in straight away, without a reset
   * and a health look of its own before (two calls to the emulator fewer; P2 in
   * docs/performance.md).
   */
  readonly mintResets?: boolean;
  /**
   * For an emulator whose own API (reset, health, minting) would let anyone who reaches
   * the port undo the sandbox's credentials: each container gets a random token in this
   * environment variable and in a label, and the emulator serves that API only to a
   * request carrying it in a header (operator-endpoint.ts). The health probe, reset and
   * minting are given the endpoint and the token; agents get the endpoint alone.
   */
  readonly operatorToken?: { readonly envName: string };
  /**
   * Empties the emulator's state, so a container that waited in a warm pool can be
   * handed to a sandbox (DESIGN §13). Without it the adapter cannot be pooled.
   */
  readonly reset?: (access: OperatorAccess, signal: AbortSignal) => Promise<void>;
  /**
   * The emulator's CloudFormation, for IaC (DESIGN §14): the types it creates, read from
   * its container's labels (the image's own), and the header that carries the operator
   * token on the plane's own AWS calls, when the emulator checks credentials.
   */
  readonly cloudFormation?: {
    readonly supportedTypes: (labels: Readonly<Record<string, string>>) => ReadonlySet<string>;
    readonly operatorHeader?: string;
    /** What its CloudFormation cannot apply in an UPDATE of a type (see IacAccess.updateGaps). */
    readonly updateGaps?: (type: string, properties: readonly string[]) => string | undefined;
  };
  /**
   * How many requests the emulator served to the agent since its container started (its
   * guard counts them, not the plane's own calls; DESIGN §19). Without it requests are not
   * counted: `null` in each read.
   */
  readonly requestsServed?: (access: OperatorAccess, signal: AbortSignal) => Promise<number>;
  /** The emulator's state as the plane keeps it; without it a snapshot is SNAPSHOT_UNSUPPORTED with `noSnapshots` as the reason. */
  readonly state?: EmulatorStateStore;
  readonly noSnapshots?: string;
}

/** What the worker gives an emulator's adapter (`createMotoAdapter`, `createFlociAdapter`): the rest is the emulator's own. */
export type ContainerAdapterOptions = Pick<ContainerEmulatorOptions, 'broker' | 'image' | 'healthTimeoutMs' | 'startSlots' | 'extraLabels' | 'logLimit'>;

/** How an emulator's state is taken and put back (DESIGN §15). */
export interface EmulatorStateStore {
  capture(access: OperatorAccess, signal: AbortSignal): Promise<string>;
  /**
   * Serves only the plane for `seconds` under `lease` (again: renews it), once what the
   * emulator already admitted is served; 0 seconds ends that lease's quiet. Without it a
   * capture holds no quiet.
   */
  quiesce?(access: OperatorAccess, quiet: { seconds: number; lease: string }, signal: AbortSignal): Promise<void>;
  restore(
    access: OperatorAccess,
    state: string,
    target: RestoreTarget & { sandboxId: string },
    progress: (done: number) => void,
    signal: AbortSignal,
  ): Promise<SandboxCredentials | undefined>;
}

/** An idle warm pool container, started and healthy. */
export interface IdleContainer {
  readonly id: string;
  readonly name: string;
  readonly slotId: string;
  readonly endpoint: string;
  /** How the worker reaches the emulator's own API (see ContainerEmulatorOptions.operatorToken). */
  readonly operator: OperatorAccess;
}

/** Where a create gets a pooled container from: the docker host's warm pool of the adapter (src/adapters/warm-pool.ts). */
export interface PoolSource {
  /** An idle container, already renamed to `claimedName` (so it is the sandbox's), or `undefined` when none is ready. */
  claim(claimedName: string): Promise<IdleContainer | undefined>;
}

/** Request labels are copied onto a cold container; a pooled one cannot take them (labels are immutable). */
function hasRequestLabels(plan: LaunchPlan): boolean {
  return Object.keys(plan.labels).some((key) => key.startsWith(USER_LABEL_PREFIX));
}

function publishedEndpoint(info: ContainerSummary, containerPort: number): string {
  const port = info.ports.find((published) => published.containerPort === containerPort && published.hostPort !== undefined);
  if (port?.hostPort === undefined) {
    throw new SandboxPlaneError('PROVISION_FAILED', `container ${info.id} publishes no host port for ${containerPort}`);
  }
  return `http://127.0.0.1:${port.hostPort}`;
}

/** The published endpoint and the container's operator token, when it has one. */
function operatorAccess(info: ContainerSummary, containerPort: number): OperatorAccess {
  const token = info.labels[OPERATOR_TOKEN_LABEL];
  const endpoint = publishedEndpoint(info, containerPort);
  return token === undefined ? { endpoint } : { endpoint, token };
}

/**
 * The path every container-backed emulator shares (DESIGN §4): a launch plan decided
 * up front, a broker run on an engine-assigned loopback port, a health gate, and a
 * teardown that removes every container labelled with the sandbox id and then looks
 * again to report anything that stayed.
 */
export class ContainerEmulatorAdapter implements CloudEmulatorAdapter {
  readonly name: AdapterName;
  readonly catalog: ServiceCatalog;
  readonly memoryBytes: number;
  readonly memoryRequestBytes: number;
  private pool: PoolSource | undefined;

  constructor(private readonly options: ContainerEmulatorOptions) {
    this.name = options.adapter;
    this.catalog = options.catalog;
    this.memoryBytes = options.memoryBytes;
    this.memoryRequestBytes = Math.min(options.memoryRequestBytes ?? options.memoryBytes, options.memoryBytes);
  }

  launchPlan(request: ProvisionRequest): LaunchPlan {
    const requestLabels = Object.fromEntries(Object.entries(request.labels).map(([key, value]) => [`${USER_LABEL_PREFIX}${key}`, value]));
    return this.planFor(request.sandboxId, [...request.services], { ...requestLabels, ...this.options.extraLabels, ...sandboxContainerLabels(request.sandboxId, this.name) });
  }

  /** The plan of a container for `sandboxId` (a sandbox, or a warm pool slot) carrying `labels`. */
  private planFor(sandboxId: string, services: string[], labels: Record<string, string>): LaunchPlan {
    return {
      adapter: this.name,
      sandboxId,
      services,
      region: this.options.region,
      image: this.options.image,
      environment: this.options.environment({ sandboxId, labels }),
      labels,
    };
  }

  /** The warm pool a create claims from first, set by the docker worker that keeps one (DESIGN §13). */
  usePool(pool: PoolSource | undefined): void {
    this.pool = pool;
  }

  /** Whether containers of this adapter can wait in a warm pool. */
  get poolable(): boolean {
    return this.options.reset !== undefined;
  }

  async provision(plan: LaunchPlan, context: AdapterContext): Promise<RuntimeHandle> {
    // Read before anything starts, so a failed read leaves no container behind.
    const engineId = await this.options.broker.engineId();
    const pooled = await this.provisionFromPool(plan, context);
    if (pooled !== undefined) {
      const { container, credentials } = pooled;
      return { endpoint: container.endpoint, region: plan.region, runtimeIds: [container.id], engineId, warmPoolSlot: container.slotId, ...credentials };
    }
    const release = await this.takeStartSlot(context);
    try {
      context.heartbeat({ step: 'starting container' });
      const info = await this.start(plan);
      const endpoint = publishedEndpoint(info, this.options.containerPort);
      const operator = operatorAccess(info, this.options.containerPort);
      let credentials: { credentials?: SandboxCredentials };
      try {
        await waitUntilHealthy(this.options.probe, operator, context, { timeoutMs: this.options.healthTimeoutMs });
        context.cancelled?.throwIfAborted();
        credentials = await this.mint(operator, plan, context);
      } catch (err) {
        // A cancelled attempt (timed out while its completion or heartbeats were lost, or its
        // sandbox destroyed meanwhile) leaves its container to the retry that adopts it, or
        // to the teardown and the sweep: removing it here pulled it from under that retry.
        if (context.cancelled?.aborted === true) throw err;
        const report = await this.destroy(plan.sandboxId, context, { runtimeIds: [info.id], engineId });
        if (report.remaining.length > 0 && err instanceof SandboxPlaneError) {
          throw new SandboxPlaneError(err.code, `${err.message}; teardown left ${report.remaining.join(', ')}`, { cause: err });
        }
        throw err;
      }
      return { endpoint, region: plan.region, runtimeIds: [info.id], engineId, ...credentials };
    } finally {
      release();
    }
  }

  /** One of the host's start slots (see StartSlots); a release that does nothing when the host has none. */
  private takeStartSlot(context: AdapterContext): Promise<() => void> {
    return this.options.startSlots === undefined ? Promise.resolve(() => undefined) : this.options.startSlots.take(context);
  }

  /** The sandbox's own credentials, minted in its emulator; none when the adapter mints none. */
  private async mint(access: OperatorAccess, plan: LaunchPlan, context: AdapterContext): Promise<{ credentials?: SandboxCredentials }> {
    if (this.options.mintCredentials === undefined) return {};
    context.heartbeat({ step: 'minting the sandbox credentials' });
    try {
      return { credentials: await this.options.mintCredentials(access, { sandboxId: plan.sandboxId, services: plan.services }, AbortSignal.timeout(15_000)) };
    } catch (err) {
      throw new SandboxPlaneError('PROVISION_FAILED', `minting the credentials of sandbox ${plan.sandboxId} at ${access.endpoint} failed: ${(err as Error).message}`);
    }
  }

  /**
   * A pooled container for the sandbox, its emulator emptied and the sandbox's own
   * credentials minted in it: the one an earlier attempt claimed, else a fresh claim.
   * `undefined` sends the create down the cold path (no pool, none ready, or request
   * labels a pooled container cannot carry).
   */
  private async provisionFromPool(plan: LaunchPlan, context: AdapterContext): Promise<{ container: IdleContainer; credentials: { credentials?: SandboxCredentials } } | undefined> {
    const { reset } = this.options;
    if (reset === undefined) return undefined;
    const name = this.containerName(plan.sandboxId);
    let claimed = await this.earlierClaim(name);
    if (claimed === undefined) {
      if (this.pool === undefined || hasRequestLabels(plan)) return undefined;
      context.heartbeat({ step: 'claiming a warm pool container' });
      claimed = await this.pool.claim(name);
      if (claimed === undefined) return undefined;
    }
    try {
      if (this.options.mintCredentials === undefined || this.options.mintResets !== true) {
        await reset(claimed.operator, AbortSignal.timeout(10_000));
        const report = await this.options.probe(claimed.operator, AbortSignal.timeout(5_000));
        if (!report.healthy) throw new Error(`not healthy after the reset: ${report.detail}`);
      }
      return { container: claimed, credentials: await this.mint(claimed.operator, plan, context) };
    } catch (err) {
      // Never hand out an emulator that may still hold another's state: drop it, start cold.
      context.heartbeat({ step: 'dropping a pooled container that did not reset', containerId: claimed.id, error: String(err) });
      await stopAndRemove(this.options.broker, claimed.id);
      return undefined;
    }
  }

  /** The pooled container a retried attempt already claimed (renamed to the sandbox's name), if it still runs. */
  private async earlierClaim(name: string): Promise<IdleContainer | undefined> {
    const container = await this.inspectIfPresent(name);
    if (container === undefined || container.labels[POOL_LABEL] === undefined) return undefined;
    if (container.state !== 'running') {
      await stopAndRemove(this.options.broker, container.id);
      return undefined;
    }
    return {
      id: container.id,
      name,
      slotId: container.labels[SANDBOX_ID_LABEL] ?? '',
      endpoint: publishedEndpoint(container, this.options.containerPort),
      operator: operatorAccess(container, this.options.containerPort),
    };
  }

  /**
   * Starts an idle warm pool container under `slotId`, carrying `pool` (its pool's
   * labels), and waits until its emulator serves; a container that does not become
   * healthy is removed before this throws.
   */
  async startIdle(slotId: string, pool: Readonly<Record<string, string>>, context: AdapterContext): Promise<IdleContainer> {
    const release = await this.takeStartSlot(context);
    try {
      const info = await this.start(this.planFor(slotId, [], { ...this.options.extraLabels, ...sandboxContainerLabels(slotId, this.name), ...pool }));
      const endpoint = publishedEndpoint(info, this.options.containerPort);
      const operator = operatorAccess(info, this.options.containerPort);
      try {
        await waitUntilHealthy(this.options.probe, operator, context, { timeoutMs: this.options.healthTimeoutMs });
        await this.warmUp(operator, slotId, context.cancelled);
      } catch (err) {
        await stopAndRemove(this.options.broker, info.id);
        throw err;
      }
      return { id: info.id, name: info.name, slotId, endpoint, operator };
    } finally {
      release();
    }
  }

  /**
   * Mints once in an idle emulator and empties it again: a fresh moto loads its IAM on the
   * first mint (about 100 ms of its CPU), paid here while the container waits rather than
   * by the sandbox that claims it. The claim resets the emulator before it mints (see
   * provisionFromPool), so nothing of this reaches a sandbox.
   */
  private async warmUp(access: OperatorAccess, slotId: string, cancelled: AbortSignal | undefined): Promise<void> {
    const { mintCredentials, reset } = this.options;
    if (mintCredentials === undefined || reset === undefined) return;
    const within = (ms: number) => (cancelled === undefined ? AbortSignal.timeout(ms) : AbortSignal.any([cancelled, AbortSignal.timeout(ms)]));
    const [service] = Object.keys(this.catalog).sort();
    await mintCredentials(access, { sandboxId: slotId, services: service === undefined ? [] : [service] }, within(15_000));
    await reset(access, within(10_000));
  }

  /** Every container of one warm pool (`pool`: its labels) on this engine, idle or claimed, in any state. */
  async poolContainers(pool: Readonly<Record<string, string>>): Promise<ContainerSummary[]> {
    return this.options.broker.list({ ...this.options.extraLabels, ...pool });
  }

  /** Whether an idle container's emulator still serves. */
  async serves(access: OperatorAccess): Promise<boolean> {
    return (await this.options.probe(access, AbortSignal.timeout(5_000)).catch(() => ({ healthy: false }))).healthy;
  }

  /** The loopback endpoint a running container publishes. */
  endpointOf(container: ContainerSummary): string {
    return publishedEndpoint(container, this.options.containerPort);
  }

  /** How the worker reaches a running container's emulator API (its endpoint and operator token). */
  operatorAccessOf(container: ContainerSummary): OperatorAccess {
    return operatorAccess(container, this.options.containerPort);
  }

  /** The name a sandbox's (or a pool slot's) container has on this plane. */
  containerName(owner: string): string {
    return containerNameFor(this.options.extraLabels?.[PLANE_LABEL], owner);
  }

  /** Runs the container; a chosen host port that was taken meanwhile is chosen again. */
  private async start(plan: LaunchPlan): Promise<ContainerInfo> {
    const { broker, containerPort, logLimit = DEFAULT_CONTAINER_LOG_LIMIT } = this.options;
    // Read back from the container's label afterwards: a retried run adopts the first attempt's container, token and all.
    const tokenEnv = this.options.operatorToken?.envName;
    const token = tokenEnv === undefined ? undefined : randomBytes(24).toString('hex');
    const operatorEnv: Record<string, string> = tokenEnv === undefined || token === undefined ? {} : { [tokenEnv]: token };
    const operatorLabel: Record<string, string> = token === undefined ? {} : { [OPERATOR_TOKEN_LABEL]: token, [OPERATOR_API_LABEL]: 'header' };
    for (let attempt = 1; ; attempt += 1) {
      const hostPort = this.options.hostPort === undefined ? 0 : await this.options.hostPort();
      const environment = hostPort === 0 ? plan.environment : this.options.environment({ sandboxId: plan.sandboxId, labels: plan.labels, baseUrl: `http://127.0.0.1:${hostPort}` });
      try {
        return await broker.run({
          name: this.containerName(plan.sandboxId),
          image: this.options.image,
          ...(this.options.command !== undefined ? { command: [...this.options.command] } : {}),
          env: { ...environment, ...operatorEnv },
          labels: { ...plan.labels, ...operatorLabel },
          ports: [{ containerPort, hostPort }],
          limits: {
            memoryBytes: this.options.memoryBytes,
            pidsLimit: this.options.pidsLimit,
            nanoCpus: this.options.nanoCpus,
            logMaxBytes: logLimit.maxBytes,
            logFiles: logLimit.files,
          },
          capDrop: ['ALL'],
          ...(this.options.user !== undefined ? { user: this.options.user } : {}),
          readonlyRootfs: this.options.readonlyRootfs ?? false,
          restartPolicy: { name: 'no' },
        });
      } catch (err) {
        const taken = hostPort !== 0 && /already allocated|address already in use/i.test(String((err as Error).message));
        if (!taken || attempt >= 3) throw err;
      }
    }
  }

  async health(sandboxId: string, recorded?: RecordedRuntime | null): Promise<HealthReport> {
    // On another engine this worker cannot see the container: not knowing is not a death.
    await this.refuseOtherEngine(sandboxId, recorded);
    const [container] = await this.containers(sandboxId, recorded?.runtimeIds ?? []);
    if (container === undefined) return { healthy: false, registeredServices: [], readyServices: [], detail: 'no running container', certain: true };
    if (container.labels[OPERATOR_TOKEN_LABEL] !== undefined && container.labels[OPERATOR_API_LABEL] === undefined) {
      // Its guard would refuse the header (403): that is not a death. It runs; whether it answers is unknown.
      throw new SandboxPlaneError(
        'INVALID_STATE',
        `sandbox ${sandboxId}'s container was started by an earlier build (operator token in the URL): its emulator's health cannot be read, only that it runs`,
        {
          hint: 'It keeps running until it ends; destroy and create it again for health checks and snapshots.',
        },
      );
    }
    try {
      return await this.options.probe(operatorAccess(container, this.options.containerPort), AbortSignal.timeout(HEALTH_PROBE_TIMEOUT_MS));
    } catch (err) {
      // It runs and does not answer (frozen by SIGSTOP, wedged): unhealthy, which the looks that follow confirm, never "unknown" for ever.
      const why = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError') ? `no answer within ${HEALTH_PROBE_TIMEOUT_MS / 1000} s` : String(err);
      return { healthy: false, registeredServices: [], readyServices: [], detail: `its container runs, but the emulator does not answer (${why})` };
    }
  }

  async listResources(sandboxId: string, services: readonly string[], recorded?: RecordedRuntime | null): Promise<ResourceListing> {
    await this.refuseOtherEngine(sandboxId, recorded);
    const [container] = await this.containers(sandboxId, recorded?.runtimeIds ?? []);
    if (container === undefined) {
      throw new SandboxPlaneError('RESOURCE_DISCOVERY_FAILED', `sandbox ${sandboxId} has no running emulator to ask`);
    }
    return this.options.listResources(publishedEndpoint(container, this.options.containerPort), services, recorded?.credentials);
  }

  async iacAccess(sandboxId: string, recorded?: RecordedRuntime | null): Promise<IacAccess> {
    const { cloudFormation } = this.options;
    if (cloudFormation === undefined) throw new SandboxPlaneError('ADAPTER_UNAVAILABLE', `the ${this.name} adapter has no CloudFormation to plan or apply with`);
    await this.refuseOtherEngine(sandboxId, recorded);
    const [container] = await this.containers(sandboxId, recorded?.runtimeIds ?? []);
    if (container === undefined) throw new SandboxPlaneError('RESOURCE_DISCOVERY_FAILED', `sandbox ${sandboxId} has no running emulator to plan or apply with`);
    const token = container.labels[OPERATOR_TOKEN_LABEL];
    const headers = cloudFormation.operatorHeader === undefined || token === undefined ? {} : { [cloudFormation.operatorHeader]: token };
    const supported = cloudFormation.supportedTypes(container.labels);
    // A type the emulator models is still not made when its service cannot run here (lambda without an engine).
    const runs = (type: string) => this.catalog[serviceOfType(type)]?.fidelity !== 'UNAVAILABLE';
    return {
      endpoint: publishedEndpoint(container, this.options.containerPort),
      region: this.options.region,
      headers,
      signer: { kind: 'operator' },
      supports: (type) => supported.has(type) && runs(type),
      ...(cloudFormation.updateGaps === undefined ? {} : { updateGaps: cloudFormation.updateGaps }),
      target: iacTargetOfSandbox(sandboxId),
      seedsCdkBootstrap: true,
      name: this.name,
    };
  }

  async captureState(sandboxId: string, recorded?: RecordedRuntime | null, hold?: QuietHold): Promise<CapturedState> {
    const access = await this.stateAccess(sandboxId, recorded);
    const store = this.stateStore();
    const signal = AbortSignal.timeout(60_000);
    if (hold === undefined || store.quiesce === undefined) return { state: await store.capture(access, signal) };
    const quiet = { seconds: hold.seconds, lease: randomBytes(12).toString('hex') };
    await store.quiesce(access, quiet, signal);
    try {
      const state = await store.capture(access, signal);
      // Renewed once read: the hold counts from here, however long the read took.
      await store.quiesce(access, quiet, signal);
      return { state, quietLease: quiet.lease };
    } catch (err) {
      await store.quiesce(access, { seconds: 0, lease: quiet.lease }, AbortSignal.timeout(5_000)).catch(() => undefined);
      throw err;
    }
  }

  async endQuiet(sandboxId: string, lease: string, recorded?: RecordedRuntime | null): Promise<void> {
    const quiesce = this.options.state?.quiesce;
    if (quiesce === undefined) return;
    await quiesce(await this.stateAccess(sandboxId, recorded), { seconds: 0, lease }, AbortSignal.timeout(10_000));
  }

  async restoreState(sandboxId: string, state: string, target: RestoreTarget, context: AdapterContext, recorded?: RecordedRuntime | null): Promise<SandboxCredentials | undefined> {
    const access = await this.stateAccess(sandboxId, recorded);
    const progress = (replayed: number) => context.heartbeat({ step: 'replaying the snapshot', replayed });
    return this.stateStore().restore(access, state, { ...target, sandboxId }, progress, context.cancelled ?? new AbortController().signal);
  }

  private stateStore(): EmulatorStateStore {
    const { state } = this.options;
    if (state === undefined)
      throw new SandboxPlaneError('SNAPSHOT_UNSUPPORTED', `the ${this.name} adapter cannot snapshot a sandbox: ${this.options.noSnapshots ?? 'its emulator has no way to give its state'}`);
    return state;
  }

  private async stateAccess(sandboxId: string, recorded: RecordedRuntime | null | undefined): Promise<OperatorAccess> {
    this.stateStore();
    await this.refuseOtherEngine(sandboxId, recorded);
    const recordedIds = recorded?.runtimeIds ?? [];
    const [container] = await this.containers(sandboxId, recordedIds);
    if (container === undefined) throw new SandboxPlaneError('RESOURCE_DISCOVERY_FAILED', `sandbox ${sandboxId} has no running emulator to take its state from or put it into`);
    // A state goes back only into the emulator it was meant for: one started since (a restart) holds another key.
    if (recordedIds.length > 0 && !recordedIds.some((id) => container.id.startsWith(id) || id.startsWith(container.id))) {
      throw new SandboxPlaneError(
        'INVALID_STATE',
        `sandbox ${sandboxId}'s emulator was replaced (now ${container.id.slice(0, 12)}, recorded ${recordedIds.map((id) => id.slice(0, 12)).join(', ')}); its state was not touched`,
      );
    }
    const token = container.labels[OPERATOR_TOKEN_LABEL];
    if (token === undefined) throw new SandboxPlaneError('SNAPSHOT_UNSUPPORTED', `sandbox ${sandboxId}'s container has no operator token: it was started by a plane before snapshots`);
    return { endpoint: publishedEndpoint(container, this.options.containerPort), token };
  }

  async usage(sandboxId: string, recorded?: RecordedRuntime | null): Promise<readonly ContainerUsage[]> {
    await this.refuseOtherEngine(sandboxId, recorded);
    const containers = await this.containers(sandboxId, recorded?.runtimeIds ?? []);
    return Promise.all(containers.map((container) => this.usageOf(container)));
  }

  /** One running container's counters; its requests are `null` when its guard does not say (no counter, or an emulator of an earlier build). */
  private async usageOf(container: ContainerInfo): Promise<ContainerUsage> {
    const stats = await this.options.broker.stats(container.id);
    const { requestsServed } = this.options;
    const requests =
      requestsServed === undefined || container.labels[OPERATOR_API_LABEL] === undefined
        ? null
        : await requestsServed(operatorAccess(container, this.options.containerPort), AbortSignal.timeout(HEALTH_PROBE_TIMEOUT_MS)).catch(() => null);
    return { containerId: container.id, cpuNanos: stats.cpuNanos, memoryPeakBytes: stats.memoryPeakBytes, requests };
  }

  async destroy(sandboxId: string, context: AdapterContext, recorded?: RecordedRuntime | null): Promise<DestroyReport> {
    const { broker } = this.options;
    await this.refuseOtherEngine(sandboxId, recorded);
    const recordedIds = recorded?.runtimeIds ?? [];
    const removed: string[] = [];
    for (const containerId of await this.teardownTargets(sandboxId, recordedIds)) {
      context.heartbeat({ step: 'removing', containerId });
      await stopAndRemove(broker, containerId);
      removed.push(containerId);
    }
    return { removed, remaining: await this.teardownTargets(sandboxId, recordedIds) };
  }

  /**
   * A recorded runtime on another engine cannot be seen from here: finding nothing would
   * be a false "destroyed" while the container runs on (issue 12).
   */
  private async refuseOtherEngine(sandboxId: string, recorded: RecordedRuntime | null | undefined): Promise<void> {
    if (recorded?.engineId === undefined) return;
    const here = await this.options.broker.engineId();
    if (sameEngine(recorded.engineId, here)) return;
    throw new SandboxPlaneError(
      'RUNTIME_ON_OTHER_ENGINE',
      `sandbox ${sandboxId}'s containers (${recorded.runtimeIds.join(', ') || 'none recorded'}) run on Docker engine ${recorded.engineId}, ` +
        `but this worker's engine is ${here}; nothing was removed`,
      { details: { sandboxId, recordedEngineId: recorded.engineId, engineId: here, runtimeIds: [...recorded.runtimeIds] } },
    );
  }

  /**
   * This plane's containers labelled with the sandbox id, the pooled container it
   * claimed (named after it), and each recorded container that still belongs to it —
   * whatever plane label it has, because it is the container this sandbox recorded (a
   * worker renamed its plane since).
   */
  private async teardownTargets(sandboxId: string, recordedIds: readonly string[]): Promise<string[]> {
    const ids = new Set((await this.options.broker.list(this.ownLabels(sandboxId))).map((container) => container.id));
    const claimed = this.options.reset === undefined ? undefined : await this.inspectIfPresent(this.containerName(sandboxId));
    if (claimed !== undefined && belongsTo(claimed, sandboxId)) ids.add(claimed.id);
    for (const id of recordedIds) {
      if (ids.has(id)) continue;
      const container = await this.inspectIfPresent(id);
      if (container !== undefined && belongsTo(container, sandboxId)) ids.add(container.id);
    }
    return [...ids];
  }

  /** A container by id, or `undefined` when it is gone (or never was one of ours). */
  private async inspectIfPresent(id: string): Promise<ContainerInfo | undefined> {
    try {
      return await this.options.broker.inspect(id, { mayBeAbsent: true });
    } catch (err) {
      if (isSandboxPlaneError(err) && err.code === 'CONTAINER_NOT_FOUND') return undefined;
      throw err;
    }
  }

  /**
   * The labels that make a container this worker's for `sandboxId`: the sandbox id and
   * the plane, so that a plane sharing the engine never touches another's containers.
   */
  private ownLabels(sandboxId: string): Record<string, string> {
    return { ...this.options.extraLabels, [SANDBOX_ID_LABEL]: sandboxId };
  }

  /** The sandbox's running containers: found by label, and by the ids it recorded (see {@link teardownTargets}). */
  private async containers(sandboxId: string, recordedIds: readonly string[]): Promise<ContainerInfo[]> {
    const found = await Promise.all((await this.teardownTargets(sandboxId, recordedIds)).map((id) => this.inspectIfPresent(id)));
    return found.filter((info): info is ContainerInfo => info?.state === 'running');
  }
}
