import { workflowIdFor } from '../src/domain/contract-names';
import { latency, ratioOf } from './bench-report';
import { BENCH_PRINCIPAL, type Figure } from './bench-context';
import { historyProfile } from './history-profile';
import { alternate, median, rounded, timed } from './measure';
import { CpuTally } from './proc-stats';
import { roundTrip } from './round-trip-baseline';
import { registerWebhooks, webhookSink } from './webhook-sink';

/** The principal whose events three webhooks receive in P1's webhook rounds; the bench policy (`bench*`) allows it. */
const HOOKED_PRINCIPAL = `${BENCH_PRINCIPAL}-hooked`;
const WEBHOOKS = 3;

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

    // Three webhooks receive every event of HOOKED_PRINCIPAL's sandboxes (a receiver in this
    // process): its creates alternate with the same creates of a principal no webhook wants.
    context.progress(`P1: ${rounds} rounds of create → READY without, then with ${WEBHOOKS} webhooks receiving its events`);
    const sink = await webhookSink();
    const hooked = { without: [] as number[], with: [] as number[] };
    try {
      await registerWebhooks(
        worker.env,
        Array.from({ length: WEBHOOKS }, (_, n) => sink.url(`/hook-${n}`)),
        HOOKED_PRINCIPAL,
      );
      const lifecycle = async (principal: string, name: string) => {
        const ms = await timed(() => sandboxes.create({ id: name, principal, services: ['s3'] }, { wait: 'ready' }));
        await sandboxes.destroy(name);
        return ms;
      };
      const pair = await alternate(
        rounds,
        (round) => lifecycle(BENCH_PRINCIPAL, `p1-plain-${context.runId}-${round}`),
        (round) => lifecycle(HOOKED_PRINCIPAL, `p1-hooked-${context.runId}-${round}`),
      );
      hooked.without.push(...pair.baseline);
      hooked.with.push(...pair.measured);
    } finally {
      await sink.close();
    }
    const withoutHooks = median(hooked.without);
    const withHooks = median(hooked.with);
    const hookedRatio = ratioOf(withHooks, withoutHooks);

    const base = median(measured.baseline);
    const create = median(measured.measured);
    const destroyed = median(destroy);
    const baseline = latency('roundTrip workflow', measured.baseline);
    const detail = `${rounds} rounds alternating with the baseline, medians; worker: sandboxctl worker in a child process`;
    return {
      rows: [
        { key: 'P1.create', measured: latency('create → READY (memory)', measured.measured), baseline, ratio: ratioOf(create, base), target: null, detail },
        {
          key: 'P1.destroy',
          measured: latency('destroy → DESTROYED (memory)', destroy),
          baseline,
          ratio: ratioOf(destroyed, base),
          target: null,
          detail: 'the same rounds, right after each create',
        },
        {
          key: 'P1.webhooks',
          measured: latency(`create → READY, ${WEBHOOKS} webhooks receiving its events`, hooked.with),
          baseline: latency('create → READY, no webhook wants its events', hooked.without),
          ratio: hookedRatio,
          target: { text: '<= 1.1x (within noise)', reached: hookedRatio === null ? null : hookedRatio <= 1.1 },
          detail: `${rounds} rounds alternating, medians; deliveries to a receiver in the bench process (${sink.received()} taken)`,
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
          webhooks: {
            without: { min: rounded(Math.min(...hooked.without)), max: rounded(Math.max(...hooked.without)) },
            with: { min: rounded(Math.min(...hooked.with)), max: rounded(Math.max(...hooked.with)) },
          },
          create: { min: rounded(Math.min(...measured.measured)), max: rounded(Math.max(...measured.measured)) },
          roundTrip: { min: rounded(Math.min(...measured.baseline)), max: rounded(Math.max(...measured.baseline)) },
        },
      },
    };
  },
};
