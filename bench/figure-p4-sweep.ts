import type Docker from 'dockerode';
import { CLEANUP_WORKFLOW } from '../src/domain/contract-names';
import { managedContainersFilter, PLANE_LABEL, sandboxContainerLabels } from '../src/domain/docker-labels';
import type { SweepReport } from '../src/domain/leaks';
import { DockerContainerBroker } from '../src/docker';
import { dockerClient } from '../test/harness/container-events';
import { startTestWorker, type TestWorker } from '../test/harness/test-worker';
import { BENCH_RUN_LABEL, containersLabelled, removeContainers } from './bench-containers';
import { benchWorkerEnv, enginePid, type Figure } from './bench-context';
import { latency, ratioOf, type FigureRow } from './bench-report';
import { countByOperation, EngineCallLog } from './engine-call-log';
import { historyProfile, stepsText } from './history-profile';
import { median, percentilesOf, rounded, sleep, timed } from './measure';
import { CpuTally } from './proc-stats';

/** Seeding is not what is measured: a few engine calls at once keep it short without starving the engine. */
const SEED_PARALLELISM = 8;
const BASELINE_LISTS = 5;
/** Per-container sweep time at the largest size ÷ at the smallest: at most this is "linear". */
const LINEAR_MAX_RATIO = 1.25;
/** Issue 42's goal: the sweep per orphan at most this × a raw `docker rm -f` of as many, as many at once. */
const RAW_MAX_RATIO = 1.5;

/**
 * `count` created (never started) containers of the busybox test image carrying this
 * plane's labels, each for a sandbox no workflow runs: orphans to the sweep. Cheap: no
 * process, no memory, only the engine's record of them.
 */
async function seedOrphans(docker: Docker, image: string, planeId: string, runId: string, size: number): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  const seedOne = async (): Promise<void> => {
    while (next < size) {
      const index = next;
      next += 1;
      const created = await docker.createContainer({
        Image: image,
        Labels: { ...sandboxContainerLabels(`p4-${runId}-${size}-${index}`, 'moto'), [PLANE_LABEL]: planeId, [BENCH_RUN_LABEL]: runId },
        HostConfig: { NetworkMode: 'none' },
      });
      ids.push(created.id);
    }
  };
  await Promise.all(Array.from({ length: SEED_PARALLELISM }, seedOne));
  return ids;
}

/**
 * The baseline: `docker rm -f` of each container (one Engine API call, DELETE with
 * force), `parallelism` at once as the sweep removes them; the milliseconds of each call.
 */
async function rawRemove(docker: Docker, ids: readonly string[], parallelism: number): Promise<number[]> {
  const callMs: number[] = [];
  let next = 0;
  const removeOne = async (): Promise<void> => {
    while (next < ids.length) {
      const id = ids[next] as string;
      next += 1;
      callMs.push(await timed(() => docker.getContainer(id).remove({ force: true, v: true })));
    }
  };
  await Promise.all(Array.from({ length: parallelism }, removeOne));
  return callMs;
}

/** The sweep's own inventory call, made by hand: `docker ps -a --filter label=managed-by --filter label=plane`. */
function listManaged(docker: Docker, planeId: string): Promise<Docker.ContainerInfo[]> {
  const labels = { ...managedContainersFilter(), [PLANE_LABEL]: planeId };
  return docker.listContainers({ all: true, filters: { label: Object.entries(labels).map(([key, value]) => `${key}=${value}`) } });
}

function sweep(worker: TestWorker, workflowId: string): Promise<SweepReport> {
  return worker.client.workflow.execute(CLEANUP_WORKFLOW, { taskQueue: worker.config.taskQueue, workflowId, workflowExecutionTimeout: '30 minutes' });
}

/** The first sweep also proves the host is registered and live: until then a sweep has no host to fan out to. */
async function sweepUntilHostSwept(worker: TestWorker, runId: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (let attempt = 1; ; attempt += 1) {
    const report = await sweep(worker, `p4-warmup-${runId}-${attempt}`);
    if (report.hosts?.some((host) => host.swept) === true) return;
    if (Date.now() > deadline) throw new Error(`no docker host of the sweep worker was swept within 60 s: ${JSON.stringify(report.hosts)}`);
    await sleep(1_000);
  }
}

/**
 * P4: the cleanup sweep (the `cleanupSweep` workflow the schedule starts) over N orphaned
 * managed containers, which it inventories, judges and removes, against a raw
 * `docker rm -f` of N containers of the same kind with the sweep's parallelism, measured
 * right before it on the same engine; for each N of `--sweep-sizes`, and whether the time
 * per container stays flat from the smallest N to the largest. The label-filtered list
 * the sweep starts with (the old baseline) is still timed, in `data`.
 */
export const p4Sweep: Figure = {
  id: 'P4',
  title: 'cleanup sweep vs raw docker rm -f of as many containers, as many at once',
  needs: ['docker'],
  async run(context) {
    const { dockerHost, testImage } = context.docker;
    if (dockerHost === undefined || testImage === undefined) throw new Error('P4 runs only with an engine and the test image');
    const docker = dockerClient(dockerHost);
    const engineLog = new EngineCallLog();
    let worker: TestWorker | undefined;
    const seeded = `${BENCH_RUN_LABEL}=${context.runId}`;
    const undo = async () => {
      await worker?.stop();
      await removeContainers(docker, await containersLabelled(docker, seeded));
    };
    return context.cleanup.guard('P4 sweep worker and seeded containers', undo, async () => {
      worker = await startTestWorker(context.server.address, { env: benchWorkerEnv(context, 'sweep'), broker: new DockerContainerBroker({ dockerHost, logger: engineLog }) });
      const planeId = worker.plane.planeId;
      // The raw removals go as many at once as the sweep's (SANDBOXPLANE_SWEEP_REMOVE_CONCURRENCY).
      const parallelism = worker.config.sweepRemoveConcurrency;
      await sweepUntilHostSwept(worker, context.runId);
      const tally = new CpuTally({ benchAndWorker: process.pid, server: context.serverPid, engine: enginePid(dockerHost) });
      const rows: FigureRow[] = [];
      const failures: string[] = [];
      const perSize: Record<string, unknown> = {};
      const perContainer = new Map<number, number>();
      for (const size of context.options.sweepSizes) {
        // The baseline first: as many containers of the same kind, under another plane (no sweep judges them), removed raw.
        context.progress(`P4: ${size} containers removed raw (docker rm -f, ${parallelism} at once)`);
        const rawIds = await seedOrphans(docker, testImage, `${planeId}-raw`, context.runId, size);
        let rawCallMs: number[] = [];
        const rawMs = await tally.around('raw', () => timed(async () => (rawCallMs = await rawRemove(docker, rawIds, parallelism))), size);
        context.progress(`P4: seeding ${size} orphaned managed containers (created, not started)`);
        await seedOrphans(docker, testImage, planeId, context.runId, size);
        const lists: number[] = [];
        let listed = 0;
        for (let index = 0; index < BASELINE_LISTS; index += 1) lists.push(await timed(async () => (listed = (await listManaged(docker, planeId)).length)));
        if (listed !== size) failures.push(`${size}: the list found ${listed} containers of plane ${planeId}, not ${size}`);
        context.progress(`P4: sweeping ${size}`);
        engineLog.take();
        const workflowId = `p4-sweep-${context.runId}-${size}`;
        let report: SweepReport | undefined;
        const sweepMs = await tally.around('sweep', () => timed(async () => (report = await sweep(worker as TestWorker, workflowId))), size);
        const engineCalls = engineLog.take();
        const calls = countByOperation(engineCalls);
        const counts = report?.counts;
        if (counts?.containers !== size || counts.removed !== size) failures.push(`${size}: the sweep saw ${counts?.containers} containers and removed ${counts?.removed}`);
        const listMs = median(lists);
        perContainer.set(size, sweepMs / size);
        const hostId = report?.hosts?.find((host) => host.swept)?.hostId;
        const sweepRemoveMs = percentilesOf(engineCalls.filter((call) => call.operation === 'remove').map((call) => call.ms));
        const rawRemoveMs = percentilesOf(rawCallMs);
        const hostSweepHistory = hostId === undefined ? null : await historyProfile(worker.client, `${workflowId}-${hostId}`);
        const sweepHistory = await historyProfile(worker.client, workflowId);
        perSize[String(size)] = {
          engineCallsPerContainer: Object.fromEntries(Object.entries(calls).map(([operation, count]) => [operation, rounded(count / size, 2)])),
          hostSweepHistory,
          sweepHistory,
        };
        const ratio = ratioOf(sweepMs, rawMs);
        rows.push({
          key: `P4.${size}`,
          measured: { label: `sweep of ${size} orphans`, value: sweepMs, unit: 'ms' },
          baseline: { label: `docker rm -f of ${size}, ${parallelism} at once`, value: rawMs, unit: 'ms' },
          ratio,
          target: { text: `<= ${RAW_MAX_RATIO}x raw`, reached: ratio === null ? null : ratio <= RAW_MAX_RATIO && counts?.removed === size },
          detail:
            `sweep ${(sweepMs / size).toFixed(1)} ms per orphan, raw ${(rawMs / size).toFixed(1)} ms per container; ${counts?.removed ?? 0} removed; ` +
            `each remove call p50 / p99: sweep ${sweepRemoveMs?.p50 ?? '-'} / ${sweepRemoveMs?.p99 ?? '-'} ms, raw ${rawRemoveMs?.p50 ?? '-'} / ${rawRemoveMs?.p99 ?? '-'} ms; ` +
            `a label-filtered list of ${size}: ${listMs.toFixed(1)} ms (median of ${BASELINE_LISTS}); ` +
            `sweep ${stepsText(sweepHistory)}` +
            (hostSweepHistory === null ? '' : `; its host sweep ${stepsText(hostSweepHistory)}`),
          data: {
            size,
            parallelism,
            sweepMsPerContainer: rounded(sweepMs / size, 2),
            rawMsPerContainer: rounded(rawMs / size, 2),
            listMsPerContainer: rounded(listMs / size, 4),
            removed: counts?.removed ?? 0,
            sweepRemoveCallMs: sweepRemoveMs,
            rawRemoveCallMs: rawRemoveMs,
            list: latency(`list of ${size}`, lists),
          },
        });
        // What the sweep did not remove must not count in the next size.
        await removeContainers(docker, await containersLabelled(docker, seeded));
      }
      const sizes = [...perContainer.keys()].sort((a, b) => a - b);
      const smallest = sizes[0];
      const largest = sizes.at(-1);
      if (smallest !== undefined && largest !== undefined && smallest !== largest) {
        const ratio = ratioOf(perContainer.get(largest) ?? null, perContainer.get(smallest) ?? null);
        rows.push({
          key: 'P4.linear',
          measured: { label: `sweep per container at ${largest}`, value: perContainer.get(largest) ?? null, unit: 'ms' },
          baseline: { label: `per container at ${smallest}`, value: perContainer.get(smallest) ?? null, unit: 'ms' },
          ratio,
          target: { text: `linear: <= ${LINEAR_MAX_RATIO}x`, reached: ratio === null ? null : ratio <= LINEAR_MAX_RATIO },
          detail: 'the sweep time per container at the largest size over that at the smallest; 1.00x is exactly linear',
        });
      }
      return { rows, profile: { perSize, cpu: tally.summary() }, lifecycleFailures: 0, failures };
    });
  },
};
