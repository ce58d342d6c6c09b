import { workflowIdFor } from '../src/domain/contract-names';
import { ratioOf } from './bench-report';
import { BENCH_PRINCIPAL, type Figure } from './bench-context';
import { historyProfile } from './history-profile';
import { alternate, median, rounded, timed } from './measure';
import { CpuTally } from './proc-stats';
import { roundTrip } from './round-trip-baseline';

/**
 * P1: a memory sandbox's create → READY and destroy → DESTROYED, one at a time, against
 * the roundTrip workflow (one activity) on the same worker, alternating; medians.
 */
export const p1CreateLatency: Figure = {
  id: 'P1',
  title: 'create → READY, memory adapter',
  needs: [],
  async run(context) {
    const { rounds } = context.options;
    const worker = await context.measuredWorker();
    const { client, sandboxes, taskQueue } = worker;
    context.progress(`P1: ${rounds} rounds of roundTrip, then create → READY → destroy (memory)`);
    // Warm-up: first workflow tasks, connections, the worker's caches.
    await roundTrip(client, taskQueue, `p1-warmup-${context.runId}`);
    const warm = await sandboxes.create({ id: `p1-warmup-${context.runId}`, principal: BENCH_PRINCIPAL, services: ['s3'] }, { wait: 'ready' });
    await sandboxes.destroy(warm.id);

    const tally = new CpuTally({ worker: worker.pid, server: context.serverPid, bench: process.pid });
    const destroy: number[] = [];
    let lastRoundTrip = '';
    const id = (round: number) => `p1-${context.runId}-${round}`;
    const measured = await alternate(
      rounds,
      (round) =>
        tally.around('roundTrip', () =>
          timed(async () => {
            lastRoundTrip = (await roundTrip(client, taskQueue, `p1-${context.runId}-${round}`)).workflowId;
          }),
        ),
      (round) =>
        tally.around('lifecycle', async () => {
          const ms = await timed(() => sandboxes.create({ id: id(round), principal: BENCH_PRINCIPAL, services: ['s3'] }, { wait: 'ready' }));
          destroy.push(await timed(() => sandboxes.destroy(id(round))));
          return ms;
        }),
    );
    const base = median(measured.baseline);
    const create = median(measured.measured);
    const destroyed = median(destroy);
    const baseline = { label: 'roundTrip workflow', value: base, unit: 'ms' as const };
    const detail = `${rounds} rounds alternating with the baseline, medians; worker: sandboxctl worker in a child process`;
    return {
      rows: [
        { key: 'P1.create', measured: { label: 'create → READY (memory)', value: create, unit: 'ms' }, baseline, ratio: ratioOf(create, base), target: null, detail },
        {
          key: 'P1.destroy',
          measured: { label: 'destroy → DESTROYED (memory)', value: destroyed, unit: 'ms' },
          baseline,
          ratio: ratioOf(destroyed, base),
          target: null,
          detail: 'the same rounds, right after each create',
        },
      ],
      profile: {
        history: {
          lifecycle: await historyProfile(client, workflowIdFor(id(rounds - 1))),
          roundTrip: await historyProfile(client, lastRoundTrip),
        },
        // Per lifecycle (create + destroy) and per roundTrip.
        cpu: tally.summary(),
        spreadMs: {
          create: { min: rounded(Math.min(...measured.measured)), max: rounded(Math.max(...measured.measured)) },
          roundTrip: { min: rounded(Math.min(...measured.baseline)), max: rounded(Math.max(...measured.baseline)) },
        },
      },
    };
  },
};
