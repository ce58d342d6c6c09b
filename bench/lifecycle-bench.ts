/**
 * `npm run bench`: what a sandbox costs on top of Temporal itself, as ratios against a
 * baseline measured in the same run on the same dev server and worker, so the numbers
 * compare across machines. Baseline: the `roundTrip` workflow (one activity). Measured:
 * create → READY (memory adapter) and destroy → DESTROYED, through the client SDK.
 *
 *   npm run bench               # 20 rounds
 *   npm run bench -- 50         # more rounds
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { runRoundTrip } from '../src/client/round-trip';
import { startTestDevServer } from '../test/helpers/test-temporal';
import { startTestWorker } from '../test/helpers/test-worker';

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

async function run(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 20);
  if (!Number.isInteger(rounds) || rounds < 3) throw new Error(`rounds must be a whole number >= 3, got ${process.argv[2]}`);
  const server = await startTestDevServer();
  const worker = await startTestWorker(server.address);
  try {
    worker.store.policies.add({ principalPattern: '*', capability: 'cloud.sandbox', effect: 'allow' });
    const taskQueue = worker.config.taskQueue;
    // Warm-up: bundle caches, first workflow tasks, connections.
    await runRoundTrip(worker.client, { taskQueue, requestedBy: 'bench' });
    await worker.sandboxes.create({ principal: 'bench', services: ['s3'] }, { wait: 'ready' });

    const baseline: number[] = [];
    const create: number[] = [];
    const destroy: number[] = [];
    for (let round = 0; round < rounds; round += 1) {
      baseline.push(await timed(() => runRoundTrip(worker.client, { taskQueue, requestedBy: 'bench' })));
      const id = `bench-${randomUUID().slice(0, 8)}`;
      create.push(await timed(() => worker.sandboxes.create({ id, principal: 'bench', services: ['s3'] }, { wait: 'ready' })));
      destroy.push(await timed(() => worker.sandboxes.destroy(id)));
    }
    const base = median(baseline);
    const rows = [
      ['roundTrip workflow (baseline)', base],
      ['create → READY (memory)', median(create)],
      ['destroy → DESTROYED (memory)', median(destroy)],
    ] as const;
    process.stdout.write(`${rounds} rounds, medians; ratio = median / baseline median\n`);
    for (const [name, ms] of rows) {
      process.stdout.write(`  ${name.padEnd(32)} ${(ms / base).toFixed(2).padStart(6)}x   (${ms.toFixed(1)} ms)\n`);
    }
  } finally {
    await worker.stop();
    await server.stop();
  }
}

run()
  .then(() => process.exit(0))
  .catch((err) => {
    console.error(err);
    process.exit(1);
  });
