import type Docker from 'dockerode';
import { ADAPTER_LABEL, isManaged, MANAGED_BY_LABEL, MANAGED_BY_VALUE, PLANE_LABEL, SANDBOX_ID_LABEL } from '../domain/docker-labels';
import { SandboxPlaneError } from '../domain/errors';
import { isPooledNetworkName } from '../domain/network-pool';
import { POOL_HOST_LABEL, POOL_LABEL } from '../domain/warm-pool';
import type { ContainerSummary, NetworkRemoveOutcome, NetworkSummary } from './container-broker';
import type { ValidatedContainerSpec } from './container-spec';
import type { EngineCalls } from './engine-call';
import { engineMessage, engineStatusCode } from './engine-errors';
import { toSealedNetworkOptions } from './engine-requests';
import { toNetworkSummaries } from './engine-responses';
import type { NetworkPoolSource, SealedNetworkMaker } from './sealed-network-pool';
import { ownNetworkName } from './spec-rules';

/** The labels a sandbox's network copies from its container, so sweeps find it the same way. */
const NETWORK_LABELS = [MANAGED_BY_LABEL, PLANE_LABEL, SANDBOX_ID_LABEL, ADAPTER_LABEL, POOL_LABEL, POOL_HOST_LABEL] as const;

function networkLabelsOf(labels: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(NETWORK_LABELS.flatMap((key) => (labels[key] === undefined ? [] : [[key, labels[key]]])));
}

/** Whether a create or start failed because the container's network is gone (a sweep removed it meanwhile). */
export function isMissingNetwork(err: unknown): boolean {
  return engineStatusCode(err) === 404 && /network/i.test(engineMessage(err)) && !/no such image/i.test(engineMessage(err));
}

/**
 * The sandboxes' own sealed networks on one engine (DESIGN §12): found or made for a run,
 * or taken from the pre-made ones, and removed with the last of their owner's containers.
 * Only networks labelled as ours are ever removed.
 */
export class SandboxNetworks implements SealedNetworkMaker {
  private readonly locks = new Map<string, Promise<string>>();
  /** Where runs take pre-made sealed networks from; `undefined`: each run makes its own. */
  pool: NetworkPoolSource | undefined;

  constructor(
    private readonly engine: EngineCalls,
    /** The broker's list of its containers: a network goes only once none of its owner's is left on it. */
    private readonly containers: (labels: Readonly<Record<string, string>>) => Promise<ContainerSummary[]>,
  ) {}

  /**
   * The network a run's container goes on. A pooled one on the first attempt only (the second
   * follows a network that went missing), and never for a warm pool's idle container (its start
   * is not waited on) nor for another plane's spec; otherwise the sandbox's own.
   */
  async forRun(spec: ValidatedContainerSpec, attempt: number): Promise<{ readonly id: string; readonly pooled: boolean }> {
    const pool = this.pool;
    const poolable = attempt === 1 && pool !== undefined && spec.networkMode !== '' && spec.labels[POOL_LABEL] === undefined && spec.labels[PLANE_LABEL] === pool.plane;
    const pooled = poolable ? pool.take() : undefined;
    return pooled === undefined ? { id: await this.ensure(spec), pooled: false } : { id: pooled.id, pooled: true };
  }

  /**
   * The id of the sandbox's own sealed network: the one that exists for the same owner
   * (an earlier attempt's, or a sibling container's), else a new one. Serialised per name
   * in this process, as the engine's duplicate check is not atomic; two processes racing
   * both pick the lowest id, and the sweep removes the other.
   */
  private async ensure(spec: ValidatedContainerSpec): Promise<string> {
    const name = spec.networkMode;
    const labels = networkLabelsOf(spec.labels);
    const previous = this.locks.get(name) ?? Promise.resolve();
    const current = previous
      .catch(() => undefined)
      .then(async () => {
        const existing = await this.named(name);
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
    this.locks.set(name, current);
    try {
      return await current;
    } finally {
      if (this.locks.get(name) === current) this.locks.delete(name);
    }
  }

  /** A new sealed bridge (DESIGN §12) named `name`; its id. */
  async createSealedNetwork(name: string, labels: Readonly<Record<string, string>>): Promise<string> {
    const context = { network: name, sandboxId: labels[SANDBOX_ID_LABEL] };
    const created = (await this.engine.mapped('network create', context, (docker) => docker.createNetwork(toSealedNetworkOptions(name, labels)))) as { id?: unknown };
    if (typeof created.id !== 'string') throw new SandboxPlaneError('DOCKER_RESPONSE_INVALID', `The engine created network ${name} without telling its id`);
    return created.id;
  }

  /** Every network with exactly this name, ours or not (the engine's name filter also matches parts of names). */
  private async named(name: string): Promise<NetworkSummary[]> {
    const raw: unknown = await this.engine.mapped('network list', { network: name }, (docker) => docker.listNetworks({ filters: { name: [name] } }));
    return toNetworkSummaries(raw).filter((network) => network.name === name);
  }

  /**
   * Removes the owner's network once no container of that owner is left on it (a sandbox
   * could hold two); a failure is logged and left to the sweep.
   */
  async drop(spec: { readonly labels: Readonly<Record<string, string>> }, networkId: string, reason: string): Promise<void> {
    const owner = spec.labels[SANDBOX_ID_LABEL];
    try {
      const siblings = (await this.containers(owner === undefined ? {} : { [SANDBOX_ID_LABEL]: owner })).filter((container) => Object.values(container.networks).includes(networkId));
      if (siblings.length > 0) return;
      await this.removeNetwork(networkId);
    } catch (err) {
      this.engine.logger.warn({ networkId, reason, err: engineMessage(err) }, 'docker network remove failed; the sweep will find the network');
    }
  }

  /**
   * A removed container's own network goes with it (the sandbox's, or the pooled one it was
   * handed; never one it was not given), also when another remover got there first:
   * whichever finds no container left takes it.
   */
  async dropOwnOf(container: ContainerSummary): Promise<void> {
    const own = ownNetworkName(container.labels);
    for (const [name, networkId] of Object.entries(container.networks)) {
      const pooled = isPooledNetworkName(container.labels[PLANE_LABEL], name);
      if (name !== own && !pooled) continue;
      // A container that never started knows its network by name only.
      const ids =
        networkId !== ''
          ? [networkId]
          : (await this.named(name)).filter((network) => pooled || network.labels[SANDBOX_ID_LABEL] === container.labels[SANDBOX_ID_LABEL]).map((network) => network.id);
      for (const id of ids) await this.drop(container, id, 'its container was removed');
    }
  }

  /** Every network carrying our managed-by label and all of `labels`. */
  async listNetworks(labels: Readonly<Record<string, string>>): Promise<NetworkSummary[]> {
    const filter = { ...labels, [MANAGED_BY_LABEL]: MANAGED_BY_VALUE };
    const label = Object.entries(filter).map(([key, value]) => `${key}=${value}`);
    const raw: unknown = await this.engine.mapped('network list', { labels: filter }, (docker) => docker.listNetworks({ filters: { label } }));
    return toNetworkSummaries(raw).filter((network) => isManaged(network.labels));
  }

  /** Removes one of our networks, by name or id. */
  async removeNetwork(nameOrId: string): Promise<NetworkRemoveOutcome> {
    const context = { network: nameOrId };
    const inspect = (docker: Docker) => docker.getNetwork(nameOrId).inspect() as Promise<{ Labels?: unknown }>;
    const network = await this.engine.mapped('network inspect', context, inspect, [404], () => 'gone' as const);
    if (network === 'gone') {
      this.engine.logger.info(context, 'docker network remove absorbed: network already gone');
      return 'already_gone';
    }
    if (typeof network.Labels !== 'object' || network.Labels === null || !isManaged(network.Labels as Record<string, string>)) {
      throw new SandboxPlaneError('CONTAINER_NOT_FOUND', `Network ${nameOrId} is not managed by ${MANAGED_BY_VALUE}`, { details: context });
    }
    const remove = async (docker: Docker): Promise<NetworkRemoveOutcome> => {
      await docker.getNetwork(nameOrId).remove();
      return 'removed';
    };
    return this.engine.mapped('network remove', context, remove, [403, 404, 409], (status, err) => {
      if (status === 404) return 'already_gone';
      this.engine.logger.info({ ...context, statusCode: status, err: engineMessage(err) }, 'docker network remove skipped: a container still uses it');
      return 'in_use';
    });
  }
}
