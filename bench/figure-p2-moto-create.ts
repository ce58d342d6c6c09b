import { performance } from 'node:perf_hooks';
import { workflowIdFor } from '../src/domain/contract-names';
import { PLANE_LABEL } from '../src/domain/docker-labels';
import { DockerContainerBroker } from '../src/docker';
import { dockerClient } from '../test/harness/container-events';
import { fullMotoPool, fullNetworkPool } from './full-moto-pool';
import { startTestWorker, type TestWorker } from '../test/harness/test-worker';
import { containersLabelled, removeContainers, removePlaneNetworks } from './bench-containers';
import { BENCH_PRINCIPAL, benchWorkerEnv, enginePid, type BenchContext, type Figure } from './bench-context';
import { latency, ratioOf, type FigureRow } from './bench-report';
import { countByOperation, EngineCallLog, msByOperation } from './engine-call-log';
import { historyProfile, type HistoryProfile } from './history-profile';
import { alternate, median, rounded } from './measure';
import { CpuTally } from './proc-stats';
import { rawMotoRun, type RawMotoRun } from './raw-moto-run';

/**
 * One way a moto sandbox can come about, measured against raw runs of the same image
 * that alternate with its own creates.
 */
export interface MotoVariant {
  readonly key: 'cold' | 'pool';
  readonly label: string;
  /** The goal for sandbox ÷ raw (issue 42: cold 1.3×, from the pool 0.25×). */
  readonly maxRatio: number;
  /** What the worker's environment adds to turn the variant on. */
  readonly workerEnv: Readonly<Record<string, string>>;
  /**
   * Untimed, before each timed step, a raw run or a create: until the pool holds a started
   * container again, so that its refill (a moto start) runs during neither.
   */
  readonly settle?: (worker: TestWorker) => Promise<void>;
}

/**
 * Cold: no warm pool, so a container starts; its sealed network comes from the host's
 * pre-made ones (SANDBOXPLANE_NETWORK_POOL, on by default), and each step waits, untimed,
 * for that pool to be full again, as the pool variant waits for its containers.
 */
const COLD: MotoVariant = { key: 'cold', label: 'moto create → READY, cold', maxRatio: 1.3, workerEnv: {}, settle: (worker) => fullNetworkPool(worker) };

/**
 * From a warm pool (DESIGN §13): the worker keeps two started moto containers. Each
 * create is measured from a full pool (waiting for the refill is not timed), as an agent
 * arriving after the refill finds it, and so is each raw run (the refill starts a second
 * after a claim: it would otherwise slow the raw run that follows). The rest is shared with the cold variant: a worker
 * of its own, raw runs alternating with its creates, engine calls counted (a refill
 * running during a create counts too), clean-up by the variant's plane label.
 */
const POOL: MotoVariant = {
  key: 'pool',
  label: 'moto create → READY, from a warm pool',
  maxRatio: 0.25,
  workerEnv: { SANDBOXPLANE_WARM_POOL: 'moto=2' },
  settle: (worker) => fullMotoPool(worker, 120_000),
};

/** One timed sandbox create, split by the engine calls the broker logged during it. */
interface SandboxRun {
  readonly totalMs: number;
  /** Until the first engine call began: Temporal, screening, placement, store. */
  readonly beforeEngineMs: number;
  /** The engine calls themselves (their own durations, summed). */
  readonly engineMs: number;
  /** From the last engine call's answer until READY reached the client: the health gate and reporting READY. */
  readonly afterEngineMs: number;
  readonly calls: Readonly<Record<string, number>>;
  /** The engine's time per operation (ms, summed over its calls): where `engineMs` goes. */
  readonly callMs: Readonly<Record<string, number>>;
}

interface VariantMeasurement {
  readonly raw: RawMotoRun[];
  readonly sandbox: SandboxRun[];
  readonly destroyCalls: Readonly<Record<string, number>>[];
  readonly failures: string[];
  readonly cpu: unknown;
  readonly history: HistoryProfile | null;
}

async function measureVariant(context: BenchContext, variant: MotoVariant, motoImage: string, dockerHost: string): Promise<VariantMeasurement> {
  const docker = dockerClient(dockerHost);
  const engineLog = new EngineCallLog();
  const env: Record<string, string> = { ...benchWorkerEnv(context, `moto-${variant.key}`), SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1', SANDBOXPLANE_MOTO_IMAGE: motoImage, ...variant.workerEnv };
  const planeId = env.SANDBOXPLANE_PLANE_ID as string;
  const planeLabel = `${PLANE_LABEL}=${planeId}`;
  let worker: TestWorker | undefined;
  const undo = async () => {
    await worker?.stop();
    // The variant's own containers (a pool's too) and their sealed networks: found by its plane label.
    await removeContainers(docker, await containersLabelled(docker, planeLabel));
    await removePlaneNetworks(docker, planeId);
  };
  return context.cleanup.guard(`P2 ${variant.key} worker`, undo, async () => {
    worker = await startTestWorker(context.server.address, { env, broker: new DockerContainerBroker({ dockerHost, logger: engineLog }) });
    worker.store.policies.add({ principalPattern: `${BENCH_PRINCIPAL}*`, capability: 'cloud.sandbox', effect: 'allow' });
    const started = worker;
    const sandboxRuns: SandboxRun[] = [];
    const rawRuns: RawMotoRun[] = [];
    const destroyCalls: Record<string, number>[] = [];
    const failures: string[] = [];
    const id = (round: number | string) => `p2-${variant.key}-${context.runId}-${round}`;
    const createOnce = async (round: number | string): Promise<number> => {
      await variant.settle?.(started);
      engineLog.take();
      const begun = performance.now();
      try {
        await started.sandboxes.create({ id: id(round), principal: BENCH_PRINCIPAL, adapter: 'moto', services: ['s3'], ttlSeconds: 600 }, { wait: 'ready' });
      } catch (err) {
        failures.push(`create ${id(round)}: ${(err as Error).message}`);
        return NaN;
      }
      const ready = performance.now();
      const calls = engineLog.take();
      const first = calls[0];
      const last = calls.at(-1);
      sandboxRuns.push({
        totalMs: ready - begun,
        beforeEngineMs: first === undefined ? NaN : first.endedAt - first.ms - begun,
        engineMs: calls.reduce((sum, call) => sum + call.ms, 0),
        afterEngineMs: last === undefined ? NaN : ready - last.endedAt,
        calls: countByOperation(calls),
        callMs: msByOperation(calls),
      });
      try {
        const status = await started.sandboxes.destroy(id(round));
        if (status.state !== 'DESTROYED') failures.push(`destroy ${id(round)}: ended ${status.state}`);
      } catch (err) {
        failures.push(`destroy ${id(round)}: ${(err as Error).message}`);
      }
      destroyCalls.push(countByOperation(engineLog.take()));
      return ready - begun;
    };
    context.progress(`P2 ${variant.key}: warm-up (one raw run, one sandbox)`);
    await rawMotoRun(docker, motoImage, context.runId);
    await createOnce('warmup');
    sandboxRuns.length = 0;
    destroyCalls.length = 0;
    context.progress(`P2 ${variant.key}: ${context.options.motoRounds} rounds of raw docker run + health, then a sandbox create`);
    // The worker runs in the bench process here (its broker's log counts the engine calls).
    const tally = new CpuTally({ benchAndWorker: process.pid, server: context.serverPid, engine: enginePid(dockerHost) });
    await alternate(
      context.options.motoRounds,
      async () => {
        await variant.settle?.(started);
        return tally.around('raw', async () => {
          const run = await rawMotoRun(docker, motoImage, context.runId);
          rawRuns.push(run);
          return run.totalMs;
        });
      },
      (round) => tally.around('sandbox', () => createOnce(round)),
    );
    const history = await historyProfile(started.client, workflowIdFor(id(context.options.motoRounds - 1))).catch(() => null);
    return { raw: rawRuns, sandbox: sandboxRuns, destroyCalls, failures, cpu: tally.summary(), history };
  });
}

function medianOf<T>(runs: readonly T[], pick: (run: T) => number | null): number | null {
  const values = runs.map(pick).filter((value): value is number => value !== null && Number.isFinite(value));
  return values.length === 0 ? null : rounded(median(values));
}

/** Each operation's median time across runs (a run without the operation counts 0). */
function medianPerOperation(runs: readonly Readonly<Record<string, number>>[]): Record<string, number> {
  const operations = [...new Set(runs.flatMap((run) => Object.keys(run)))];
  return Object.fromEntries(operations.map((operation) => [operation, rounded(median(runs.map((run) => run[operation] ?? 0)))]));
}

/** `{ create: 1, start: 1 }` when every run made the same calls; otherwise each run's. */
function callsOf(runs: readonly Readonly<Record<string, number>>[]): unknown {
  const distinct = [...new Set(runs.map((calls) => JSON.stringify(calls)))];
  return distinct.length === 1 ? runs[0] : runs;
}

function rowOf(variant: Pick<MotoVariant, 'key' | 'label' | 'maxRatio'>, measured: VariantMeasurement, rounds: number): FigureRow {
  const sandbox = medianOf(measured.sandbox, (run) => run.totalMs);
  const raw = medianOf(measured.raw, (run) => run.totalMs);
  const ratio = ratioOf(sandbox, raw);
  return {
    key: `P2.${variant.key}`,
    measured: {
      ...latency(
        variant.label,
        measured.sandbox.map((run) => run.totalMs),
      ),
      value: sandbox,
    },
    baseline: {
      ...latency(
        'docker run + health poll',
        measured.raw.map((run) => run.totalMs),
      ),
      value: raw,
    },
    ratio,
    target: { text: `<= ${variant.maxRatio}x`, reached: ratio === null ? null : ratio <= variant.maxRatio },
    detail: `${rounds} rounds alternating with raw runs, medians; ${measured.sandbox.length} of ${rounds} creates READY`,
  };
}

/**
 * P2: a moto sandbox's create → READY through the SDK — cold, and from a warm pool —
 * against a raw `docker run` of the same image plus polling its health
 * URL, alternating, medians; on the engine the worker uses.
 */
export const p2MotoCreate: Figure = {
  id: 'P2',
  title: 'moto create → READY vs raw docker run + health',
  needs: ['docker', 'moto'],
  async run(context) {
    const { dockerHost, motoImage } = context.docker;
    if (dockerHost === undefined || motoImage === undefined) throw new Error('P2 runs only with an engine and the moto image');
    const rows: FigureRow[] = [];
    const profile: Record<string, unknown> = {};
    const failures: string[] = [];
    for (const variant of [COLD, POOL]) {
      const measured = await measureVariant(context, variant, motoImage, dockerHost);
      rows.push(rowOf(variant, measured, context.options.motoRounds));
      failures.push(...measured.failures);
      profile[variant.key] = {
        // Medians, ms.
        raw: {
          createMs: medianOf(measured.raw, (run) => run.createMs),
          startMs: medianOf(measured.raw, (run) => run.startMs),
          inspectMs: medianOf(measured.raw, (run) => run.inspectMs),
          healthMs: medianOf(measured.raw, (run) => run.healthMs),
          healthPolls: medianOf(measured.raw, (run) => run.healthPolls),
          motoCpuMsAtHealthy: medianOf(measured.raw, (run) => run.motoCpuMs),
        },
        sandbox: {
          beforeEngineMs: medianOf(measured.sandbox, (run) => run.beforeEngineMs),
          engineMs: medianOf(measured.sandbox, (run) => run.engineMs),
          afterEngineMs: medianOf(measured.sandbox, (run) => run.afterEngineMs),
        },
        engineCallsPerCreate: callsOf(measured.sandbox.map((run) => run.calls)),
        engineMsPerCreate: medianPerOperation(measured.sandbox.map((run) => run.callMs)),
        engineCallsPerDestroy: callsOf(measured.destroyCalls),
        cpu: measured.cpu,
        history: measured.history,
      };
    }
    return { rows, profile, lifecycleFailures: failures.length, failures };
  },
};
