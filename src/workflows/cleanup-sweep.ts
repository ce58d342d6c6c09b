import { getExternalWorkflowHandle, log, patched, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { workflowIdFor } from '../domain/contract-names';
import { NON_RETRYABLE_ERROR_TYPES } from '../domain/error-codes';
import { classifyInventory, type LeakFinding, type SweepReport } from '../domain/leaks';
import type { SandboxState } from '../domain/sandbox-states';
import { checkHealthSignal } from './sandbox-messages';

const cleanup = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { maximumAttempts: 3, nonRetryableErrorTypes: [...NON_RETRYABLE_ERROR_TYPES] },
});

/** Sweeps that start under this code hand the mismatches they see to the sandboxes' health watches. */
const HAND_MISMATCHES_PATCH = 'sweep-hands-mismatches';

/**
 * A mismatch under a running workflow is never repaired here (DESIGN §8): it is handed
 * to that sandbox's health watch, which looks at once instead of at its next turn.
 */
async function handToHealthWatch(mismatches: readonly LeakFinding[]): Promise<void> {
  const sandboxIds = [...new Set(mismatches.map((finding) => finding.sandboxId).filter((id): id is string => id !== null))];
  for (const sandboxId of sandboxIds) {
    try {
      await getExternalWorkflowHandle(workflowIdFor(sandboxId)).signal(checkHealthSignal);
    } catch (err) {
      // It ended meanwhile: nothing to hand over, and the next sweep judges it afresh.
      log.info('mismatch not handed over: the sandbox workflow is gone', { sandboxId, error: String(err) });
    }
  }
}

/**
 * One cleanup pass (DESIGN §8): inventory this plane's containers, projection rows and
 * running lifecycles; remove the containers of sandboxes with no open workflow; measure
 * again, so a container that refuses to die stays an outstanding leak; close the rows of
 * sandboxes whose workflow has ended (a DESTROY_FAILED one too, once its leftovers are
 * gone); report what is left, and hand the mismatches under running workflows, which it
 * never repairs, to their health watches.
 */
export async function cleanupSweep(): Promise<SweepReport> {
  const { workflowId } = workflowInfo();
  const containers = await cleanup.listManagedContainers();
  const named = [...new Set(containers.map((container) => container.sandboxId).filter((id): id is string => id !== null))];
  const rows = await cleanup.projectionRows({ alsoIds: named });
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

  const afterContainers = await cleanup.listManagedContainers();
  const after = new Set(afterContainers.map((container) => container.id));
  const removed: LeakFinding[] = found.orphans.filter((orphan) => !after.has(orphan.subject));
  const kept: LeakFinding[] = found.orphans
    .filter((orphan) => after.has(orphan.subject))
    .map((orphan) => ({ ...orphan, detail: `${orphan.detail}; still present after removal` }));

  // Temporal says these sandboxes ended; their rows are closed so they stop holding quota.
  const reconciled: { sandboxId: string; state: SandboxState }[] = [];
  const unreconciled: LeakFinding[] = [];
  for (const finding of found.stranded) {
    step += 1;
    const containersRemain = afterContainers.some((container) => container.sandboxId === finding.subject);
    try {
      const outcome = await cleanup.reconcileStranded({ finding, containersRemain, sweepWorkflowId: workflowId, step });
      if (outcome?.changed === true) reconciled.push({ sandboxId: finding.subject, state: outcome.state });
      // Still DESTROY_FAILED: a leak until a later sweep finds its leftovers gone.
      if (outcome?.state === 'DESTROY_FAILED') unreconciled.push({ ...finding, detail: [finding.detail, ...outcome.leftovers].join('; ') });
    } catch (err) {
      log.warn('stranded row not reconciled', { sandboxId: finding.subject, error: String(err) });
      unreconciled.push(finding);
    }
  }
  const remaining = [...kept, ...unreconciled, ...found.liveMismatches];
  await cleanup.recordSweepFindings({ outstanding: remaining, removed });
  if (patched(HAND_MISMATCHES_PATCH)) await handToHealthWatch(found.liveMismatches);

  return {
    sweptAt: new Date().toISOString(),
    workflowId,
    counts: {
      containers: containers.length,
      orphans: found.orphans.length,
      stranded: found.stranded.length,
      liveMismatches: found.liveMismatches.length,
      removed: removed.length,
      reconciled: reconciled.length,
      outstanding: remaining.length,
    },
    removed,
    reconciled,
    remaining,
  };
}
