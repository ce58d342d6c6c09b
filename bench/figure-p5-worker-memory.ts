import { randomBytes } from 'node:crypto';
import { BENCH_PRINCIPAL, type Figure } from './bench-context';
import { ratioOf, type FigureRow } from './bench-report';
import { median, rounded, sleep } from './measure';
import type { MeasuredWorker } from './bench-context';
import { startMeasuredWorker } from './measured-worker';
import { CpuTally, rssMb } from './proc-stats';
import { roundTrip } from './round-trip-baseline';

const TARGET_MB = 350;
const TARGET_GROWTH = 1.1;
/** Creates and destroys in flight at once: enough to keep the server busy, few enough that none times out. */
const IN_FLIGHT = 25;
const WARMUP_LIFECYCLES = 10;

/** Resident memory moves with the garbage collector: a few readings, the median. */
async function settledRssMb(pid: number): Promise<number> {
  await sleep(2_000);
  const readings: number[] = [];
  for (let index = 0; index < 5; index += 1) {
    readings.push(rssMb(pid));
    await sleep(500);
  }
  return median(readings);
}

/** Runs `work` over `ids`, at most {@link IN_FLIGHT} at a time; returns one line per failure. */
export async function inFlight(ids: readonly string[], work: (id: string) => Promise<unknown>, limit = IN_FLIGHT): Promise<string[]> {
  const failures: string[] = [];
  let next = 0;
  const lane = async () => {
    while (next < ids.length) {
      const id = ids[next] as string;
      next += 1;
      await work(id).catch((err: unknown) => failures.push(`${id}: ${(err as Error).message}`));
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, ids.length) }, lane));
  return failures;
}

/**
 * P5: the resident memory of a worker (`sandboxctl worker` in a child process of its own,
 * fresh for this figure) holding N live memory sandboxes (READY, health watch running),
 * for each N of `--live` in turn (the sandboxes of the smaller N stay live), against the
 * same worker idle after a warm-up; and the growth from the smallest N to the largest,
 * which the workflow cache (SANDBOXPLANE_WORKFLOW_CACHE_SIZE) bounds.
 */
export const p5WorkerMemory: Figure = {
  id: 'P5',
  title: 'worker resident memory with live sandboxes',
  needs: [],
  async run(context) {
    const sizes = [...new Set(context.options.live)].sort((a, b) => a - b);
    let worker: MeasuredWorker | undefined;
    return context.cleanup.guard(
      'P5 worker',
      async () => worker?.stop(),
      async () => {
        worker = await startMeasuredWorker(context, 'memory');
        const { pid, client, sandboxes, taskQueue } = worker;
        const readyMb = await settledRssMb(pid);
        context.progress(`P5: warm-up (${WARMUP_LIFECYCLES} lifecycles), then the idle worker's RSS`);
        await roundTrip(client, taskQueue, `p5-warmup-${context.runId}`);
        for (let index = 0; index < WARMUP_LIFECYCLES; index += 1) {
          const id = `p5-warmup-${context.runId}-${index}`;
          await sandboxes.create({ id, principal: BENCH_PRINCIPAL, services: ['s3'] }, { wait: 'ready' });
          await sandboxes.destroy(id);
        }
        const idleMb = await settledRssMb(pid);
        const prefix = `p5-${context.runId}-${randomBytes(2).toString('hex')}`;
        const ids: string[] = [];
        const tally = new CpuTally({ worker: pid, server: context.serverPid, bench: process.pid });
        const createFailures: string[] = [];
        const liveMb = new Map<number, number>();
        for (const size of sizes) {
          const more = Array.from({ length: size - ids.length }, (_, index) => `${prefix}-${ids.length + index}`);
          ids.push(...more);
          context.progress(`P5: ${size} live sandboxes (${more.length} more, ${IN_FLIGHT} at a time)`);
          const failed = await tally.around(
            `create to ${size}`,
            () => inFlight(more, (id) => sandboxes.create({ id, principal: BENCH_PRINCIPAL, services: ['s3'], ttlSeconds: 3600 }, { wait: 'ready' })),
            more.length,
          );
          createFailures.push(...failed);
          liveMb.set(size, await settledRssMb(pid));
        }
        context.progress(`P5: destroying ${ids.length} sandboxes`);
        const destroyFailures = await inFlight(ids, (id) => sandboxes.destroy(id));
        const afterDestroyMb = await settledRssMb(pid);
        const smallest = sizes[0] as number;
        const largest = sizes[sizes.length - 1] as number;
        const rows: FigureRow[] = sizes.map((size) => {
          const mb = liveMb.get(size) as number;
          const deltaMb = mb - idleMb;
          return {
            key: `P5.${size}`,
            measured: { label: `worker RSS, ${size} live sandboxes`, value: mb, unit: 'MB' },
            baseline: { label: 'the same worker idle', value: idleMb, unit: 'MB' },
            ratio: ratioOf(mb, idleMb),
            target: size === largest ? { text: `<= ${TARGET_MB} MB`, reached: mb <= TARGET_MB } : null,
            detail:
              `+${deltaMb.toFixed(1)} MB, ${((deltaMb * 1024) / size).toFixed(0)} KB per live sandbox; ${readyMb.toFixed(0)} MB when it was ready` +
              (size === largest ? `, ${afterDestroyMb.toFixed(0)} MB once all were destroyed; ${createFailures.length} creates failed` : ''),
            data: { readyMb: rounded(readyMb), idleMb: rounded(idleMb), liveMb: rounded(mb), deltaMb: rounded(deltaMb), perSandboxKb: rounded((deltaMb * 1024) / size), live: size },
          };
        });
        if (sizes.length > 1) {
          const small = liveMb.get(smallest) as number;
          const large = liveMb.get(largest) as number;
          const growth = ratioOf(large, small);
          rows.push({
            key: 'P5.growth',
            measured: { label: `worker RSS, ${largest} live`, value: large, unit: 'MB' },
            baseline: { label: `worker RSS, ${smallest} live`, value: small, unit: 'MB' },
            ratio: growth,
            target: { text: `<= ${TARGET_GROWTH}x`, reached: growth === null ? null : growth <= TARGET_GROWTH },
            detail:
              `+${(large - small).toFixed(1)} MB for ${largest - smallest} more sandboxes, ${(((large - small) * 1024) / (largest - smallest)).toFixed(0)} KB each; ` +
              `${afterDestroyMb.toFixed(0)} MB once all were destroyed`,
            data: { smallMb: rounded(small), largeMb: rounded(large), afterDestroyMb: rounded(afterDestroyMb) },
          });
        }
        const failures = [...createFailures.map((line) => `create ${line}`), ...destroyFailures.map((line) => `destroy ${line}`)];
        return {
          rows,
          profile: { cpu: tally.summary() },
          lifecycleFailures: createFailures.length + destroyFailures.length,
          failures,
        };
      },
    );
  },
};
