import { heartbeat, log } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { OPEN_LIFECYCLES_QUERY, sandboxIdFromWorkflowId, workflowIdFor } from '../domain/contract-names';
import { ADAPTER_LABEL, managedContainersFilter, PLANE_LABEL, SANDBOX_ID_LABEL } from '../domain/docker-labels';
import { belongsTo, containerOwner } from '../domain/warm-pool';
import { sameEngine } from '../domain/engine-identity';
import { isSandboxPlaneError } from '../domain/errors';
import { DEFAULT_SWEEP_REMOVE_CONCURRENCY, type InventoryRow, type LeakFinding, type ManagedContainer, type ReconcileOutcome } from '../domain/leaks';
import type { SandboxState } from '../domain/sandbox-states';
import { type ContainerBroker, type ContainerSummary, type NetworkPoolSource, type NetworkSummary } from '../docker';
import { NETWORK_POOL_GRACE_MS, NETWORK_POOL_LABEL } from '../domain/network-pool';
import type { HostView } from '../domain/hosts';
import type { Store } from '../store';
import type { HostDirectory } from '../store/host-directory';
import type { RecordedRuntimeIds } from '../store/sandbox-repository';
import { planeMetrics } from '../telemetry/plane-metrics';
import { withTaxonomy } from './activity-failure';
import { inParallel } from './in-parallel';

/** What the docker role's sweep activities need: that engine, and whose containers are ours. */
export interface HostSweepActivityDeps {
  readonly broker: ContainerBroker;
  /** This plane's id: only containers labelled with it are the sweep's (DESIGN §8). */
  readonly plane: string;
  /** This host's pre-made sealed networks: the ones it holds are not unused. */
  readonly networkPool?: Pick<NetworkPoolSource, 'holds'>;
  /** How old an unattached pooled network no pool here holds must be before it goes (default {@link NETWORK_POOL_GRACE_MS}). */
  readonly networkPoolGraceMs?: number;
  /** How many orphans `removeContainers` removes at once (SANDBOXPLANE_SWEEP_REMOVE_CONCURRENCY). */
  readonly sweepRemoveConcurrency?: number;
}

/** What became of one orphan the sweep asked the host to remove; `error` says why it did not go. */
export interface OrphanRemoval {
  readonly containerId: string;
  readonly removed: boolean;
  readonly error: string | null;
}

/** Visibility's misses asked about one by one: a few at once, so a sweep of many orphans does not wait on them in a row. */
const DESCRIBE_CONCURRENCY = 8;

/** What the store role's sweep activities need: the projection and Temporal's view of what runs. */
export interface ProjectionSweepActivityDeps {
  readonly store: Store;
  /** A Temporal client, for the visibility query and the per-workflow double check. */
  readonly client: Client;
  /** The registered hosts with their liveness. */
  readonly hosts: HostDirectory;
}

/** The sweep's activities on one docker host: that engine's containers of this plane. */
export function createHostSweepActivities(deps: HostSweepActivityDeps) {
  const { broker } = deps;
  const graceMs = deps.networkPoolGraceMs ?? NETWORK_POOL_GRACE_MS;

  /**
   * A pooled network waits unattached by design: it is another's while this host's pool
   * holds it, or while it is young enough to be another process's pool's (past the grace,
   * that pool stopped without taking it away: a killed worker).
   */
  function keptByAPool(network: NetworkSummary): boolean {
    if (network.labels[NETWORK_POOL_LABEL] === undefined) return false;
    if (deps.networkPool?.holds(network.id) === true) return true;
    const made = network.createdAt === undefined ? NaN : Date.parse(network.createdAt);
    return !(Date.now() - made >= graceMs);
  }

  /**
   * Removes this plane's sandbox networks (DESIGN §12) that no container of the plane is
   * attached to: a teardown that died between the container and its network, or the
   * loser of two creates racing for one name. A container's network (running or not) is
   * the container's to take with it; one created a moment ago for a container not yet
   * made comes back, as the broker makes it again when the container finds it gone.
   * Listed after `containers`, so a network made after that listing is not judged.
   */
  async function removeUnusedNetworks(containers: readonly ContainerSummary[]): Promise<void> {
    // A container that never started has no endpoint yet, so the engine names its network without an id.
    const attachments = containers.flatMap((container) => Object.entries(container.networks));
    const usedIds = new Set(attachments.flatMap(([, id]) => (id === '' ? [] : [id])));
    const usedNames = new Set(attachments.flatMap(([name, id]) => (id === '' ? [name] : [])));
    const networks = await broker.listNetworks({ [PLANE_LABEL]: deps.plane });
    for (const network of networks) {
      if (usedIds.has(network.id) || usedNames.has(network.name) || keptByAPool(network)) continue;
      const outcome = await broker.removeNetwork(network.id).catch((err: unknown) => (err instanceof Error ? err.message : String(err)));
      log.info('unused sandbox network removed', { network: network.name, networkId: network.id, sandboxId: network.labels[SANDBOX_ID_LABEL], outcome });
    }
  }

  return {
    /**
     * Every container of this plane carrying our managed-by label, in any state, under the
     * sandbox it belongs to. One with another plane's label, or with none, is foreign:
     * never listed, so never touched. A warm pool's idle containers are the pool's to keep
     * (it replaces dead ones itself), so they are not listed either; a claimed one is
     * listed under the sandbox that claimed it (DESIGN §13).
     */
    async listManagedContainers(): Promise<ManagedContainer[]> {
      return withTaxonomy(async () => {
        const containers = await broker.list({ ...managedContainersFilter(), [PLANE_LABEL]: deps.plane });
        await removeUnusedNetworks(containers);
        return containers.flatMap((container) => {
          const owner = containerOwner(container);
          if ('poolSlotId' in owner) return [];
          return [{ id: container.id, sandboxId: 'sandboxId' in owner ? owner.sandboxId : null, adapter: container.labels[ADAPTER_LABEL] ?? null, state: container.state }];
        });
      });
    },

    /**
     * Removes a batch of orphans, at most `sweepRemoveConcurrency` at once (DESIGN §8).
     * One list of this plane's managed containers answers what each is, so none is
     * inspected again, and one the list does not show is gone already; one that is not
     * ours is never in it, so never touched. `rm -f` kills a running orphan at once: no
     * workflow waits on a graceful stop of it. A failure is reported per container, never
     * thrown: the others go on, and the sweep re-measures, so a container that refuses to
     * die stays an outstanding leak with the engine's reason.
     */
    async removeContainers(input: { containerIds: readonly string[] }): Promise<OrphanRemoval[]> {
      return withTaxonomy(async () => {
        const listed = new Map((await broker.list({ ...managedContainersFilter(), [PLANE_LABEL]: deps.plane })).map((container) => [container.id, container]));
        let done = 0;
        const progress = () => heartbeat({ removed: done, of: input.containerIds.length });
        const beating = setInterval(progress, 5_000);
        try {
          progress();
          return await inParallel(input.containerIds, deps.sweepRemoveConcurrency ?? DEFAULT_SWEEP_REMOVE_CONCURRENCY, async (containerId): Promise<OrphanRemoval> => {
            try {
              const container = listed.get(containerId);
              const remove = container === undefined ? 'already_gone' : await broker.remove(containerId, { force: true, listed: container });
              log.info('orphan container removed', { containerId, remove });
              return { containerId, removed: true, error: null };
            } catch (err) {
              const message = err instanceof Error ? err.message : String(err);
              log.warn('orphan container could not be removed', { containerId, error: message });
              return { containerId, removed: false, error: message };
            } finally {
              done += 1;
            }
          });
        } finally {
          clearInterval(beating);
        }
      });
    },

    /**
     * Why a sandbox's recorded runtime may still exist, though no container of this plane
     * is labelled for it: a recorded container on another engine, or one that carries
     * another plane's label. Closing the row as DESTROYED then would be a false "destroyed".
     */
    async recordedLeftovers(input: { sandboxId: string; recorded: RecordedRuntimeIds }): Promise<string[]> {
      return withTaxonomy(async () => {
        const { sandboxId, recorded } = input;
        if (recorded.runtimeIds.length === 0) return [];
        if (recorded.engineId !== undefined && !sameEngine(recorded.engineId, await broker.engineId())) {
          return [`its recorded containers ${recorded.runtimeIds.join(', ')} are on Docker engine ${recorded.engineId}, which this sweep does not reach`];
        }
        const leftovers: string[] = [];
        for (const id of recorded.runtimeIds) {
          try {
            const container = await broker.inspect(id);
            if (!belongsTo(container, sandboxId)) continue;
            leftovers.push(`its recorded container ${id.slice(0, 12)} is still present, labelled for plane ${container.labels[PLANE_LABEL] ?? '(none)'}`);
          } catch (err) {
            if (!(isSandboxPlaneError(err) && err.code === 'CONTAINER_NOT_FOUND')) throw err;
          }
        }
        return leftovers;
      });
    },
  };
}

/** A removed orphan's audit row in its sandbox's trail. */
function orphanRemovedRow(finding: LeakFinding, step: number) {
  return { step, action: 'orphan_removed', actor: 'sweep', effect: 'removed', reason: finding.detail, summary: { containerId: finding.subject } } as const;
}

/** The sweep's activities on the store role: the projection's rows, Temporal's open lifecycles, and the leak record. */
export function createProjectionSweepActivities(deps: ProjectionSweepActivityDeps) {
  const { store, client } = deps;

  async function isRunning(sandboxId: string): Promise<boolean> {
    try {
      const description = await client.workflow.getHandle(workflowIdFor(sandboxId)).describe();
      return description.status.name === 'RUNNING';
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    }
  }

  return {
    /**
     * Projection rows the sweep has work for (unfinished or DESTROY_FAILED), and those of
     * `alsoIds` (the sandboxes the containers name), placed on `hostId` (and, with
     * `includeUnplaced`, those placed on none: refused or stranded before placement).
     */
    async projectionRows(input: { alsoIds: readonly string[]; hostId: string; includeUnplaced: boolean }): Promise<Record<string, InventoryRow>> {
      return withTaxonomy(() => {
        const rows = store.sandboxes.inventoryRows(input.alsoIds);
        const named = new Set(input.alsoIds);
        const mine = (row: InventoryRow) => row.host === input.hostId || (input.includeUnplaced && (row.host ?? null) === null);
        return Object.fromEntries(Object.entries(rows).filter(([id, row]) => named.has(id) || mine(row)));
      });
    },

    /**
     * Sandboxes whose lifecycle workflow runs. Visibility can lag behind, so every
     * candidate the query does not list is asked about directly before anyone may
     * treat it as dead: a sweep must never destroy live work.
     */
    async runningSandboxes(input: { candidates: readonly string[] }): Promise<string[]> {
      return withTaxonomy(async () => {
        const running = new Set<string>();
        for await (const execution of client.workflow.list({ query: OPEN_LIFECYCLES_QUERY })) {
          const id = sandboxIdFromWorkflowId(execution.workflowId);
          if (id !== undefined) running.add(id);
        }
        const unlisted = input.candidates.filter((candidate) => !running.has(candidate));
        await inParallel(unlisted, DESCRIBE_CONCURRENCY, async (candidate) => {
          if (await isRunning(candidate)) running.add(candidate);
          heartbeat();
        });
        return [...running].sort();
      });
    },

    /** The `orphan_removed` audit rows of a batch of removed orphans (those that name a sandbox), in one store transaction. */
    async recordOrphanRemovals(input: { removals: readonly { finding: LeakFinding; step: number }[]; sweepWorkflowId: string }): Promise<void> {
      return withTaxonomy(() => {
        store.sandboxes.atomically(() => {
          for (const { finding, step } of input.removals) {
            if (finding.sandboxId === null) continue;
            store.sandboxes.appendAudit(finding.sandboxId, input.sweepWorkflowId, orphanRemovedRow(finding, step));
          }
        });
      });
    },

    /** The runtime ids (and engine) each sandbox's audit trail recorded, for those that recorded any. */
    async recordedRuntimes(input: { sandboxIds: readonly string[] }): Promise<Record<string, RecordedRuntimeIds>> {
      return withTaxonomy(() => {
        const out: Record<string, RecordedRuntimeIds> = {};
        for (const id of input.sandboxIds) {
          const recorded = store.sandboxes.recordedRuntime(id);
          if (recorded !== undefined) out[id] = recorded;
        }
        return out;
      });
    },

    /**
     * Closes a stranded row (its workflow has ended, the row says otherwise or says
     * DESTROY_FAILED): DESTROYED when nothing of it remains (`leftovers` empty),
     * DESTROY_FAILED while something does (the next sweep tries again). `null` if its own
     * workflow closed the row meanwhile.
     */
    async closeStranded(input: { finding: LeakFinding; leftovers: readonly string[]; sweepWorkflowId: string; step: number }): Promise<ReconcileOutcome | null> {
      return withTaxonomy(() => {
        const sandboxId = input.finding.subject;
        const leftovers = [...input.leftovers];
        const state: SandboxState = leftovers.length > 0 ? 'DESTROY_FAILED' : 'DESTROYED';
        const changed = store.sandboxes.reconcile(sandboxId, state, input.sweepWorkflowId, {
          step: input.step,
          action: 'reconciled',
          actor: 'sweep',
          effect: state === 'DESTROYED' ? 'destroyed' : 'failed',
          reason: `${[input.finding.detail, ...leftovers].join('; ')}; Temporal has no open workflow for it, so the row is closed as ${state}`,
          summary: { state, leftovers },
        });
        if (changed) log.info('stranded sandbox reconciled', { sandboxId, state, leftovers });
        if (changed || store.sandboxes.state(sandboxId) === state) return { state, changed, leftovers };
        return null;
      });
    },

    /** Writes the sweep's findings to the leaks table (outstanding, removed, gone). */
    async recordSweepFindings(input: { outstanding: readonly LeakFinding[]; removed: readonly LeakFinding[] }): Promise<void> {
      return withTaxonomy(() => {
        const { found, removed } = store.leaks.recordSweep(input);
        planeMetrics.sweepRecorded(
          found.map((finding) => finding.kind),
          removed.map((finding) => finding.kind),
        );
      });
    },

    /** The registered docker hosts and whether a worker serves each: the hosts a sweep fans out to. */
    async sweepHosts(): Promise<HostView[]> {
      return withTaxonomy(() => deps.hosts.list());
    },
  };
}
