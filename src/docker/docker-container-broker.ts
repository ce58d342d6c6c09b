import Docker from 'dockerode';
import { isManaged, MANAGED_BY_LABEL, MANAGED_BY_VALUE, SANDBOX_ID_LABEL } from '../domain/docker-labels';
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
import { EngineCalls } from './engine-call';
import { engineMessage, engineStatusCode } from './engine-errors';
import { toCreateOptions } from './engine-requests';
import { toContainerInfo, toContainerStats, toContainerSummaries, toEngineId, toEngineMemoryBytes } from './engine-responses';
import { resolveExistingHostPath } from './host-path-resolver';
import { isMissingNetwork, SandboxNetworks } from './sandbox-networks';
import type { NetworkPoolSource, SealedNetworkMaker } from './sealed-network-pool';
import { validateContainerSpec, type SpecPolicy } from './spec-rules';

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

/** Seconds a stop waits for SIGTERM before the engine kills. */
const DEFAULT_STOP_TIMEOUT_SECONDS = 10;

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

/** How long a stop or remove of this broker's own explains the container's `die` (a stop waits 10 s at most before it kills). */
const OWN_ENDING_MS = 60_000;

function isStopped(state: ContainerState): boolean {
  return state !== ContainerState.RUNNING && state !== ContainerState.RESTARTING && state !== ContainerState.PAUSED;
}

/**
 * The Docker broker over the Engine API (dockerode; never a shell), where a reader starts:
 * it validates every spec before the first engine call, makes every call through
 * {@link EngineCalls} (logged before and after with the container id), keeps the sandboxes'
 * networks in {@link SandboxNetworks}, only ever touches containers labelled as managed by
 * us, and absorbs the harmless outcomes (stop of a stopped container, remove of a missing one).
 */
export class DockerContainerBroker implements ContainerBroker, SealedNetworkMaker {
  private readonly logger: BrokerLogger;
  private readonly engine: EngineCalls;
  private readonly networks: SandboxNetworks;
  private readonly policy: SpecPolicy;
  /** Containers this broker stopped or removed, with when: their `die` is this process's own doing. */
  private readonly endings = new Map<string, number>();
  private knownEngineId: Promise<string> | undefined;

  constructor(options: DockerContainerBrokerOptions = {}) {
    const endpoint = options.docker === undefined ? parseDockerHost(options.dockerHost) : endpointOf(options.docker);
    const docker = options.docker ?? dockerodeFor(endpoint ?? parseDockerHost(undefined));
    this.logger = options.logger ?? silentLogger;
    this.engine = new EngineCalls(docker, endpoint === undefined ? 'the given Docker client' : formatDockerEndpoint(endpoint), this.logger);
    this.networks = new SandboxNetworks(this.engine, (labels) => this.list(labels));
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
    return (await this.engine.docker.getEvents({ since: options.since, filters: JSON.stringify(options.filters) })) as NodeJS.ReadableStream;
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
    this.networks.pool = pool;
  }

  async run(input: ContainerSpecInput): Promise<ContainerInfo> {
    const spec = this.validate(input);
    const context = { image: spec.image, name: spec.name, sandboxId: spec.labels[SANDBOX_ID_LABEL], network: spec.networkMode };
    // Twice at most: a sweep may remove the network between its creation and the container's start.
    for (let attempt = 1; ; attempt += 1) {
      const network = await this.networks.forRun(spec, attempt);
      let id: string;
      try {
        const created = await this.engine.call('create', context, (docker) => docker.createContainer(toCreateOptions(spec, network.id)));
        id = created.id;
      } catch (err) {
        if (spec.name !== undefined && engineStatusCode(err) === 409) {
          return this.adopt(spec).then(
            async (adopted) => {
              // The earlier attempt's container keeps its own network; the one taken now is nobody's.
              if (network.pooled) await this.networks.drop(spec, network.id, 'a retried run adopted its earlier container');
              return adopted;
            },
            async (refused: unknown) => {
              await this.networks.drop(spec, network.id, 'the name is taken by another sandbox');
              throw refused;
            },
          );
        }
        if (attempt < 2 && isMissingNetwork(err)) continue;
        await this.networks.drop(spec, network.id, 'create failed');
        throw this.engine.mapError(err, 'create', context);
      }
      try {
        await this.start(id);
      } catch (err) {
        await this.discard(id);
        if (attempt < 2 && isMissingNetwork((err as { cause?: unknown }).cause)) continue;
        await this.networks.drop(spec, network.id, 'start failed');
        throw err;
      }
      return this.inspect(id);
    }
  }

  async createSealedNetwork(name: string, labels: Readonly<Record<string, string>>): Promise<string> {
    return this.networks.createSealedNetwork(name, labels);
  }

  async listNetworks(labels: Readonly<Record<string, string>>): Promise<NetworkSummary[]> {
    return this.networks.listNetworks(labels);
  }

  async removeNetwork(nameOrId: string): Promise<NetworkRemoveOutcome> {
    return this.networks.removeNetwork(nameOrId);
  }

  async ping(): Promise<EngineIdentity> {
    const raw: unknown = await this.engine.mapped('version', {}, (docker) => docker.version());
    const version = (raw as { Version?: unknown } | null)?.Version;
    return { version: typeof version === 'string' ? version : 'unknown', endpoint: this.engine.endpoint };
  }

  async engineId(): Promise<string> {
    // A failed read is forgotten, so the next caller asks the engine again.
    this.knownEngineId ??= this.engine
      .mapped('info', {}, (docker) => docker.info())
      .then(toEngineId)
      .catch((err: unknown) => {
        this.knownEngineId = undefined;
        throw err;
      });
    return this.knownEngineId;
  }

  async engineMemoryBytes(): Promise<number> {
    return toEngineMemoryBytes(await this.engine.mapped('info', {}, (docker) => docker.info()));
  }

  async inspect(id: string, options: { readonly mayBeAbsent?: boolean } = {}): Promise<ContainerInfo> {
    const info = await this.inspectAny(id, options.mayBeAbsent === true ? [404] : []);
    if (!isManaged(info.labels)) {
      throw new SandboxPlaneError('CONTAINER_NOT_FOUND', `Container ${id} is not managed by ${MANAGED_BY_VALUE}`, {
        details: { containerId: id },
      });
    }
    return info;
  }

  async stats(id: string): Promise<ContainerStats> {
    const info = await this.inspect(id);
    // One read, not a stream; `one-shot` skips the engine's second sample (for a CPU percentage we do not need).
    const raw: unknown = await this.engine.mapped('stats', { containerId: info.id }, (docker) =>
      docker.getContainer(info.id).stats({ stream: false, 'one-shot': true } as { stream: false }),
    );
    return toContainerStats(raw);
  }

  async list(labels: Readonly<Record<string, string>>): Promise<ContainerSummary[]> {
    const filter = { ...labels, [MANAGED_BY_LABEL]: MANAGED_BY_VALUE };
    const label = Object.entries(filter).map(([key, value]) => `${key}=${value}`);
    const raw: unknown = await this.engine.mapped('list', { labels: filter }, (docker) => docker.listContainers({ all: true, filters: { label } }));
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
    const stop = async (docker: Docker): Promise<StopOutcome> => {
      await docker.getContainer(info.id).stop({ t });
      return 'stopped';
    };
    return this.engine.mapped('stop', context, stop, [304], () => {
      this.logger.info(context, 'docker stop absorbed: container already stopped');
      return 'already_stopped';
    });
  }

  async remove(id: string, options: RemoveOptions = {}): Promise<RemoveOutcome> {
    let info: ContainerSummary;
    try {
      // A container's labels never change, so a list's answer is as good as an inspect's for the guard.
      const { listed } = options;
      info = listed !== undefined && listed.id === id && isManaged(listed.labels) ? listed : await this.inspect(id, { mayBeAbsent: true });
    } catch (err) {
      if (err instanceof SandboxPlaneError && err.code === 'CONTAINER_NOT_FOUND' && engineStatusCode(err.cause) === 404) {
        this.logger.info({ containerId: id }, 'docker remove absorbed: container already gone');
        return 'already_gone';
      }
      throw err;
    }
    const context = { containerId: info.id };
    this.ending(info.id);
    const remove = async (docker: Docker): Promise<RemoveOutcome> => {
      await docker.getContainer(info.id).remove({ force: options.force ?? true, v: true });
      return 'removed';
    };
    const outcome = await this.engine.mapped('remove', context, remove, [404, 409], (status, err) => {
      if (status === 409 && !/already in progress/i.test(engineMessage(err))) return undefined;
      this.logger.info({ ...context, statusCode: status }, 'docker remove absorbed: container already gone or going');
      return 'already_gone';
    });
    await this.networks.dropOwnOf(info);
    return outcome;
  }

  async rename(current: string, newName: string): Promise<void> {
    if (!CONTAINER_NAME.test(newName)) {
      throw new SandboxPlaneError('INVALID_INPUT', `container name ${JSON.stringify(newName)} must be 1-128 of letters, digits, _ . - starting with a letter or digit`);
    }
    const info = await this.inspect(current, { mayBeAbsent: true });
    const context = { containerId: info.id, from: info.name, to: newName };
    // By the name it was asked for, not the id just read: a claim that lost the race
    // between that read and this call must fail, not take the container over.
    const rename = (docker: Docker) => docker.getContainer(current).rename({ name: newName });
    await this.engine.call('rename', context, rename, [404, 409]).catch((err: unknown) => {
      throw this.engine.mapError(err, 'rename', { containerId: current });
    });
  }

  private async inspectAny(id: string, harmless: readonly number[] = []): Promise<ContainerInfo> {
    const raw: unknown = await this.engine.mapped('inspect', { containerId: id }, (docker) => docker.getContainer(id).inspect(), harmless);
    return toContainerInfo(raw);
  }

  private async start(id: string): Promise<void> {
    // Started again (an adopted container): its next `die` is news, not this broker's doing.
    this.endings.delete(id);
    const start = (docker: Docker) => docker.getContainer(id).start();
    await this.engine.mapped('start', { containerId: id }, start, [304], () => {
      this.logger.info({ containerId: id }, 'docker start absorbed: container already running');
      return 'already_running';
    });
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
      await this.engine.call('remove', { containerId: id, reason: 'start failed' }, (docker) => docker.getContainer(id).remove({ force: true, v: true }));
    } catch (err) {
      this.logger.warn({ containerId: id, err: engineMessage(err) }, 'docker remove after a failed start failed; the sweep will find the container');
    }
  }
}
