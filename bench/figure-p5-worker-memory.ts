import { randomBytes } from 'node:crypto';
import { BENCH_PRINCIPAL, type Figure } from './bench-context';
import { ratioOf } from './bench-report';
import { median, rounded, sleep } from './measure';
import { startMeasuredWorker, type MeasuredWorker } from './measured-worker';
import { CpuTally, rssMb } from './proc-stats';
import { roundTrip } from './round-trip-baseline';

const TARGET_MB = 300;
const BATCH = 50;
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

async function inBatches(ids: readonly string[], work: (id: string) => Promise<unknown>): Promise<string[]> {
  const failures: string[] = [];
  for (let start = 0; start < ids.length; start += BATCH) {
    const outcomes = await Promise.allSettled(ids.slice(start, start + BATCH).map(work));
    outcomes.forEach((outcome, index) => {
      if (outcome.status === 'rejected') failures.push(`${ids[start + index]}: ${(outcome.reason as Error).message}`);
    });
  }
  return failures;
}

/**
 * P5: the resident memory of a worker (`sandboxctl worker` in a child process of its own,
 * fresh for this figure) holding N live memory sandboxes (READY, health watch running),
 * against the same worker idle after a warm-up.
 */
export const p5WorkerMemory: Figure = {
  id: 'P5',
  title: 'worker resident memory with live sandboxes',
  needs: [],
  async run(context) {
    const { live } = context.options;
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
        const ids = Array.from({ length: live }, (_, index) => `${prefix}-${index}`);
        context.progress(`P5: ${live} live sandboxes, ${BATCH} at a time`);
        const tally = new CpuTally({ worker: pid, server: context.serverPid, bench: process.pid });
        const createFailures = await tally.around(
          'create',
          () => inBatches(ids, (id) => sandboxes.create({ id, principal: BENCH_PRINCIPAL, services: ['s3'], ttlSeconds: 3600 }, { wait: 'ready' })),
          live,
        );
        const liveMb = await settledRssMb(pid);
        const destroyFailures = await inBatches(ids, (id) => sandboxes.destroy(id));
        const afterDestroyMb = await settledRssMb(pid);
        const deltaMb = liveMb - idleMb;
        const failures = [...createFailures.map((line) => `create ${line}`), ...destroyFailures.map((line) => `destroy ${line}`)];
        return {
          rows: [
            {
              key: 'P5',
              measured: { label: `worker RSS, ${live} live sandboxes`, value: liveMb, unit: 'MB' },
              baseline: { label: 'the same worker idle', value: idleMb, unit: 'MB' },
              ratio: ratioOf(liveMb, idleMb),
              target: { text: `<= ${TARGET_MB} MB`, reached: liveMb <= TARGET_MB },
              detail:
                `+${deltaMb.toFixed(1)} MB, ${((deltaMb * 1024) / live).toFixed(0)} KB per live sandbox; ${readyMb.toFixed(0)} MB when it was ready, ` +
                `${afterDestroyMb.toFixed(0)} MB once all were destroyed; ${createFailures.length} creates failed`,
              data: {
                readyMb: rounded(readyMb),
                idleMb: rounded(idleMb),
                liveMb: rounded(liveMb),
                deltaMb: rounded(deltaMb),
                perSandboxKb: rounded((deltaMb * 1024) / live),
                afterDestroyMb: rounded(afterDestroyMb),
                live,
              },
            },
          ],
          profile: { cpu: tally.summary() },
          lifecycleFailures: createFailures.length + destroyFailures.length,
          failures,
        };
      },
    );
  },
};
