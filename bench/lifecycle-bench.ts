/**
 * `npm run bench`: what a sandbox costs on top of Temporal itself, as ratios against a
 * baseline measured in the same run on the same dev server and worker, so the numbers
 * compare across machines. Baseline: the `roundTrip` workflow (one activity). Measured,
 * through the client SDK with the memory adapter:
 *
 * - latency: create → READY and destroy → DESTROYED one at a time, medians;
 * - throughput: N full lifecycles (create → READY → destroy) started at once, per
 *   second, against N roundTrip workflows started at once (goal: at least 0.5×).
 *
 * Exits non-zero when any lifecycle failed (a create or destroy threw, or it did not end
 * DESTROYED).
 *
 *   npm run bench                                  # 20 rounds, 50 concurrent
 *   npm run bench -- --rounds 50 --concurrency 200
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { Client } from '@temporalio/client';
import { runRoundTrip } from '../src/client/round-trip';
import { concurrentLifecycles, describeFailures } from '../test/helpers/lifecycle-burst';
import { startTestDevServer } from '../test/helpers/test-temporal';
import { startTestWorker } from '../test/helpers/test-worker';

const PRINCIPAL = 'bench';
// Generous: under a burst the last roundTrip waits behind all the others.
const ROUND_TRIP_TIMEOUT_MS = 5 * 60_000;

function wholeNumberOption(values: Record<string, string | boolean | undefined>, name: string, fallback: number, minimum: number): number {
  const raw = values[name];
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < minimum) throw new Error(`--${name} must be a whole number >= ${minimum}, got ${String(raw)}`);
  return value;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

function roundTrip(client: Client, taskQueue: string, requestedBy: string): Promise<unknown> {
  return runRoundTrip(client, { taskQueue, requestedBy, timeoutMs: ROUND_TRIP_TIMEOUT_MS });
}

function line(name: string, value: string, detail: string): void {
  process.stdout.write(`  ${name.padEnd(36)} ${value.padStart(9)}   (${detail})\n`);
}

async function run(): Promise<number> {
  const { values } = parseArgs({ options: { rounds: { type: 'string' }, concurrency: { type: 'string' } } });
  const rounds = wholeNumberOption(values, 'rounds', 20, 3);
  const concurrency = wholeNumberOption(values, 'concurrency', 50, 1);
  const server = await startTestDevServer();
  const worker = await startTestWorker(server.address);
  try {
    worker.store.policies.add({ principalPattern: '*', capability: 'cloud.sandbox', effect: 'allow' });
    const taskQueue = worker.config.taskQueue;
    // Warm-up: bundle caches, first workflow tasks, connections.
    await roundTrip(worker.client, taskQueue, 'bench-warmup');
    const warm = await worker.sandboxes.create({ principal: PRINCIPAL, services: ['s3'] }, { wait: 'ready' });
    await worker.sandboxes.destroy(warm.id);

    const baseline: number[] = [];
    const create: number[] = [];
    const destroy: number[] = [];
    const runId = randomBytes(4).toString('hex');
    for (let round = 0; round < rounds; round += 1) {
      baseline.push(await timed(() => roundTrip(worker.client, taskQueue, `bench-${round}`)));
      const id = `bench-${runId}-${round}`;
      create.push(await timed(() => worker.sandboxes.create({ id, principal: PRINCIPAL, services: ['s3'] }, { wait: 'ready' })));
      destroy.push(await timed(() => worker.sandboxes.destroy(id)));
    }
    const base = median(baseline);
    process.stdout.write(`latency: ${rounds} rounds one at a time, medians; ratio = median / baseline median\n`);
    for (const [name, ms] of [
      ['roundTrip workflow (baseline)', base],
      ['create → READY (memory)', median(create)],
      ['destroy → DESTROYED (memory)', median(destroy)],
    ] as const) {
      line(name, `${(ms / base).toFixed(2)}x`, `${ms.toFixed(1)} ms`);
    }

    // requestedBy is part of the roundTrip workflow id: each of the burst needs its own.
    const burstStarted = performance.now();
    await Promise.all(Array.from({ length: concurrency }, (_, index) => roundTrip(worker.client, taskQueue, `burst-${index}`)));
    const baselineSeconds = (performance.now() - burstStarted) / 1000;
    const baselineRate = concurrency / baselineSeconds;

    const burst = await concurrentLifecycles(worker.sandboxes, concurrency, PRINCIPAL);
    const lifecycleSeconds = burst.elapsedMs / 1000;
    const completed = burst.outcomes.length - burst.failures.length;
    const lifecycleRate = completed / lifecycleSeconds;
    process.stdout.write(`throughput: ${concurrency} started at once; ratio = lifecycles per second / roundTrips per second (goal >= 0.50x)\n`);
    line('roundTrip workflows (baseline)', `${baselineRate.toFixed(1)}/s`, `${concurrency} in ${baselineSeconds.toFixed(2)} s`);
    line('create → READY → destroy (memory)', `${lifecycleRate.toFixed(1)}/s`, `${completed} of ${concurrency} in ${lifecycleSeconds.toFixed(2)} s`);
    line('ratio', `${(lifecycleRate / baselineRate).toFixed(2)}x`, `${burst.failures.length} failed`);
    if (burst.failures.length === 0) return 0;
    process.stdout.write(`failures (${burst.failures.length} of ${concurrency} lifecycles):\n`);
    for (const description of describeFailures(burst.failures)) process.stdout.write(`  ${description}\n`);
    return 1;
  } finally {
    await worker.stop();
    await server.stop();
  }
}

run()
  .then((code) => process.exit(code))
  .catch((err) => {
    console.error(err);
    process.exit(1);
  });
