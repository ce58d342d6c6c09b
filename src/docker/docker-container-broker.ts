import { planeMetrics } from '../telemetry/plane-metrics';
import { inClientSpan } from '../telemetry/spans';
import Docker from 'dockerode';
import { logFileBytes } from '../domain/container-log';
import { ADAPTER_LABEL, MANAGED_BY_LABEL, MANAGED_BY_VALUE, PLANE_LABEL, SANDBOX_ID_LABEL } from '../domain/docker-labels';
import { POOL_HOST_LABEL, POOL_LABEL } from '../domain/warm-pool';
import { isPooledNetworkName } from '../domain/network-pool';
import type { NetworkPoolSource, PooledNetwork, SealedNetworkMaker } from './sealed-network-pool';
import { SandboxPlaneError } from '../domain/errors';
import { silentLogger, type BrokerLogger } from './broker-logger';
import {
  ContainerState,
  type ContainerBroker,
  type ContainerInfo,
  type ContainerStats,
  type EngineIdentity,
  type ContainerSummary,
  type NetworkRemoveOutcome,
  type NetworkSummary,
  type RemoveOptions,
  type RemoveOutcome,
  type StopOptions,
  type StopOutcome,
} from './container-broker';
import { CONTAINER_NAME, type ContainerSpecInput, type ValidatedContainerSpec } from './container-spec';
import { formatDockerEndpoint, parseDockerHost, type DockerEndpoint } from './docker-host';
import { engineMessage, engineStatusCode, mapEngineError } from './engine-errors';
import { toContainerInfo, toContainerStats, toContainerSummaries, toEngineId, toEngineMemoryBytes, toNetworkSummaries } from './engine-responses';
import { resolveExistingHostPath } from './host-path-resolver';
import { ownNetworkName, validateContainerSpec, type SpecPolicy } from './spec-rules';

export interface DockerContainerBrokerOptions {
  /** A ready dockerode client (tests pass a spy); otherwise one is built from `dockerHost`. */
  readonly docker?: Docker;
  /** DOCKER_HOST form; absent means the default socket. Ignored when `docker` is given. */
  readonly dockerHost?: string;
  readonly logger?: BrokerLogger;
  /** Exact image references allowed without a digest. */
  readonly imageAllowlist?: readonly string[];
  /** Host paths to protect beyond the built-in list (the engine's socket is added by itself). */
  readonly extraForbiddenPaths?: readonly string[];
  /**
   * Whether the engine shares this machine's file system, so bind sources are judged
   * after resolving symbolic links. Default: true for a unix socket, false otherwise.
   */
  readonly engineIsLocal?: boolean;
}

type ContainerCreateOptions = Docker.ContainerCreateOptions;

/** Seconds a stop waits for SIGTERM before the engine kills. */
const DEFAULT_STOP_TIMEOUT_SECONDS = 10;

/**
 * A sandbox's own bridge (DESIGN §12, docs/security.md "Sealed sandboxes"): no traffic
 * between containers on it, and no address translation out, so nothing it sends out of
 * the host can be answered. Not `Internal`: this engine publishes no port of a container
 * whose only network is internal, and the published loopback port is how the sandbox serves.
 */
export const SEALED_BRIDGE_OPTIONS: Readonly<Record<string, string>> = Object.freeze({
  'com.docker.network.bridge.enable_icc': 'false',
  'com.docker.network.bridge.enable_ip_masquerade': 'false',
});

/** The labels a sandbox's network copies from its container, so sweeps find it the same way. */
const NETWORK_LABELS = [MANAGED_BY_LABEL, PLANE_LABEL, SANDBOX_ID_LABEL, ADAPTER_LABEL, POOL_LABEL, POOL_HOST_LABEL] as const;

function networkLabelsOf(labels: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(NETWORK_LABELS.flatMap((key) => (labels[key] === undefined ? [] : [[key, labels[key]]])));
}

function isMissingNetwork(err: unknown): boolean {
  return engineStatusCode(err) === 404 && /network/i.test(engineMessage(err)) && !/no such image/i.test(engineMessage(err));
}

function endpointOf(docker: Docker): DockerEndpoint | undefined {
  const modem = (docker as unknown as { modem?: { socketPath?: unknown; host?: unknown; port?: unknown } }).modem;
  if (typeof modem?.host === 'string' && modem.host !== '') {
    return { kind: 'tcp', host: modem.host, port: Number(modem.port) };
  }
  if (typeof modem?.socketPath === 'string') return { kind: 'unix', socketPath: modem.socketPath };
  return undefined;
}

function dockerodeFor(endpoint: DockerEndpoint): Docker {
  // Every field is set, even to undefined: dockerode fills gaps from process.env.DOCKER_HOST.
  return endpoint.kind === 'tcp'
    ? new Docker({ host: endpoint.host, port: endpoint.port, protocol: 'http', socketPath: undefined })
    : new Docker({ socketPath: endpoint.socketPath, host: undefined, port: undefined });
}

/** The engine's create options for a validated spec. Nothing the spec did not validate is set. */
export function toCreateOptions(spec: ValidatedContainerSpec, networkId?: string): ContainerCreateOptions {
  const exposed: Record<string, Record<string, never>> = {};
  const bindings: Record<string, Array<{ HostIp: string; HostPort: string }>> = {};
  for (const port of spec.ports) {
    const key = `${port.containerPort}/${port.protocol}`;
    exposed[key] = {};
    (bindings[key] ??= []).push({ HostIp: port.hostIp, HostPort: port.hostPort === 0 ? '' : String(port.hostPort) });
  }
  return {
    ...(spec.name === undefined ? {} : { name: spec.name }),
    Image: spec.image,
    ...(spec.command === undefined ? {} : { Cmd: [...spec.command] }),
    ...(spec.entrypoint === undefined ? {} : { Entrypoint: [...spec.entrypoint] }),
    Env: Object.entries(spec.env).map(([key, value]) => `${key}=${value}`),
    Labels: { ...spec.labels },
    ...(spec.user === undefined ? {} : { User: spec.user }),
    ...(spec.workingDir === undefined ? {} : { WorkingDir: spec.workingDir }),
    ExposedPorts: exposed,
    HostConfig: {
      Privileged: false,
      CapAdd: [],
      CapDrop: [...spec.capDrop],
      SecurityOpt: ['no-new-privileges'],
      // By id: two networks of one name (a race between processes) would make the name ambiguous.
      NetworkMode: networkId ?? spec.networkMode,
      PortBindings: bindings,
      PublishAllPorts: false,
      Mounts: spec.binds.map((bind) => ({ Type: 'bind' as const, Source: bind.source, Target: bind.target, ReadOnly: bind.readOnly })),
      Memory: spec.limits.memoryBytes,
      MemorySwap: spec.limits.memoryBytes,
      PidsLimit: spec.limits.pidsLimit,
      NanoCpus: spec.limits.nanoCpus,
      // Named, not left to the engine's default driver: a daemon set to journald or syslog would keep no bound here.
      LogConfig: {
        Type: 'json-file',
        Config: { 'max-size': String(logFileBytes({ maxBytes: spec.limits.logMaxBytes, files: spec.limits.logFiles })), 'max-file': String(spec.limits.logFiles) },
      },
      RestartPolicy: { Name: 'no' },
      AutoRemove: false,
      ReadonlyRootfs: spec.readonlyRootfs,
      Devices: [],
    },
  };
}

function isManaged(labels: Readonly<Record<string, string>>): boolean {
  return labels[MANAGED_BY_LABEL] === MANAGED_BY_VALUE;
}

function isStopped(state: ContainerState): boolean {
  return state !== ContainerState.RUNNING && state !== ContainerState.RESTARTING && state !== ContainerState.PAUSED;
}

/**
 * The Docker broker over the Engine API (dockerode; never a shell). Validates every
 * spec before the first engine call, logs each call before and after with the
 * container id, only ever touches containers labelled as managed by us, and absorbs
 * the harmless outcomes (stop of a stopped container, remove of a missing one).
 */
/** What a span of an engine call says: the operation and the container or image, nothing secret. */
function spanAttributes(operation: string, context: Readonly<Record<string, unknown>>): Record<string, string> {
  const attributes: Record<string, string> = { 'docker.operation': operation };
  for (const [key, name] of [
    ['containerId', 'container.id'],
    ['image', 'container.image.name'],
    ['name', 'container.name'],
  ] as const) {
    if (typeof context[key] === 'string') attributes[name] = context[key];
  }
  return attributes;
}

/** How long a stop or remove of this broker's own explains the container's `die` (a stop waits 10 s at most before it kills). */
const OWN_ENDING_MS = 60_000;

export class DockerContainerBroker implements ContainerBroker, SealedNetworkMaker {
  private readonly docker: Docker;
  private readonly logger: BrokerLogger;
  private readonly endpoint: string;
  private readonly policy: SpecPolicy;
  private knownEngineId: Promise<string> | undefined;
  private readonly networkLocks = new Map<string, Promise<string>>();
  private networkPool: NetworkPoolSource | undefined;
  /** Containers this broker stopped or removed, with when: their `die` is this process's own doing. */
  private readonly endings = new Map<string, number>();

  constructor(options: DockerContainerBrokerOptions = {}) {
    const endpoint = options.docker === undefined ? parseDockerHost(options.dockerHost) : endpointOf(options.docker);
    this.docker = options.docker ?? dockerodeFor(endpoint ?? parseDockerHost(undefined));
    this.logger = options.logger ?? silentLogger;
    this.endpoint = endpoint === undefined ? 'the given Docker client' : formatDockerEndpoint(endpoint);
    const local = options.engineIsLocal ?? endpoint?.kind === 'unix';
    const socketPaths = endpoint !== undefined && endpoint.kind !== 'tcp' ? [endpoint.socketPath] : [];
    this.policy = Object.freeze({
      imageAllowlist: Object.freeze([...(options.imageAllowlist ?? [])]),
      extraForbiddenPaths: Object.freeze([...socketPaths, ...(options.extraForbiddenPaths ?? [])]),
      ...(local ? { resolveHostPath: resolveExistingHostPath } : {}),
    });
  }

  /** The engine's event stream from `since` (seconds), filtered (engine-events.ts follows it). */
  async events(options: { since: number; filters: Record<string, string[]> }): Promise<NodeJS.ReadableStream> {
    return (await this.docker.getEvents({ since: options.since, filters: JSON.stringify(options.filters) })) as NodeJS.ReadableStream;
  }

  /**
   * Whether this broker stopped or removed the container (full id) in the last minute: the
   * engine's `die` for it is a teardown's or a replacement's, not a death to look into.
   */
  endedHere(containerId: string): boolean {
    const at = this.endings.get(containerId);
    return at !== undefined && Date.now() - at <= OWN_ENDING_MS;
  }

  private ending(containerId: string): void {
    const now = Date.now();
    for (const [id, at] of this.endings) if (now - at > OWN_ENDING_MS) this.endings.delete(id);
    this.endings.set(containerId, now);
  }

  /** Validates without touching the engine; `run` does the same first. */
  validate(spec: ContainerSpecInput): ValidatedContainerSpec {
    return validateContainerSpec(spec, this.policy);
  }

  /**
   * Where a sandbox's container takes its sealed network from, when one is ready there
   * (pre-made sealed networks, DESIGN §12); `undefined`: each run makes its own.
   */
  useNetworkPool(pool: NetworkPoolSource | undefined): void {
    this.networkPool = pool;
  }

  async run(input: ContainerSpecInput): Promise<ContainerInfo> {
    const spec = this.validate(input);
    const context = { image: spec.image, name: spec.name, sandboxId: spec.labels[SANDBOX_ID_LABEL], network: spec.networkMode };
    // Twice at most: a sweep may remove the network between its creation and the container's start.
    for (let attempt = 1; ; attempt += 1) {
      // A pooled network on the first try only: the second follows a network that went missing.
      const pooled = attempt === 1 ? this.pooledNetworkFor(spec) : undefined;
      const networkId = pooled?.id ?? (await this.ensureNetwork(spec));
      let id: string;
      try {
        const created = await this.call('create', context, () => this.docker.createContainer(toCreateOptions(spec, networkId)));
        id = created.id;
      } catch (err) {
        if (spec.name !== undefined && engineStatusCode(err) === 409) {
          return this.adopt(spec).then(
            async (adopted) => {
              // The earlier attempt's container keeps its own network; the one taken now is nobody's.
              if (pooled !== undefined) await this.dropNetwork(spec, pooled.id, 'a retried run adopted its earlier container');
              return adopted;
            },
            async (refused: unknown) => {
              await this.dropNetwork(spec, networkId, 'the name is taken by another sandbox');
              throw refused;
            },
          );
        }
        if (attempt < 2 && isMissingNetwork(err)) continue;
        await this.dropNetwork(spec, networkId, 'create failed');
        throw this.mapError(err, 'create', context);
      }
      try {
        await this.start(id);
      } catch (err) {
        await this.discard(id);
        if (attempt < 2 && isMissingNetwork((err as { cause?: unknown }).cause)) continue;
        await this.dropNetwork(spec, networkId, 'start failed');
        throw err;
      }
      return this.inspect(id);
    }
  }

  /**
   * A pre-made sealed network for a sandbox's container: never for a warm pool's idle
   * container (its start is not waited on) nor for another plane's spec.
   */
  private pooledNetworkFor(spec: ValidatedContainerSpec): PooledNetwork | undefined {
    const pool = this.networkPool;
    if (pool === undefined || spec.networkMode === '' || spec.labels[POOL_LABEL] !== undefined || spec.labels[PLANE_LABEL] !== pool.plane) return undefined;
    return pool.take();
  }

  /**
   * The id of the sandbox's own sealed network: the one that exists for the same owner
   * (an earlier attempt's, or a sibling container's), else a new one. Serialised per name
   * in this process, as the engine's duplicate check is not atomic; two processes racing
   * both pick the lowest id, and the sweep removes the other.
   */
  private async ensureNetwork(spec: ValidatedContainerSpec): Promise<string> {
    const name = spec.networkMode;
    const labels = networkLabelsOf(spec.labels);
    const previous = this.networkLocks.get(name) ?? Promise.resolve();
    const current = previous
      .catch(() => undefined)
      .then(async () => {
        const existing = await this.networksNamed(name);
        if (existing.length > 0) {
          const ours = existing.filter((network) => isManaged(network.labels) && network.labels[SANDBOX_ID_LABEL] === labels[SANDBOX_ID_LABEL]);
          const [first] = ours.map((network) => network.id).sort();
          if (first === undefined) {
            throw new SandboxPlaneError('CONTAINER_CONFLICT', `Network name ${name} is taken by a network that is not ${labels[SANDBOX_ID_LABEL] ?? 'this owner'}'s`, {
              details: { network: name },
            });
          }
          return first;
        }
        return this.createSealedNetwork(name, labels);
      });
    this.networkLocks.set(name, current);
    try {
      return await current;
    } finally {
      if (this.networkLocks.get(name) === current) this.networkLocks.delete(name);
    }
  }

  /** A new sealed bridge (DESIGN §12) named `name`; its id. */
  async createSealedNetwork(name: string, labels: Readonly<Record<string, string>>): Promise<string> {
    const created = (await this.engineCall('network create', { network: name, sandboxId: labels[SANDBOX_ID_LABEL] }, () =>
      this.docker.createNetwork({
        Name: name,
        CheckDuplicate: true,
        Driver: 'bridge',
        Internal: false,
        Attachable: false,
        EnableIPv6: false,
        Options: { ...SEALED_BRIDGE_OPTIONS },
        Labels: { ...labels },
      }),
    )) as { id?: unknown };
    if (typeof created.id !== 'string') throw new SandboxPlaneError('DOCKER_RESPONSE_INVALID', `The engine created network ${name} without telling its id`);
    return created.id;
  }

  /** Every network with exactly this name, ours or not (the engine's name filter also matches parts of names). */
  private async networksNamed(name: string): Promise<NetworkSummary[]> {
    const raw: unknown = await this.engineCall('network list', { network: name }, () => this.docker.listNetworks({ filters: { name: [name] } }));
    return toNetworkSummaries(raw).filter((network) => network.name === name);
  }

  /**
   * Removes the owner's network once no container of that owner is left on it (a sandbox
   * could hold two); a failure is logged and left to the sweep.
   */
  private async dropNetwork(spec: { readonly labels: Readonly<Record<string, string>> }, networkId: string, reason: string): Promise<void> {
    const owner = spec.labels[SANDBOX_ID_LABEL];
    try {
      const siblings = (await this.list(owner === undefined ? {} : { [SANDBOX_ID_LABEL]: owner })).filter((container) => Object.values(container.networks).includes(networkId));
      if (siblings.length > 0) return;
      await this.removeNetwork(networkId);
    } catch (err) {
      this.logger.warn({ networkId, reason, err: engineMessage(err) }, 'docker network remove failed; the sweep will find the network');
    }
  }

  async listNetworks(labels: Readonly<Record<string, string>>): Promise<NetworkSummary[]> {
    const filter = { ...labels, [MANAGED_BY_LABEL]: MANAGED_BY_VALUE };
    const label = Object.entries(filter).map(([key, value]) => `${key}=${value}`);
    const raw: unknown = await this.engineCall('network list', { labels: filter }, () => this.docker.listNetworks({ filters: { label } }));
    return toNetworkSummaries(raw).filter((network) => isManaged(network.labels));
  }

  /** A network's labels, or `undefined` when there is no such network. */
  private async networkLabels(nameOrId: string): Promise<Readonly<Record<string, string>> | undefined> {
    try {
      const raw = (await this.call('network inspect', { network: nameOrId }, () => this.docker.getNetwork(nameOrId).inspect(), [404])) as { Labels?: unknown };
      const labels = raw.Labels;
      return typeof labels === 'object' && labels !== null ? (labels as Record<string, string>) : {};
    } catch (err) {
      if (engineStatusCode(err) === 404) return undefined;
      throw this.mapError(err, 'network inspect', {});
    }
  }

  async removeNetwork(nameOrId: string): Promise<NetworkRemoveOutcome> {
    const labels = await this.networkLabels(nameOrId);
    if (labels === undefined) {
      this.logger.info({ network: nameOrId }, 'docker network remove absorbed: network already gone');
      return 'already_gone';
    }
    if (!isManaged(labels)) {
      throw new SandboxPlaneError('CONTAINER_NOT_FOUND', `Network ${nameOrId} is not managed by ${MANAGED_BY_VALUE}`, { details: { network: nameOrId } });
    }
    try {
      await this.call('network remove', { network: nameOrId }, () => this.docker.getNetwork(nameOrId).remove(), [403, 404, 409]);
      return 'removed';
    } catch (err) {
      const status = engineStatusCode(err);
      if (status === 404) return 'already_gone';
      if (status === 403 || status === 409) {
        this.logger.info({ network: nameOrId, statusCode: status, err: engineMessage(err) }, 'docker network remove skipped: a container still uses it');
        return 'in_use';
      }
      throw this.mapError(err, 'network remove', {});
    }
  }

  async inspect(id: string, options: { readonly mayBeAbsent?: boolean } = {}): Promise<ContainerInfo> {
    return this.inspectManaged(id, options.mayBeAbsent === true ? [404] : []);
  }

  async ping(): Promise<EngineIdentity> {
    const raw: unknown = await this.engineCall('version', {}, () => this.docker.version());
    const version = (raw as { Version?: unknown } | null)?.Version;
    return { version: typeof version === 'string' ? version : 'unknown', endpoint: this.endpoint };
  }

  async engineId(): Promise<string> {
    // A failed read is forgotten, so the next caller asks the engine again.
    this.knownEngineId ??= this.readEngineId().catch((err: unknown) => {
      this.knownEngineId = undefined;
      throw err;
    });
    return this.knownEngineId;
  }

  async engineMemoryBytes(): Promise<number> {
    const raw: unknown = await this.engineCall('info', {}, () => this.docker.info());
    return toEngineMemoryBytes(raw);
  }

  private async readEngineId(): Promise<string> {
    const raw: unknown = await this.engineCall('info', {}, () => this.docker.info());
    return toEngineId(raw);
  }

  private async inspectManaged(id: string, harmless: readonly number[] = []): Promise<ContainerInfo> {
    const info = await this.inspectAny(id, harmless);
    if (!isManaged(info.labels)) {
      throw new SandboxPlaneError('CONTAINER_NOT_FOUND', `Container ${id} is not managed by ${MANAGED_BY_VALUE}`, {
        details: { containerId: id },
      });
    }
    return info;
  }

  async stats(id: string): Promise<ContainerStats> {
    const info = await this.inspectManaged(id);
    const context = { containerId: info.id };
    // One read, not a stream; `one-shot` skips the engine's second sample (for a CPU percentage we do not need).
    const raw: unknown = await this.engineCall('stats', context, () => this.docker.getContainer(info.id).stats({ stream: false, 'one-shot': true } as { stream: false }));
    return toContainerStats(raw);
  }

  async list(labels: Readonly<Record<string, string>>): Promise<ContainerSummary[]> {
    const filter = { ...labels, [MANAGED_BY_LABEL]: MANAGED_BY_VALUE };
    const label = Object.entries(filter).map(([key, value]) => `${key}=${value}`);
    const raw: unknown = await this.engineCall('list', { labels: filter }, () => this.docker.listContainers({ all: true, filters: { label } }));
    return toContainerSummaries(raw);
  }

  async stop(id: string, options: StopOptions = {}): Promise<StopOutcome> {
    const info = await this.inspect(id);
    const context = { containerId: info.id };
    if (isStopped(info.state)) {
      this.logger.info({ ...context, state: info.state }, 'docker stop skipped: container already stopped');
      return 'already_stopped';
    }
    const t = options.timeoutSeconds ?? DEFAULT_STOP_TIMEOUT_SECONDS;
    this.ending(info.id);
    try {
      await this.call('stop', context, () => this.docker.getContainer(info.id).stop({ t }), [304]);
      return 'stopped';
    } catch (err) {
      if (engineStatusCode(err) === 304) {
        this.logger.info(context, 'docker stop absorbed: container already stopped');
        return 'already_stopped';
      }
      throw this.mapError(err, 'stop', context);
    }
  }

  async remove(id: string, options: RemoveOptions = {}): Promise<RemoveOutcome> {
    let info: ContainerSummary;
    try {
      // A container's labels never change, so a list's answer is as good as an inspect's for the guard.
      const { listed } = options;
      info = listed !== undefined && listed.id === id && isManaged(listed.labels) ? listed : await this.inspectManaged(id, [404]);
    } catch (err) {
      if (err instanceof SandboxPlaneError && err.code === 'CONTAINER_NOT_FOUND' && engineStatusCode(err.cause) === 404) {
        this.logger.info({ containerId: id }, 'docker remove absorbed: container already gone');
        return 'already_gone';
      }
      throw err;
    }
    const context = { containerId: info.id };
    let outcome: RemoveOutcome = 'removed';
    this.ending(info.id);
    try {
      await this.call('remove', context, () => this.docker.getContainer(info.id).remove({ force: options.force ?? true, v: true }), [404, 409]);
    } catch (err) {
      const status = engineStatusCode(err);
      if (!(status === 404 || (status === 409 && /already in progress/i.test(engineMessage(err))))) throw this.mapError(err, 'remove', context);
      this.logger.info({ ...context, statusCode: status }, 'docker remove absorbed: container already gone or going');
      outcome = 'already_gone';
    }
    // The container's own network goes with it (the sandbox's, or the pooled one it was
    // handed; never one it was not given), also when another remover got there first:
    // whichever finds no container left takes it.
    const own = ownNetworkName(info.labels);
    for (const [name, networkId] of Object.entries(info.networks)) {
      const pooled = isPooledNetworkName(info.labels[PLANE_LABEL], name);
      if (name !== own && !pooled) continue;
      // A container that never started knows its network by name only.
      const ids =
        networkId !== ''
          ? [networkId]
          : (await this.networksNamed(name)).filter((network) => pooled || network.labels[SANDBOX_ID_LABEL] === info.labels[SANDBOX_ID_LABEL]).map((network) => network.id);
      for (const id of ids) await this.dropNetwork(info, id, 'its container was removed');
    }
    return outcome;
  }

  async rename(current: string, newName: string): Promise<void> {
    if (!CONTAINER_NAME.test(newName)) {
      throw new SandboxPlaneError('INVALID_INPUT', `container name ${JSON.stringify(newName)} must be 1-128 of letters, digits, _ . - starting with a letter or digit`);
    }
    const info = await this.inspectManaged(current, [404]);
    const context = { containerId: info.id, from: info.name, to: newName };
    // By the name it was asked for, not the id just read: a claim that lost the race
    // between that read and this call must fail, not take the container over.
    await this.call('rename', context, () => this.docker.getContainer(current).rename({ name: newName }), [404, 409]).catch((err: unknown) => {
      throw this.mapError(err, 'rename', { containerId: current });
    });
  }

  private async inspectAny(id: string, harmless: readonly number[] = []): Promise<ContainerInfo> {
    const raw: unknown = await this.engineCall('inspect', { containerId: id }, () => this.docker.getContainer(id).inspect(), harmless);
    return toContainerInfo(raw);
  }

  private async start(id: string): Promise<void> {
    // Started again (an adopted container): its next `die` is news, not this broker's doing.
    this.endings.delete(id);
    try {
      await this.call('start', { containerId: id }, () => this.docker.getContainer(id).start(), [304]);
    } catch (err) {
      if (engineStatusCode(err) === 304) {
        this.logger.info({ containerId: id }, 'docker start absorbed: container already running');
        return;
      }
      throw this.mapError(err, 'start', { containerId: id });
    }
  }

  /** A retried run finds the container its first attempt made, by name and sandbox label. */
  private async adopt(spec: ValidatedContainerSpec): Promise<ContainerInfo> {
    const name = spec.name ?? '';
    const existing = await this.inspectAny(name);
    const sandboxId = spec.labels[SANDBOX_ID_LABEL];
    if (!isManaged(existing.labels) || existing.labels[SANDBOX_ID_LABEL] !== sandboxId) {
      throw new SandboxPlaneError('CONTAINER_CONFLICT', `Container name ${name} is taken by container ${existing.id}, which is not sandbox ${sandboxId}'s`, {
        details: { name, containerId: existing.id },
      });
    }
    this.logger.info({ containerId: existing.id, name, state: existing.state }, 'docker run adopted the container of an earlier attempt');
    if (existing.state === ContainerState.CREATED || existing.state === ContainerState.EXITED) await this.start(existing.id);
    return this.inspect(existing.id);
  }

  /** Compensation after a failed start: the created container must not linger. */
  private async discard(id: string): Promise<void> {
    this.ending(id);
    try {
      await this.call('remove', { containerId: id, reason: 'start failed' }, () => this.docker.getContainer(id).remove({ force: true, v: true }));
    } catch (err) {
      this.logger.warn({ containerId: id, err: engineMessage(err) }, 'docker remove after a failed start failed; the sweep will find the container');
    }
  }

  /** {@link call}, its failure mapped to the taxonomy (naming the context's container id, when it has one). */
  private async engineCall<T>(operation: string, context: { containerId?: string; [key: string]: unknown }, fn: () => Promise<T>, harmless: readonly number[] = []): Promise<T> {
    return this.call(operation, context, fn, harmless).catch((err: unknown) => {
      throw this.mapError(err, operation, context);
    });
  }

  private mapError(err: unknown, operation: string, context: { containerId?: string; image?: string }): SandboxPlaneError {
    return mapEngineError(err, {
      operation,
      endpoint: this.endpoint,
      ...(context.containerId === undefined ? {} : { containerId: context.containerId }),
      ...(context.image === undefined ? {} : { image: context.image }),
    });
  }

  /**
   * One engine call, logged before and after (reads at debug level). Answers listed in
   * `harmless` are the caller's to absorb, so they are logged at info, not warn.
   */
  private async call<T>(operation: string, context: Record<string, unknown>, fn: () => Promise<T>, harmless: readonly number[] = []): Promise<T> {
    const read = operation === 'inspect' || operation === 'list' || operation === 'info' || operation === 'stats';
    const log = (obj: object, msg: string) => (read ? this.logger.debug?.(obj, msg) : this.logger.info(obj, msg));
    // One span and one timing per engine call (DESIGN §17), under the activity that made it.
    const outcome = await inClientSpan(`docker ${operation}`, spanAttributes(operation, context), async (span): Promise<{ result: T } | { harmless: unknown }> => {
      const started = Date.now();
      const timed = planeMetrics.dockerCall(operation);
      log({ ...context, operation, endpoint: this.endpoint }, `docker ${operation}`);
      try {
        const result = await fn();
        timed('ok');
        const containerId = (result as { id?: unknown } | null)?.id;
        if (typeof containerId === 'string' && operation === 'create') span.setAttribute('container.id', containerId);
        log({ ...context, ...(typeof containerId === 'string' && operation === 'create' ? { containerId } : {}), operation, ms: Date.now() - started }, `docker ${operation} done`);
        return { result };
      } catch (err) {
        const statusCode = engineStatusCode(err);
        const fields = { ...context, operation, ms: Date.now() - started, err: engineMessage(err), statusCode };
        if (statusCode !== undefined && harmless.includes(statusCode)) {
          // The caller absorbs it (a 404 on a remove): an answer, not a failed call.
          timed('ok');
          span.setAttribute('http.response.status_code', statusCode);
          this.logger.info(fields, `docker ${operation} answered ${statusCode}`);
          return { harmless: err };
        }
        timed('error');
        this.logger.warn(fields, `docker ${operation} failed`);
        throw err;
      }
    });
    if ('harmless' in outcome) throw outcome.harmless;
    return outcome.result;
  }
}
