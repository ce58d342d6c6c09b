import { log, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { NON_RETRYABLE_ERROR_TYPES } from '../domain/error-codes';
import { classifyInventory, type LeakFinding, type SweepReport } from '../domain/leaks';

const cleanup = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { maximumAttempts: 3, nonRetryableErrorTypes: [...NON_RETRYABLE_ERROR_TYPES] },
});

/**
 * One cleanup pass (DESIGN §8): inventory containers, projection rows and running
 * lifecycles; remove only containers proven orphaned; report everything else; then
 * measure again, so a container that refuses to die stays an outstanding leak.
 */
export async function cleanupSweep(): Promise<SweepReport> {
  const { workflowId } = workflowInfo();
  const containers = await cleanup.listManagedContainers();
  const named = [...new Set(containers.map((container) => container.sandboxId).filter((id): id is string => id !== null))];
  const rows = await cleanup.projectionStates({ alsoIds: named });
  const candidates = [...new Set([...named, ...Object.keys(rows)])].sort();
  const running = await cleanup.runningSandboxes({ candidates });
  const found = classifyInventory({ containers, rows, running });

  let step = 0;
  for (const orphan of found.orphans) {
    step += 1;
    try {
      await cleanup.removeOrphanContainer({ finding: orphan, sweepWorkflowId: workflowId, step });
    } catch (err) {
      // A hung engine call must not cost the whole sweep: measuring again will show the container stayed.
      log.warn('orphan removal did not finish', { containerId: orphan.subject, error: String(err) });
    }
  }

  const after = new Set((await cleanup.listManagedContainers()).map((container) => container.id));
  const removed: LeakFinding[] = found.orphans.filter((orphan) => !after.has(orphan.subject));
  const kept: LeakFinding[] = found.orphans
    .filter((orphan) => after.has(orphan.subject))
    .map((orphan) => ({ ...orphan, detail: `${orphan.detail}; still present after removal` }));
  const remaining = [...kept, ...found.stranded, ...found.liveMismatches];
  await cleanup.recordSweepFindings({ outstanding: remaining, removed });

  return {
    sweptAt: new Date().toISOString(),
    workflowId,
    counts: {
      containers: containers.length,
      orphans: found.orphans.length,
      stranded: found.stranded.length,
      liveMismatches: found.liveMismatches.length,
      removed: removed.length,
      outstanding: remaining.length,
    },
    removed,
    remaining,
  };
}
