import type Docker from 'dockerode';
import { CLEANUP_WORKFLOW } from '../src/domain/contract-names';
import { managedContainersFilter, PLANE_LABEL, sandboxContainerLabels } from '../src/domain/docker-labels';
import type { SweepReport } from '../src/domain/leaks';
import { DockerContainerBroker } from '../src/docker';
import { dockerClient } from '../test/helpers/container-events';
import { startTestWorker, type TestWorker } from '../test/helpers/test-worker';
import { BENCH_RUN_LABEL, containersLabelled, removeContainers } from './bench-containers';
import { benchWorkerEnv, enginePid, type Figure } from './bench-context';
import { ratioOf, type FigureRow } from './bench-report';
import { countByOperation, EngineCallLog } from './engine-call-log';
import { historyProfile } from './history-profile';
import { median, rounded, sleep, timed } from './measure';
import { CpuTally } from './proc-stats';

/** Seeding is not what is measured: a few engine calls at once keep it short without starving the engine. */
const SEED_PARALLELISM = 8;
const BASELINE_LISTS = 5;
/** Per-container sweep time at the largest size ÷ at the smallest: at most this is "linear". */
const LINEAR_MAX_RATIO = 1.25;

/**
 * `count` created (never started) containers of the busybox test image carrying this
 * plane's labels, each for a sandbox no workflow runs: orphans to the sweep. Cheap: no
 * process, no memory, only the engine's record of them.
 */
async function seedOrphans(docker: Docker, image: string, planeId: string, runId: string, size: number): Promise<void> {
  let next = 0;
  const seedOne = async (): Promise<void> => {
    while (next < size) {
      const index = next;
      next += 1;
      await docker.createContainer({
        Image: image,
        Labels: { ...sandboxContainerLabels(`p4-${runId}-${size}-${index}`, 'moto'), [PLANE_LABEL]: planeId, [BENCH_RUN_LABEL]: runId },
        HostConfig: { NetworkMode: 'none' },
      });
    }
  };
  await Promise.all(Array.from({ length: SEED_PARALLELISM }, seedOne));
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
 * managed containers, which it inventories, judges and removes, against one
 * label-filtered container list of the same N containers on the same engine, measured
 * right before it; for each N of `--sweep-sizes`, and whether the time per container
 * stays flat from the smallest N to the largest.
 */
export const p4Sweep: Figure = {
  id: 'P4',
  title: 'cleanup sweep vs one label-filtered container list',
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
      await sweepUntilHostSwept(worker, context.runId);
      const tally = new CpuTally({ benchAndWorker: process.pid, server: context.serverPid, engine: enginePid(dockerHost) });
      const rows: FigureRow[] = [];
      const failures: string[] = [];
      const perSize: Record<string, unknown> = {};
      const perContainer = new Map<number, number>();
      for (const size of context.options.sweepSizes) {
        context.progress(`P4: seeding ${size} orphaned managed containers (created, not started)`);
        await seedOrphans(docker, testImage, planeId, context.runId, size);
        const lists: number[] = [];
        let listed = 0;
        await tally.around(
          'list',
          async () => {
            for (let index = 0; index < BASELINE_LISTS; index += 1) lists.push(await timed(async () => (listed = (await listManaged(docker, planeId)).length)));
          },
          BASELINE_LISTS,
        );
        if (listed !== size) failures.push(`${size}: the list found ${listed} containers of plane ${planeId}, not ${size}`);
        context.progress(`P4: sweeping ${size}`);
        engineLog.take();
        const workflowId = `p4-sweep-${context.runId}-${size}`;
        let report: SweepReport | undefined;
        const sweepMs = await tally.around('sweep', () => timed(async () => (report = await sweep(worker as TestWorker, workflowId))));
        const calls = countByOperation(engineLog.take());
        const counts = report?.counts;
        if (counts?.containers !== size || counts.removed !== size) failures.push(`${size}: the sweep saw ${counts?.containers} containers and removed ${counts?.removed}`);
        const listMs = median(lists);
        perContainer.set(size, sweepMs / size);
        const hostId = report?.hosts?.find((host) => host.swept)?.hostId;
        perSize[String(size)] = {
          engineCallsPerContainer: Object.fromEntries(Object.entries(calls).map(([operation, count]) => [operation, rounded(count / size, 2)])),
          hostSweepHistory: hostId === undefined ? null : await historyProfile(worker.client, `${workflowId}-${hostId}`),
        };
        rows.push({
          key: `P4.${size}`,
          measured: { label: `sweep of ${size} orphans`, value: sweepMs, unit: 'ms' },
          baseline: { label: `list of ${size}`, value: listMs, unit: 'ms' },
          ratio: ratioOf(sweepMs, listMs),
          target: null,
          detail: `sweep ${(sweepMs / size).toFixed(1)} ms per container, list ${((listMs / size) * 1000).toFixed(0)} µs per container (median of ${BASELINE_LISTS} lists right before); ${counts?.removed ?? 0} removed`,
          data: { size, sweepMsPerContainer: rounded(sweepMs / size, 2), listMsPerContainer: rounded(listMs / size, 4), removed: counts?.removed ?? 0 },
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
