import { heartbeat, log } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { OPEN_LIFECYCLES_QUERY, sandboxIdFromWorkflowId, workflowIdFor } from '../domain/contract-names';
import { ADAPTER_LABEL, managedContainersFilter, PLANE_LABEL, SANDBOX_ID_LABEL } from '../domain/docker-labels';
import type { LeakFinding, ManagedContainer } from '../domain/leaks';
import type { SandboxState } from '../domain/sandbox-states';
import { stopAndRemove, type BrokerLogger, type ContainerBroker } from '../docker';
import type { Store } from '../store';
import { withTaxonomy } from './activity-failure';

export interface CleanupActivityDeps {
  readonly store: Store;
  readonly broker: ContainerBroker;
  /** A Temporal client, for the visibility query and the per-workflow double check. */
  readonly client: Client;
  /** Containers labelled with another plane are left alone. */
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

  return {
    /**
     * Every container carrying our managed-by label, in any state — except those another
     * plane (another Temporal address or namespace) launched on the same engine.
     */
    async listManagedContainers(): Promise<ManagedContainer[]> {
      return withTaxonomy(async () =>
        (await broker.list(managedContainersFilter()))
          .filter((container) => (container.labels[PLANE_LABEL] ?? deps.plane) === deps.plane)
          .map((container) => ({
          id: container.id,
          sandboxId: container.labels[SANDBOX_ID_LABEL] ?? null,
          adapter: container.labels[ADAPTER_LABEL] ?? null,
            state: container.state,
          })),
      );
    },

    /** Projection states of unfinished sandboxes, and of `alsoIds` (the sandboxes the containers name). */
    async projectionStates(input: { alsoIds: readonly string[] }): Promise<Record<string, SandboxState>> {
      return withTaxonomy(() => store.sandboxes.inventoryStates(input.alsoIds));
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
     * Closes a stranded row (its workflow has ended, the row says otherwise): DESTROYED
     * when none of its containers remain, DESTROY_FAILED when one refused to go (the
     * next sweep tries again). Returns the state given, or `null` if the row was closed meanwhile.
     */
    async reconcileStranded(input: {
      finding: LeakFinding;
      containersRemain: boolean;
      sweepWorkflowId: string;
      step: number;
    }): Promise<SandboxState | null> {
      return withTaxonomy(() => {
        const sandboxId = input.finding.subject;
        const state: SandboxState = input.containersRemain ? 'DESTROY_FAILED' : 'DESTROYED';
        const closed = store.sandboxes.reconcile(sandboxId, state, input.sweepWorkflowId, {
          step: input.step,
          action: 'reconciled',
          actor: 'sweep',
          effect: state === 'DESTROYED' ? 'destroyed' : 'failed',
          reason: `${input.finding.detail}; Temporal has no open workflow for it, so the row is closed as ${state}`,
          summary: { state },
        });
        if (closed) log.info('stranded sandbox reconciled', { sandboxId, state });
        return closed ? state : null;
      });
    },

    /** Writes the sweep's findings to the leaks table (outstanding, removed, gone). */
    async recordSweepFindings(input: { outstanding: readonly LeakFinding[]; removed: readonly LeakFinding[] }): Promise<void> {
      return withTaxonomy(() => store.leaks.recordSweep(input));
    },
  };
}
