import { performance } from 'node:perf_hooks';
import { CreateBucketCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { PLANE_LABEL } from '../src/domain/docker-labels';
import type { ClientConfig } from '../src/domain/client-config';
import { DockerContainerBroker } from '../src/docker';
import { dockerClient } from '../test/harness/container-events';
import { startTestWorker, type TestWorker } from '../test/harness/test-worker';
import { containersLabelled, removeContainers, removePlaneNetworks } from './bench-containers';
import { BENCH_PRINCIPAL, benchWorkerEnv, type Figure } from './bench-context';
import { latency, ratioOf } from './bench-report';
import { median, rounded } from './measure';

/** Issue 27's goal: restoring a snapshot of 500 objects takes at most 3× making them. */
const TARGET_RATIO = 3;
const OBJECTS = 500;
const ROUNDS = 3;

/** Every key of the bucket, through the sandbox's own key: how a restore is checked to have brought all of them back. */
async function countObjects(s3: S3Client, bucket: string): Promise<number> {
  let count = 0;
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, ...(token !== undefined ? { ContinuationToken: token } : {}) }));
    count += page.KeyCount ?? 0;
    token = page.NextContinuationToken;
  } while (token !== undefined);
  return count;
}

function s3Of(config: ClientConfig): S3Client {
  return new S3Client({ ...config, maxAttempts: 1 });
}

interface Round {
  readonly makeMs: number;
  readonly snapshotMs: number;
  readonly restoreMs: number;
  readonly bytes: number;
}

/**
 * S1: a moto sandbox makes a bucket and 500 small objects through the AWS SDK (one at a
 * time, as an agent's loop would), a snapshot is taken, the bucket is emptied, and the
 * snapshot restored (`restore`, through the SDK: the update, the store's read, the reset
 * and the replay) — measured against the making, medians of three rounds; every round
 * checks that all 500 objects came back.
 */
export const s1SnapshotRestore: Figure = {
  id: 'S1',
  title: 'snapshot restore of 500 S3 objects vs making them',
  needs: ['docker', 'moto'],
  async run(context) {
    const { dockerHost, motoImage } = context.docker;
    if (dockerHost === undefined || motoImage === undefined) throw new Error('S1 runs only with an engine and the moto image');
    const docker = dockerClient(dockerHost);
    const env: Record<string, string> = { ...benchWorkerEnv(context, 'snapshots'), SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1', SANDBOXPLANE_MOTO_IMAGE: motoImage };
    const planeId = env.SANDBOXPLANE_PLANE_ID as string;
    let worker: TestWorker | undefined;
    const undo = async () => {
      await worker?.stop();
      await removeContainers(docker, await containersLabelled(docker, `${PLANE_LABEL}=${planeId}`));
      await removePlaneNetworks(docker, planeId);
    };
    return context.cleanup.guard('S1 worker', undo, async () => {
      worker = await startTestWorker(context.server.address, { env, broker: new DockerContainerBroker({ dockerHost }) });
      worker.store.policies.add({ principalPattern: `${BENCH_PRINCIPAL}*`, capability: 'cloud.sandbox', effect: 'allow' });
      const rounds: Round[] = [];
      const failures: string[] = [];
      for (let round = 0; round < ROUNDS; round += 1) {
        const id = `s1-${context.runId}-${round}`;
        context.progress(`S1: round ${round + 1} of ${ROUNDS}: ${OBJECTS} objects, a snapshot, a restore`);
        const sandbox = await worker.sandboxes.create({ id, principal: BENCH_PRINCIPAL, adapter: 'moto', services: ['s3'], ttlSeconds: 900 }, { wait: 'ready' });
        const s3 = s3Of(sandbox.clientConfig as ClientConfig);
        const bucket = 'bench-objects';
        const madeAt = performance.now();
        await s3.send(new CreateBucketCommand({ Bucket: bucket }));
        for (let object = 0; object < OBJECTS; object += 1) {
          await s3.send(new PutObjectCommand({ Bucket: bucket, Key: `objects/${object}.txt`, Body: `object ${object} of round ${round}\n` }));
        }
        const makeMs = performance.now() - madeAt;
        const snapshotAt = performance.now();
        const snapshot = await worker.sandboxes.snapshot(id);
        const snapshotMs = performance.now() - snapshotAt;
        const restoreAt = performance.now();
        const restored = await worker.sandboxes.restore(id, snapshot.snapshotId);
        const restoreMs = performance.now() - restoreAt;
        const back = await countObjects(s3Of(restored.clientConfig as ClientConfig), bucket);
        if (back !== OBJECTS) failures.push(`round ${round}: ${back} of ${OBJECTS} objects after the restore`);
        rounds.push({ makeMs, snapshotMs, restoreMs, bytes: snapshot.bytes });
        s3.destroy();
        await worker.sandboxes.destroy(id);
      }
      const make = rounded(median(rounds.map((r) => r.makeMs)));
      const restore = rounded(median(rounds.map((r) => r.restoreMs)));
      const ratio = ratioOf(restore, make);
      return {
        rows: [
          {
            key: 'S1',
            measured: {
              ...latency(
                `restore of a snapshot holding ${OBJECTS} objects`,
                rounds.map((r) => r.restoreMs),
              ),
              value: restore,
            },
            baseline: {
              ...latency(
                `making the bucket and ${OBJECTS} objects (AWS SDK, one at a time)`,
                rounds.map((r) => r.makeMs),
              ),
              value: make,
            },
            ratio,
            target: { text: `<= ${TARGET_RATIO}x`, reached: ratio === null ? null : ratio <= TARGET_RATIO },
            detail: `${ROUNDS} rounds, medians; each restore checked to bring all ${OBJECTS} objects back`,
          },
        ],
        profile: {
          snapshotMs: rounded(median(rounds.map((r) => r.snapshotMs))),
          snapshotBytes: rounds.map((r) => r.bytes),
          rounds: rounds.map((r) => ({ makeMs: rounded(r.makeMs), snapshotMs: rounded(r.snapshotMs), restoreMs: rounded(r.restoreMs) })),
        },
        lifecycleFailures: failures.length,
        failures,
      };
    });
  },
};
