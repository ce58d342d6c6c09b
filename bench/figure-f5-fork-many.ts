import { performance } from 'node:perf_hooks';
import { CreateBucketCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { FamilyOutcome } from '../src/client/sandbox-family';
import { PLANE_LABEL } from '../src/domain/docker-labels';
import type { ClientConfig } from '../src/domain/client-config';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import { DockerContainerBroker } from '../src/docker';
import { fullMotoPool } from './full-moto-pool';
import { dockerClient } from '../test/harness/container-events';
import { startTestWorker, type TestWorker } from '../test/harness/test-worker';
import { containersLabelled, removeContainers, removePlaneNetworks } from './bench-containers';
import { BENCH_PRINCIPAL, benchWorkerEnv, type BenchContext, type Figure } from './bench-context';
import { latency, ratioOf, type FigureRow } from './bench-report';
import { median, rounded } from './measure';

/** Issue 41's goal: forking 5 from one snapshot takes at most 2× one fork. */
const TARGET_RATIO = 2;
const FORKS = 5;
const OBJECTS = 100;
const ROUNDS = 3;

async function objectsIn(config: ClientConfig, bucket: string): Promise<number> {
  const s3 = new S3Client({ ...config, maxAttempts: 1 });
  try {
    return (await s3.send(new ListObjectsV2Command({ Bucket: bucket }))).KeyCount ?? 0;
  } finally {
    s3.destroy();
  }
}

interface ForkVariant {
  readonly key: 'pool' | 'cold';
  readonly workerEnv: Readonly<Record<string, string>>;
  readonly detail: string;
}

/** From a warm pool of five moto containers (DESIGN §13), each timed step starting from a full pool: the refill is not timed. */
const POOL: ForkVariant = { key: 'pool', workerEnv: { SANDBOXPLANE_WARM_POOL: `moto=${FORKS}` }, detail: `a warm pool of ${FORKS} moto containers, full before each step` };
/** No pool: every fork starts its own moto container, five at once on this machine's cores. */
const COLD: ForkVariant = { key: 'cold', workerEnv: {}, detail: 'no warm pool: each fork starts its own moto container' };

/**
 * F5: a moto sandbox makes a bucket of 100 objects and is snapshotted; then, alternating,
 * one fork and five forks at once (`fork(snapshotId, { count })`, each waited for READY:
 * container, restore, own key), measured from the call to the last READY; medians of
 * three rounds of each, from a warm pool and cold. Every fork is checked to hold all 100
 * objects, then destroyed.
 */
export const f5ForkMany: Figure = {
  id: 'F5',
  title: `${FORKS} forks of one snapshot at once vs one fork`,
  needs: ['docker', 'moto'],
  async run(context) {
    const { dockerHost, motoImage } = context.docker;
    if (dockerHost === undefined || motoImage === undefined) throw new Error('F5 runs only with an engine and the moto image');
    const pool = await measureVariant(context, POOL, dockerHost, motoImage);
    const cold = await measureVariant(context, COLD, dockerHost, motoImage);
    return {
      rows: [pool.row, cold.row],
      profile: { pool: pool.profile, cold: cold.profile },
      lifecycleFailures: pool.failures.length + cold.failures.length,
      failures: [...pool.failures, ...cold.failures],
    };
  },
};

async function measureVariant(context: BenchContext, variant: ForkVariant, dockerHost: string, motoImage: string) {
  const docker = dockerClient(dockerHost);
  const env: Record<string, string> = { ...benchWorkerEnv(context, `forks-${variant.key}`), SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1', SANDBOXPLANE_MOTO_IMAGE: motoImage, ...variant.workerEnv };
  const planeId = env.SANDBOXPLANE_PLANE_ID as string;
  let worker: TestWorker | undefined;
  const undo = async () => {
    await worker?.stop();
    await removeContainers(docker, await containersLabelled(docker, `${PLANE_LABEL}=${planeId}`));
    await removePlaneNetworks(docker, planeId);
  };
  return context.cleanup.guard(`F5 ${variant.key} worker`, undo, async () => {
    const plane = await startTestWorker(context.server.address, { env, broker: new DockerContainerBroker({ dockerHost }) });
    worker = plane;
    plane.store.policies.add({ principalPattern: `${BENCH_PRINCIPAL}*`, capability: 'cloud.sandbox', effect: 'allow' });
    const settle = async () => {
      if (variant.key === 'pool') await fullMotoPool(plane);
    };
    const sourceId = `f5-${variant.key}-${context.runId}`;
    const source = await plane.sandboxes.create({ id: sourceId, principal: BENCH_PRINCIPAL, adapter: 'moto', services: ['s3'], ttlSeconds: 1800 }, { wait: 'ready' });
    const s3 = new S3Client({ ...(source.clientConfig as ClientConfig), maxAttempts: 1 });
    await s3.send(new CreateBucketCommand({ Bucket: 'bench-forks' }));
    for (let object = 0; object < OBJECTS; object += 1) await s3.send(new PutObjectCommand({ Bucket: 'bench-forks', Key: `objects/${object}.txt`, Body: `object ${object}\n` }));
    s3.destroy();
    const { snapshotId } = await plane.sandboxes.snapshot(sourceId);

    const failures: string[] = [];
    /** Forks `count`, timed to the last READY; then checks and destroys them. */
    const forkTimed = async (count: number): Promise<number> => {
      await settle();
      const at = performance.now();
      const { sandboxes } = await plane.sandboxes.fork(snapshotId, { principal: BENCH_PRINCIPAL, count, ttlSeconds: 600 }, { wait: 'ready' });
      const ms = performance.now() - at;
      for (const outcome of sandboxes as FamilyOutcome[]) {
        if (!('state' in outcome) || outcome.state !== 'READY') {
          failures.push(`${variant.key} ${outcome.id}: ${JSON.stringify('error' in outcome ? outcome.error : outcome)}`);
          continue;
        }
        const held = await objectsIn((outcome as SandboxStatus).clientConfig as ClientConfig, 'bench-forks');
        if (held !== OBJECTS) failures.push(`${variant.key} ${outcome.id} holds ${held} of ${OBJECTS} objects`);
      }
      await Promise.all(sandboxes.map((outcome) => plane.sandboxes.destroy(outcome.id).catch(() => undefined)));
      return ms;
    };
    const one: number[] = [];
    const many: number[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      context.progress(`F5 ${variant.key}: round ${round + 1} of ${ROUNDS}: one fork, then ${FORKS} at once`);
      one.push(await forkTimed(1));
      many.push(await forkTimed(FORKS));
    }
    await plane.sandboxes.destroy(sourceId);
    const single = rounded(median(one));
    const five = rounded(median(many));
    const ratio = ratioOf(five, single);
    const row: FigureRow = {
      key: variant.key === 'pool' ? 'F5' : 'F5 cold',
      measured: { ...latency(`${FORKS} forks of one snapshot at once, to the last READY`, many), value: five },
      baseline: { ...latency('one fork of the same snapshot, to READY', one), value: single },
      ratio,
      target: { text: `<= ${TARGET_RATIO}x`, reached: ratio === null ? null : ratio <= TARGET_RATIO },
      detail: `${ROUNDS} rounds each, alternating, medians; a snapshot of ${OBJECTS} objects; ${variant.detail}; every fork checked to hold them all`,
    };
    return { row, profile: { oneForkMs: one.map(rounded), fiveForksMs: many.map(rounded) }, failures };
  });
}
