import { randomBytes } from 'node:crypto';
import { workflowIdFor } from '../src/domain/contract-names';
import { checkHealthSignal } from '../src/workflows/sandbox-messages';
import type { TestWorker } from '../test/harness/test-worker';
import { BENCH_PRINCIPAL, type Figure } from './bench-context';
import { withBenchWorker } from './bench-worker';
import { ratioOf } from './bench-report';
import { inFlight } from './figure-p5-worker-memory';
import { median, rounded, sleep } from './measure';
import { startCpuReading } from './proc-stats';

const TARGET_EVENTS_PER_MINUTE = 2;
/** Moto creates at once: each starts a Python process, and the machine has few cores. */
const MOTO_IN_FLIGHT = 4;
const MEMORY_IN_FLIGHT = 25;
/** After the last READY: the creates' own tail (the health watch's first look, the store's projection) is not idling. */
const SETTLE_MS = 10_000;

/** A history's length once it has stopped growing (no new event for two seconds, 30 s at most). */
async function settledHistoryLength(length: () => Promise<number>, from: number): Promise<number> {
  let last = from;
  let stableSince = Date.now();
  const started = Date.now();
  while (Date.now() - stableSince < 2_000 && Date.now() - started < 30_000) {
    await sleep(250);
    const now = await length();
    if (now !== last) {
      last = now;
      stableSince = Date.now();
    }
  }
  return last;
}

/**
 * IDLE (issue 30): what a READY sandbox nobody uses costs Temporal. N sandboxes are
 * created (moto when the engine and image are there, else memory) and left alone for a
 * window; their histories are counted before and after it, and the dev server's CPU over
 * it is compared with its CPU over a window of the same length with no sandboxes (same
 * worker, polling). Both windows are read from /proc of the dev server's process.
 */
export const idleSandboxes: Figure = {
  id: 'IDLE',
  title: 'history and server CPU of idle READY sandboxes',
  needs: [],
  wants: ['moto'],
  async run(context) {
    const { idleSandboxes: count, idleSeconds } = context.options;
    const { dockerHost, motoImage, engineMissing, motoMissing } = context.docker;
    const moto = dockerHost !== undefined && motoImage !== undefined && engineMissing === null && motoMissing === null;
    const adapter = moto ? 'moto' : 'memory';
    // Said in the rows: memory sandboxes stand in for moto ones only for want of the engine or the image.
    const instead = moto ? '' : `; memory sandboxes because moto ${engineMissing ?? motoMissing ?? 'is not configured'}`;
    const inFlightLimit = moto ? MOTO_IN_FLIGHT : MEMORY_IN_FLIGHT;
    const serverPid = context.serverPid;
    if (serverPid === undefined) throw new Error('IDLE reads the dev server CPU from /proc, and its process was not found');
    const ids: string[] = [];
    // Interrupted with sandboxes still live: they are destroyed before the worker goes.
    const beforeStop = (worker: TestWorker) => inFlight(ids.splice(0), (id) => worker.sandboxes.destroy(id), inFlightLimit);
    return withBenchWorker(context, 'idle', { moto, beforeStop }, async (started) => {
      const create = (id: string) => started.sandboxes.create({ id, principal: BENCH_PRINCIPAL, adapter, services: ['s3'], ttlSeconds: 3600 }, { wait: 'ready' });
      const prefix = `idle-${context.runId}-${randomBytes(2).toString('hex')}`;
      context.progress(`IDLE: warm-up, then ${idleSeconds} s of the server with no sandboxes`);
      ids.push(`${prefix}-warmup`);
      await create(`${prefix}-warmup`);
      await started.sandboxes.destroy(`${prefix}-warmup`);
      ids.length = 0;
      await sleep(SETTLE_MS);
      const quiet = startCpuReading({ server: serverPid });
      await sleep(idleSeconds * 1000);
      const baseline = quiet();

      context.progress(`IDLE: ${count} ${adapter} sandboxes, then ${idleSeconds} s idle`);
      ids.push(...Array.from({ length: count }, (_, index) => `${prefix}-${index}`));
      const createFailures = await inFlight(ids, create, inFlightLimit);
      if (createFailures.length > 0) throw new Error(`${createFailures.length} of ${count} creates failed: ${createFailures[0]}`);
      await sleep(SETTLE_MS);
      const historyLength = async (id: string) => ((await started.client.workflow.getHandle(workflowIdFor(id)).fetchHistory()).events ?? []).length;
      const eventsBefore = await Promise.all(ids.map(historyLength));
      const idle = startCpuReading({ server: serverPid });
      await sleep(idleSeconds * 1000);
      const window = idle();
      const eventsAfter = await Promise.all(ids.map(historyLength));

      const minutes = window.wallSeconds / 60;
      const baselineMinutes = baseline.wallSeconds / 60;
      const added = eventsAfter.reduce((sum, after, index) => sum + after - (eventsBefore[index] ?? after), 0);
      const eventsPerMinute = added / count / minutes;
      const serverMsPerMinute = ((window.cpuSeconds.server ?? 0) * 1000) / minutes;
      const quietMsPerMinute = ((baseline.cpuSeconds.server ?? 0) * 1000) / baselineMinutes;
      // Noise can make it a hair below zero; an idle sandbox costs no less than none.
      const perSandboxMs = Math.max(0, (serverMsPerMinute - quietMsPerMinute) / count);
      const atReady = median(eventsBefore);
      // The window is shorter than the health watch's safety net (a look every 10 minutes by
      // default): one look, asked for by its signal as the engine's death watch would, is
      // counted and spread over its interval.
      const looked = ids[0] as string;
      const beforeLook = await historyLength(looked);
      await started.client.workflow.getHandle(workflowIdFor(looked)).signal(checkHealthSignal);
      const afterLook = await settledHistoryLength(() => historyLength(looked), beforeLook);
      const lookEvents = afterLook - beforeLook;
      const intervalMinutes = started.config.lifecycle.healthCheckIntervalSeconds / 60;
      const perMinute = eventsPerMinute + lookEvents / intervalMinutes;
      const destroyFailures = await inFlight(ids.splice(0), (id) => started.sandboxes.destroy(id), inFlightLimit);
      return {
        rows: [
          {
            key: 'IDLE.events',
            measured: { label: `history events per idle READY sandbox-minute (${adapter})`, value: perMinute, unit: 'count' },
            baseline: { label: 'events in its history at READY', value: atReady, unit: 'count' },
            ratio: ratioOf(perMinute, atReady),
            target: { text: `<= ${TARGET_EVENTS_PER_MINUTE} per minute`, reached: perMinute <= TARGET_EVENTS_PER_MINUTE },
            detail:
              `${count} sandboxes idle for ${window.wallSeconds.toFixed(0)} s added ${added} events in all (${eventsPerMinute.toFixed(2)} a sandbox-minute); ` +
              `a health look adds ${lookEvents}, one every ${intervalMinutes} minutes (${(lookEvents / intervalMinutes).toFixed(2)} a minute); median history at READY ${atReady} events${instead}`,
            data: {
              sandboxes: count,
              adapter,
              seconds: rounded(window.wallSeconds),
              eventsAdded: added,
              windowEventsPerMinute: rounded(eventsPerMinute, 3),
              healthLookEvents: lookEvents,
              healthIntervalMinutes: intervalMinutes,
              eventsAtReadyMedian: atReady,
            },
          },
          {
            key: 'IDLE.cpu',
            measured: { label: `server CPU per idle sandbox-minute (${adapter})`, value: perSandboxMs, unit: 'ms' },
            baseline: { label: 'server CPU per minute, no sandboxes', value: quietMsPerMinute, unit: 'ms' },
            ratio: ratioOf(perSandboxMs, quietMsPerMinute),
            target: null,
            detail:
              `the server spent ${serverMsPerMinute.toFixed(0)} ms a minute with ${count} idle sandboxes, ${quietMsPerMinute.toFixed(0)} with none ` +
              `(windows of ${window.wallSeconds.toFixed(0)} s and ${baseline.wallSeconds.toFixed(0)} s); machine ${((window.cpuSeconds.machine ?? 0) / window.wallSeconds).toFixed(2)} cores busy`,
            data: {
              serverMsPerMinute: rounded(serverMsPerMinute),
              quietServerMsPerMinute: rounded(quietMsPerMinute),
              machineCores: rounded((window.cpuSeconds.machine ?? 0) / window.wallSeconds, 2),
            },
          },
        ],
        profile: { idle: window, quiet: baseline },
        lifecycleFailures: destroyFailures.length,
        failures: destroyFailures.map((line) => `destroy ${line}`),
      };
    });
  },
};
