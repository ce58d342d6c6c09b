import { performance } from 'node:perf_hooks';
import { concurrentLifecycles, describeFailures } from '../test/harness/lifecycle-burst';
import { ratioOf, type FigureRow } from './bench-report';
import { BENCH_PRINCIPAL, type Figure } from './bench-context';
import { percentilesOf } from './measure';
import { CpuTally } from './proc-stats';
import { roundTrip } from './round-trip-baseline';

/** Issue 15's goal: at this many concurrent agents, at least half the bare workflow rate, none failed. */
const TARGET_CONCURRENCY = 200;
const TARGET_RATIO = 0.5;

/**
 * P3: N full lifecycles (create → READY → destroy, memory adapter) started at once, as N
 * agents would, per second, against N roundTrip workflows started at once on the same
 * worker, for each N of `--concurrency`.
 */
export const p3Throughput: Figure = {
  id: 'P3',
  title: 'lifecycles per second, concurrent agents',
  needs: [],
  async run(context) {
    const worker = await context.measuredWorker();
    const { client, sandboxes, taskQueue } = worker;
    const rows: FigureRow[] = [];
    const failures: string[] = [];
    const cpu: Record<string, unknown> = {};
    let lifecycleFailures = 0;
    for (const concurrency of context.options.concurrency) {
      context.progress(`P3: ${concurrency} roundTrips at once, then ${concurrency} lifecycles at once`);
      const tally = new CpuTally({ worker: worker.pid, server: context.serverPid, bench: process.pid });
      const baselineMs = await tally.around(
        'roundTrip',
        async () => {
          const started = performance.now();
          await Promise.all(Array.from({ length: concurrency }, (_, index) => roundTrip(client, taskQueue, `p3-${context.runId}-${concurrency}-${index}`)));
          return performance.now() - started;
        },
        concurrency,
      );
      const burst = await tally.around('lifecycle', () => concurrentLifecycles(sandboxes, concurrency, BENCH_PRINCIPAL), concurrency);
      const baselineRate = concurrency / (baselineMs / 1000);
      const completed = burst.outcomes.length - burst.failures.length;
      const rate = completed / (burst.elapsedMs / 1000);
      const ratio = ratioOf(rate, baselineRate);
      const ready = percentilesOf(burst.outcomes.flatMap((outcome) => (outcome.readyMs === undefined ? [] : [outcome.readyMs])));
      lifecycleFailures += burst.failures.length;
      failures.push(...describeFailures(burst.failures).map((line) => `${concurrency} at once: ${line}`));
      cpu[String(concurrency)] = tally.summary();
      rows.push({
        key: `P3.${concurrency}`,
        measured: { label: `lifecycles/s, ${concurrency} at once`, value: rate, unit: 'per_s' },
        baseline: { label: 'roundTrip workflows/s', value: baselineRate, unit: 'per_s' },
        ratio,
        target: concurrency === TARGET_CONCURRENCY ? { text: `>= ${TARGET_RATIO}x, 0 failed`, reached: ratio !== null && ratio >= TARGET_RATIO && burst.failures.length === 0 } : null,
        detail:
          `${completed} of ${concurrency} lifecycles in ${(burst.elapsedMs / 1000).toFixed(2)} s, ${burst.failures.length} failed; baseline ${concurrency} in ${(baselineMs / 1000).toFixed(2)} s` +
          (ready === null ? '' : `; each create → READY p50 / p95 / p99 ${ready.p50} / ${ready.p95} / ${ready.p99} ms`),
        data: {
          concurrency,
          failed: burst.failures.length,
          lifecycleSeconds: burst.elapsedMs / 1000,
          baselineSeconds: baselineMs / 1000,
          // Each agent's own create → READY inside the burst (a rate row has no median of its own).
          createToReadyMs: ready,
        },
      });
    }
    return { rows, profile: { cpu }, lifecycleFailures, failures };
  },
};
