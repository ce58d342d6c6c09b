import { deprecatePatch, executeChild, getExternalWorkflowHandle, log, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { DockerActivities, StoreActivities } from '../activities';
import { workflowIdFor } from '../domain/contract-names';
import { NON_RETRYABLE_ERROR_TYPES } from '../domain/error-codes';
import { classifyInventory, SWEEP_REMOVE_BATCH, type LeakFinding, type SweepReport } from '../domain/leaks';
import type { SandboxState } from '../domain/sandbox-states';
import { DEFAULT_HOST_ID, storeQueue } from '../domain/task-queues';
import { checkHealthSignal } from './sandbox-messages';

const CLEANUP_OPTIONS = {
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { maximumAttempts: 3, nonRetryableErrorTypes: [...NON_RETRYABLE_ERROR_TYPES] },
};

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

/** How long a host's sweep waits for its docker worker to take a task before that host is given up for this sweep. */
const HOST_PICKUP_TIMEOUT = '30 seconds';

/**
 * One cleanup pass (DESIGN §8): one child sweep per live docker host judges and removes
 * that host's orphans and closes the rows of its ended sandboxes (see
 * {@link cleanupHostSweep}); a host no worker serves is reported with the sandboxes that
 * wait for it. The findings are recorded once, and the mismatches under running
 * workflows, which a sweep never repairs, go to their health watches.
 */
export async function cleanupSweep(): Promise<SweepReport> {
  const { workflowId } = workflowInfo();
  const store = proxyActivities<StoreActivities>({ ...CLEANUP_OPTIONS, taskQueue: storeQueue(workflowInfo().taskQueue) });
  const hosts = await store.sweepHosts();
  const live = hosts.filter((host) => host.live);
  // Rows that never got a host (refused, or stranded before placement): the single-machine host (or the first) judges them.
  const judgesUnplaced = live.find((host) => host.hostId === DEFAULT_HOST_ID) ?? live[0];
  const outcomes = await Promise.allSettled(
    live.map((host) =>
      executeChild(cleanupHostSweep, {
        workflowId: `${workflowId}-${host.hostId}`,
        args: [{ hostId: host.hostId, taskQueue: host.taskQueue, includeUnplaced: host === judgesUnplaced }],
      }),
    ),
  );
  // A host whose docker worker went away during the sweep costs only its own part.
  const reports = outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
  const unswept = live.filter((_, index) => outcomes[index]?.status === 'rejected');
  const unreachable: LeakFinding[] = [
    ...hosts
      .filter((host) => !host.live && host.liveSandboxes > 0)
      .map((host) => ({
        kind: 'host_unreachable' as const,
        subject: host.hostId,
        sandboxId: null,
        detail:
          `no worker has polled ${host.taskQueue} since ${host.lastSeenAt ?? 'it registered'}; ${host.liveSandboxes} sandbox(es) placed there ` +
          'wait for it (their teardown retries on that queue once a docker worker serves it again)',
      })),
    ...unswept.map((host) => ({
      kind: 'host_unreachable' as const,
      subject: host.hostId,
      sandboxId: null,
      detail: `its part of the sweep did not finish: no docker worker took its work on ${host.taskQueue} in time`,
    })),
  ];
  const removed = reports.flatMap((report) => report.removed);
  const remaining = [...reports.flatMap((report) => report.remaining), ...unreachable];
  const liveMismatches = reports.flatMap((report) => report.remaining.filter((finding) => finding.kind === 'live_mismatch'));
  await store.recordSweepFindings({ outstanding: remaining, removed });
  await handToHealthWatch(liveMismatches);
  // Snapshots have a life (DESIGN §15): those past their age go, whatever the hosts did.
  const { deleted: snapshotsDeleted } = await store.expireSnapshots({});
  const sum = (count: (report: HostSweepReport) => number) => reports.reduce((total, report) => total + count(report), 0);
  return {
    sweptAt: new Date().toISOString(),
    workflowId,
    counts: {
      containers: sum((report) => report.counts.containers),
      orphans: sum((report) => report.counts.orphans),
      stranded: sum((report) => report.counts.stranded),
      liveMismatches: liveMismatches.length,
      removed: removed.length,
      reconciled: sum((report) => report.reconciled.length),
      outstanding: remaining.length,
      snapshotsDeleted: snapshotsDeleted.length,
    },
    removed,
    reconciled: reports.flatMap((report) => report.reconciled),
    remaining,
    hosts: hosts.map((host) => ({ hostId: host.hostId, live: host.live, swept: live.includes(host) && !unswept.includes(host) })),
  };
}

/** What one host's sweep did and saw; its parent records the findings. */
export type HostSweepReport = Omit<SweepReport, 'sweptAt' | 'workflowId' | 'hosts'>;

/**
 * One docker host's part of a sweep: that engine's containers of this plane, the rows
 * placed there, and Temporal's open lifecycles. Orphans (no open workflow) are removed
 * by the host's docker worker and measured again; rows whose workflow has ended are
 * closed — DESTROYED once nothing of them remains, DESTROY_FAILED while something does.
 */
export async function cleanupHostSweep(input: { hostId: string; taskQueue: string; includeUnplaced: boolean }): Promise<HostSweepReport> {
  const { workflowId } = workflowInfo();
  // A docker worker that went away after the host was judged live must not hold the sweep (and every later one) up.
  const docker = proxyActivities<DockerActivities>({ ...CLEANUP_OPTIONS, taskQueue: input.taskQueue, scheduleToStartTimeout: HOST_PICKUP_TIMEOUT });
  const store = proxyActivities<StoreActivities>({ ...CLEANUP_OPTIONS, taskQueue: storeQueue(workflowInfo().taskQueue) });
  const containers = await docker.listManagedContainers();
  const named = [...new Set(containers.map((container) => container.sandboxId).filter((id): id is string => id !== null))];
  const rows = await store.projectionRows({ alsoIds: named, hostId: input.hostId, includeUnplaced: input.includeUnplaced });
  const candidates = [...new Set([...named, ...Object.keys(rows)])].sort();
  const running = await store.runningSandboxes({ candidates });
  const found = classifyInventory({ containers, rows, running });

  // Every host sweep running now removes in batches; the serial removal of the builds before is gone, its marker kept for their replays.
  deprecatePatch(BATCHED_REMOVAL_PATCH);
  const failed = await removeInBatches(found.orphans, docker, store, workflowId);
  let step = found.orphans.length;
  const afterContainers = await docker.listManagedContainers();
  const after = new Set(afterContainers.map((container) => container.id));
  const removed = found.orphans.filter((orphan) => !after.has(orphan.subject));
  const kept = found.orphans
    .filter((orphan) => after.has(orphan.subject))
    .map((orphan) => {
      const why = failed.get(orphan.subject);
      return { ...orphan, detail: `${orphan.detail}; still present after removal${why === undefined ? '' : ` (${why})`}` };
    });

  const recorded = await store.recordedRuntimes({ sandboxIds: found.stranded.map((finding) => finding.subject) });
  const reconciled: { sandboxId: string; state: SandboxState }[] = [];
  const unreconciled: LeakFinding[] = [];
  for (const finding of found.stranded) {
    step += 1;
    try {
      const runtimeIds = recorded[finding.subject];
      const leftovers = [
        ...(afterContainers.some((container) => container.sandboxId === finding.subject) ? ['its containers are still present after removal'] : []),
        ...(runtimeIds === undefined ? [] : await docker.recordedLeftovers({ sandboxId: finding.subject, recorded: runtimeIds })),
      ];
      const outcome = await store.closeStranded({ finding, leftovers, sweepWorkflowId: workflowId, step });
      if (outcome?.changed === true) reconciled.push({ sandboxId: finding.subject, state: outcome.state });
      if (outcome?.state === 'DESTROY_FAILED') unreconciled.push({ ...finding, detail: [finding.detail, ...outcome.leftovers].join('; ') });
    } catch (err) {
      log.warn('stranded row not reconciled', { sandboxId: finding.subject, error: String(err) });
      unreconciled.push(finding);
    }
  }
  const remaining = [...kept, ...unreconciled, ...found.liveMismatches];
  return {
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

/** Marks host sweeps that remove orphans in batches (issue 42); deprecated once no sweep of the one-by-one builds could run. */
const BATCHED_REMOVAL_PATCH = 'sweep-batched-removal';

type SweepDocker = Pick<DockerActivities, 'removeContainers'>;
type SweepStore = Pick<StoreActivities, 'recordOrphanRemovals'>;

/**
 * Batches in a row, each removed by the host a bounded few at once (the docker role's
 * SANDBOXPLANE_SWEEP_REMOVE_CONCURRENCY), and its audit rows written in one transaction.
 * An orphan's step is its place in the list, whichever batch it falls in. Returns why
 * each orphan the host could not remove stayed.
 */
async function removeInBatches(orphans: readonly LeakFinding[], docker: SweepDocker, store: SweepStore, workflowId: string): Promise<Map<string, string>> {
  const failed = new Map<string, string>();
  for (let first = 0; first < orphans.length; first += SWEEP_REMOVE_BATCH) {
    const batch = orphans.slice(first, first + SWEEP_REMOVE_BATCH);
    try {
      const outcomes = await docker.removeContainers({ containerIds: batch.map((orphan) => orphan.subject) });
      for (const outcome of outcomes) if (!outcome.removed) failed.set(outcome.containerId, outcome.error ?? 'not removed');
      const gone = new Set(outcomes.filter((outcome) => outcome.removed).map((outcome) => outcome.containerId));
      const removals = batch.flatMap((finding, index) => (gone.has(finding.subject) && finding.sandboxId !== null ? [{ finding, step: first + index + 1 }] : []));
      if (removals.length > 0) await store.recordOrphanRemovals({ removals, sweepWorkflowId: workflowId });
    } catch (err) {
      // A hung engine call must not cost the whole sweep: measuring again will show the containers stayed.
      log.warn('orphan removal did not finish', { containers: batch.length, error: String(err) });
    }
  }
  return failed;
}
