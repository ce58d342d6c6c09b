import { heartbeat, log } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { OPEN_LIFECYCLES_QUERY, sandboxIdFromWorkflowId, workflowIdFor } from '../domain/contract-names';
import { ADAPTER_LABEL, managedContainersFilter, PLANE_LABEL, SANDBOX_ID_LABEL } from '../domain/docker-labels';
import { isSandboxPlaneError } from '../domain/errors';
import type { InventoryRow, LeakFinding, ManagedContainer, ReconcileOutcome } from '../domain/leaks';
import type { SandboxState } from '../domain/sandbox-states';
import { stopAndRemove, type BrokerLogger, type ContainerBroker } from '../docker';
import type { Store } from '../store';
import { withTaxonomy } from './activity-failure';

export interface CleanupActivityDeps {
  readonly store: Store;
  readonly broker: ContainerBroker;
  /** A Temporal client, for the visibility query and the per-workflow double check. */
  readonly client: Client;
  /** This plane's id: only containers labelled with it are the sweep's (DESIGN §8). */
  readonly plane: string;
}

/** Teardown lines go to the activity's log, so they carry the sweep's workflow and activity ids. */
const activityLogger: BrokerLogger = {
  info: (obj, msg) => log.info(msg, { ...obj }),
  warn: (obj, msg) => log.warn(msg, { ...obj }),
};

/** Activities of the cleanup sweep: inventory, removal of proven orphans, and the leak record. */
export function createCleanupActivities(deps: CleanupActivityDeps) {
  const { store, broker, client } = deps;

  async function isRunning(sandboxId: string): Promise<boolean> {
    try {
      const description = await client.workflow.getHandle(workflowIdFor(sandboxId)).describe();
      return description.status.name === 'RUNNING';
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    }
  }

  /**
   * Why a sandbox's recorded runtime may still exist, though no container of this plane
   * is labelled for it: a recorded container on another engine, or one that carries
   * another plane's label. Closing the row as DESTROYED then would be a false "destroyed".
   */
  async function recordedLeftovers(sandboxId: string): Promise<string[]> {
    const recorded = store.sandboxes.recordedRuntime(sandboxId);
    if (recorded === undefined || recorded.runtimeIds.length === 0) return [];
    if (recorded.engineId !== undefined && recorded.engineId !== (await broker.engineId())) {
      return [`its recorded containers ${recorded.runtimeIds.join(', ')} are on Docker engine ${recorded.engineId}, which this sweep does not reach`];
    }
    const leftovers: string[] = [];
    for (const id of recorded.runtimeIds) {
      try {
        const container = await broker.inspect(id);
        if (container.labels[SANDBOX_ID_LABEL] !== sandboxId) continue;
        leftovers.push(`its recorded container ${id.slice(0, 12)} is still present, labelled for plane ${container.labels[PLANE_LABEL] ?? '(none)'}`);
      } catch (err) {
        if (!(isSandboxPlaneError(err) && err.code === 'CONTAINER_NOT_FOUND')) throw err;
      }
    }
    return leftovers;
  }

  return {
    /**
     * Every container of this plane carrying our managed-by label, in any state. One with
     * another plane's label, or with none, is foreign: never listed, so never touched.
     */
    async listManagedContainers(): Promise<ManagedContainer[]> {
      return withTaxonomy(async () =>
        (await broker.list({ ...managedContainersFilter(), [PLANE_LABEL]: deps.plane })).map((container) => ({
          id: container.id,
          sandboxId: container.labels[SANDBOX_ID_LABEL] ?? null,
          adapter: container.labels[ADAPTER_LABEL] ?? null,
          state: container.state,
        })),
      );
    },

    /** Projection rows the sweep has work for (unfinished or DESTROY_FAILED), and those of `alsoIds` (the sandboxes the containers name). */
    async projectionRows(input: { alsoIds: readonly string[] }): Promise<Record<string, InventoryRow>> {
      return withTaxonomy(() => store.sandboxes.inventoryRows(input.alsoIds));
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
        for (const candidate of input.candidates) {
          if (!running.has(candidate) && (await isRunning(candidate))) running.add(candidate);
          heartbeat();
        }
        return [...running].sort();
      });
    },

    /**
     * Stops and removes one orphan. A failure is reported, not thrown: the sweep goes on
     * and re-measures, and a container that refuses to die stays an outstanding leak.
     */
    async removeOrphanContainer(input: {
      finding: LeakFinding;
      sweepWorkflowId: string;
      step: number;
    }): Promise<{ removed: boolean; error: string | null }> {
      const { finding } = input;
      const beating = setInterval(() => heartbeat({ removing: finding.subject }), 5_000);
      try {
        heartbeat({ removing: finding.subject });
        const outcome = await stopAndRemove(broker, finding.subject, { logger: activityLogger });
        log.info('orphan container removed', { containerId: finding.subject, sandboxId: finding.sandboxId, ...outcome });
        if (finding.sandboxId !== null) {
          store.sandboxes.appendAudit(finding.sandboxId, input.sweepWorkflowId, {
            step: input.step,
            action: 'orphan_removed',
            actor: 'sweep',
            effect: 'removed',
            reason: finding.detail,
            summary: { containerId: finding.subject },
          });
        }
        return { removed: true, error: null };
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        log.warn('orphan container could not be removed', { containerId: finding.subject, error: message });
        return { removed: false, error: message };
      } finally {
        clearInterval(beating);
      }
    },

    /**
     * Closes a stranded row (its workflow has ended, the row says otherwise or says
     * DESTROY_FAILED): DESTROYED when none of its containers remain — neither this
     * plane's nor the ones it recorded — DESTROY_FAILED while one does (the next sweep
     * tries again). `null` if its own workflow closed the row meanwhile.
     */
    async reconcileStranded(input: {
      finding: LeakFinding;
      containersRemain: boolean;
      sweepWorkflowId: string;
      step: number;
    }): Promise<ReconcileOutcome | null> {
      return withTaxonomy(async () => {
        const sandboxId = input.finding.subject;
        const leftovers = [
          ...(input.containersRemain ? ['its containers are still present after removal'] : []),
          ...(await recordedLeftovers(sandboxId)),
        ];
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
      return withTaxonomy(() => store.leaks.recordSweep(input));
    },
  };
}
