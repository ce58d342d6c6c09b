import { performance } from 'node:perf_hooks';
import type Docker from 'dockerode';
import { MOTO_MEMORY_REQUEST_BYTES } from '../src/adapters/moto-adapter';
import { PLANE_LABEL, SANDBOX_ID_LABEL } from '../src/domain/docker-labels';
import { dockerClient } from '../test/harness/container-events';
import { startTestWorker, type TestWorker } from '../test/harness/test-worker';
import { BENCH_RUN_LABEL, containersLabelled, removeContainers, removePlaneNetworks } from './bench-containers';
import { BENCH_PRINCIPAL, benchWorkerEnv, type BenchContext, type Figure } from './bench-context';
import { ratioOf, type FigureRow } from './bench-report';
import { fullMotoPool } from './full-moto-pool';
import { percentilesOf, rounded } from './measure';
import { rawMotoRun } from './raw-moto-run';

/** moto's cap, as the adapter sets it: the raw runs get the same `--memory`. */
const MOTO_LIMIT_BYTES = 512 * 1024 * 1024;
const MAX_P99_RATIO = 1.5;
const MIB = 1024 * 1024;
/** The raw burst's network: room for 254 containers. */
const RAW_SUBNET = '10.213.0.0/24';

/** p50, p95 and p99 of a burst's samples (bench/measure.ts); nulls when none came. */
function tailOf(values: readonly number[]): { p50: number | null; p95: number | null; p99: number | null } {
  return percentilesOf(values) ?? { p50: null, p95: null, p99: null };
}

interface Burst {
  readonly ms: number[];
  readonly failures: string[];
}

/**
 * `burst` raw `docker run --memory 512m` + health polls of the moto image at once, on a
 * network of the bench's own (the default bridge of a small engine may not hold them all).
 */
async function rawBurst(context: BenchContext, docker: Docker, image: string, burst: number): Promise<Burst> {
  const network = `p6-raw-${context.runId}`;
  const undo = async () => {
    await removeContainers(docker, await containersLabelled(docker, `${BENCH_RUN_LABEL}=${context.runId}`));
    await docker
      .getNetwork(network)
      .remove()
      .catch(() => undefined);
  };
  return context.cleanup.guard('P6 raw burst', undo, async () => {
    // A /24 of its own: an engine's default pools may hand out a /28, room for 13 (the first run here started 13 of 50).
    await docker.createNetwork({ Name: network, Labels: { [BENCH_RUN_LABEL]: context.runId }, IPAM: { Driver: 'default', Config: [{ Subnet: RAW_SUBNET }] } });
    const failures: string[] = [];
    const ms: number[] = [];
    await Promise.all(
      Array.from({ length: burst }, async (_, index) => {
        try {
          ms.push((await rawMotoRun(docker, image, context.runId, { memoryBytes: MOTO_LIMIT_BYTES, network })).totalMs);
        } catch (err) {
          failures.push(`raw run ${index}: ${(err as Error).message}`);
        }
      }),
    );
    return { ms, failures };
  });
}

interface PlaneBurst extends Burst {
  /** Mean resident memory of the burst's emulator containers once all were READY (`docker stats`), MiB. */
  readonly residentMiB: number | null;
  readonly peakResidentMiB: number | null;
  readonly admitted: number;
}

/** The memory the engine reports for each of `ids` now (one-shot stats, at once). */
async function residentBytes(docker: Docker, ids: readonly string[]): Promise<number[]> {
  const reads = await Promise.all(
    ids.map(async (id) => {
      try {
        const stats = (await docker.getContainer(id).stats({ stream: false, 'one-shot': true } as { stream: false })) as { memory_stats?: { usage?: number } };
        return stats.memory_stats?.usage ?? NaN;
      } catch {
        return NaN;
      }
    }),
  );
  return reads.filter(Number.isFinite);
}

/** `burst` creates through the SDK at once, each timed create → READY; then their containers' memory; then all destroyed. */
async function planeBurst(context: BenchContext, docker: Docker, image: string, burst: number, variant: 'cold' | 'pool'): Promise<PlaneBurst> {
  const env: Record<string, string> = {
    ...benchWorkerEnv(context, `p6-${variant}`),
    // Admission is measured here: the host's own defaults bind (100 sandboxes, memory by requests).
    SANDBOXPLANE_HOST_CAPACITY: '100',
    SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1',
    SANDBOXPLANE_MOTO_IMAGE: image,
    ...(variant === 'pool' ? { SANDBOXPLANE_WARM_POOL: `moto=${burst}` } : {}),
    // The host's bound on emulator starts at once: its default (two per CPU) unless the bench is run with another.
    ...(process.env.SANDBOXPLANE_EMULATOR_START_CONCURRENCY !== undefined ? { SANDBOXPLANE_EMULATOR_START_CONCURRENCY: process.env.SANDBOXPLANE_EMULATOR_START_CONCURRENCY } : {}),
  };
  const planeId = env.SANDBOXPLANE_PLANE_ID as string;
  let worker: TestWorker | undefined;
  const undo = async () => {
    await worker?.stop();
    await removeContainers(docker, await containersLabelled(docker, `${PLANE_LABEL}=${planeId}`));
    await removePlaneNetworks(docker, planeId);
  };
  return context.cleanup.guard(`P6 ${variant} worker`, undo, async () => {
    worker = await startTestWorker(context.server.address, { env });
    worker.store.policies.add({ principalPattern: `${BENCH_PRINCIPAL}*`, capability: 'cloud.sandbox', effect: 'allow' });
    const started = worker;
    if (variant === 'pool') {
      context.progress(`P6 pool: filling a warm pool of ${burst} (untimed)`);
      await fullMotoPool(started, 600_000);
    }
    const id = (index: number) => `p6-${variant}-${context.runId}-${index}`;
    const failures: string[] = [];
    const ms: number[] = [];
    context.progress(`P6 ${variant}: ${burst} moto creates at once`);
    await Promise.all(
      Array.from({ length: burst }, async (_, index) => {
        const begun = performance.now();
        try {
          await started.sandboxes.create({ id: id(index), principal: BENCH_PRINCIPAL, adapter: 'moto', services: ['s3'], ttlSeconds: 900 }, { wait: 'ready' });
          ms.push(performance.now() - begun);
        } catch (err) {
          failures.push(`create ${id(index)}: ${(err as Error).message}`);
        }
      }),
    );
    const [host] = started.store.hosts.list();
    const admitted = host?.liveSandboxes ?? 0;
    const claimed: string[] = [];
    for (let index = 0; index < burst; index += 1) claimed.push(...(await containersLabelled(docker, `${SANDBOX_ID_LABEL}=${id(index)}`)));
    const resident = await residentBytes(docker, claimed);
    context.progress(`P6 ${variant}: destroying ${burst}`);
    await Promise.all(
      Array.from({ length: burst }, async (_, index) => {
        await started.sandboxes.destroy(id(index)).catch((err: unknown) => failures.push(`destroy ${id(index)}: ${(err as Error).message}`));
      }),
    );
    return {
      ms,
      failures,
      admitted,
      residentMiB: resident.length === 0 ? null : rounded(resident.reduce((a, b) => a + b, 0) / resident.length / MIB),
      peakResidentMiB: resident.length === 0 ? null : rounded(Math.max(...resident) / MIB),
    };
  });
}

function burstRow(key: 'cold' | 'pool', burst: number, plane: PlaneBurst, raw: Burst): FigureRow {
  const planeTail = tailOf(plane.ms);
  const rawTail = tailOf(raw.ms);
  const ratio = ratioOf(planeTail.p99, rawTail.p99);
  const failures = plane.failures.length;
  return {
    key: `P6.${key}`,
    measured: {
      label: `${burst} moto creates at once → READY, p99${key === 'pool' ? ', from a warm pool' : ', cold'}`,
      value: planeTail.p99,
      unit: 'ms',
      percentiles: percentilesOf(plane.ms),
    },
    baseline: { label: `${burst} raw docker run --memory 512m + health at once, p99`, value: rawTail.p99, unit: 'ms', percentiles: percentilesOf(raw.ms) },
    ratio,
    target: { text: `p99 <= ${MAX_P99_RATIO}x raw p99, 0 failures`, reached: ratio === null ? null : ratio <= MAX_P99_RATIO && failures === 0 },
    detail: `p50/p95/p99 ${planeTail.p50}/${planeTail.p95}/${planeTail.p99} ms vs raw ${rawTail.p50}/${rawTail.p95}/${rawTail.p99} ms; ${plane.ms.length} of ${burst} READY, ${failures} failures`,
  };
}

/**
 * P6: a burst of moto creates through the SDK — cold, and from a warm pool as large as
 * the burst — against as many raw `docker run --memory 512m` + health polls of the same
 * image started at once: p50/p95/p99 of create → READY, and how many the host admitted.
 */
export const p6Burst: Figure = {
  id: 'P6',
  title: 'a burst of moto creates vs as many raw docker runs at once',
  needs: ['docker', 'moto'],
  async run(context) {
    const { dockerHost, motoImage } = context.docker;
    if (dockerHost === undefined || motoImage === undefined) throw new Error('P6 runs only with an engine and the moto image');
    const docker = dockerClient(dockerHost);
    const burst = context.options.burst;
    context.progress(`P6: ${burst} raw docker runs + health at once`);
    const raw = await rawBurst(context, docker, motoImage, burst);
    const cold = await planeBurst(context, docker, motoImage, burst, 'cold');
    const pool = await planeBurst(context, docker, motoImage, burst, 'pool');
    const admitted = Math.min(cold.admitted, pool.admitted);
    const rows: FigureRow[] = [
      burstRow('cold', burst, cold, raw),
      burstRow('pool', burst, pool, raw),
      {
        key: 'P6.admitted',
        measured: { label: `sandboxes the host admitted of a burst of ${burst} (fewest of cold and pool)`, value: admitted, unit: 'count' },
        baseline: { label: 'raw runs of the same image and --memory that started', value: raw.ms.length, unit: 'count' },
        ratio: ratioOf(admitted, raw.ms.length),
        target: { text: '>= the raw run', reached: admitted >= raw.ms.length },
        detail: `moto requests ${MOTO_MEMORY_REQUEST_BYTES / MIB} MiB, capped at ${MOTO_LIMIT_BYTES / MIB} MiB; resident once READY: mean ${cold.residentMiB} MiB, max ${cold.peakResidentMiB} MiB (docker stats of the cold burst's containers)`,
      },
    ];
    const failures = [...raw.failures, ...cold.failures, ...pool.failures];
    return {
      rows,
      profile: {
        burst,
        rawMs: tailOf(raw.ms),
        cold: { ...tailOf(cold.ms), admitted: cold.admitted, residentMiB: cold.residentMiB, peakResidentMiB: cold.peakResidentMiB },
        pool: { ...tailOf(pool.ms), admitted: pool.admitted, residentMiB: pool.residentMiB, peakResidentMiB: pool.peakResidentMiB },
      },
      lifecycleFailures: cold.failures.length + pool.failures.length,
      failures,
    };
  },
};
