import { DockerContainerBroker } from '../src/docker';
import { PLANE_LABEL } from '../src/domain/docker-labels';
import { createLogger } from '../src/logging/logger';
import { dockerClient } from '../test/harness/container-events';
import { startTestWorker, type TestWorker } from '../test/harness/test-worker';
import { containersLabelled, removeContainers, removePlaneNetworks } from './bench-containers';
import { BENCH_PRINCIPAL, benchWorkerEnv, type BenchContext } from './bench-context';

export interface BenchWorkerOptions {
  /** Runs the moto adapter on the run's engine and image (both must be there). */
  readonly moto: boolean;
  /** Before the worker stops, also when interrupted: e.g. destroying the sandboxes still live. */
  readonly beforeStop?: (worker: TestWorker) => Promise<unknown>;
}

/**
 * A worker inside the bench process (as P2's) on a plane of its own, `bench-<run>-<purpose>`,
 * with the bench principal allowed, for the duration of `work`. Its containers and their
 * sealed networks are found by the plane's label and removed when it ends or the bench is
 * interrupted.
 */
export async function withBenchWorker<T>(context: BenchContext, purpose: string, options: BenchWorkerOptions, work: (worker: TestWorker) => Promise<T>): Promise<T> {
  const { dockerHost, motoImage } = context.docker;
  if (options.moto && (dockerHost === undefined || motoImage === undefined)) throw new Error(`the ${purpose} worker runs moto only with an engine and the moto image`);
  const env: Record<string, string> = {
    ...benchWorkerEnv(context, purpose),
    ...(options.moto && motoImage !== undefined ? { SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1', SANDBOXPLANE_MOTO_IMAGE: motoImage } : {}),
  };
  const planeId = env.SANDBOXPLANE_PLANE_ID as string;
  const logger = createLogger('error');
  let worker: TestWorker | undefined;
  // Whatever beforeStop or the stop threw, the plane's containers and networks go: they carry no run label.
  const stopAndRemove = async () => {
    try {
      await worker?.stop();
    } finally {
      if (options.moto && dockerHost !== undefined) {
        const docker = dockerClient(dockerHost);
        await removeContainers(docker, await containersLabelled(docker, `${PLANE_LABEL}=${planeId}`));
        await removePlaneNetworks(docker, planeId);
      }
    }
  };
  const undo = async () => {
    try {
      if (worker !== undefined) await options.beforeStop?.(worker);
    } finally {
      await stopAndRemove();
    }
  };
  return context.cleanup.guard(`the ${purpose} worker`, undo, async () => {
    worker = await startTestWorker(context.server.address, { env, logger, ...(options.moto ? { broker: new DockerContainerBroker({ dockerHost, logger }) } : {}) });
    worker.store.policies.add({ principalPattern: `${BENCH_PRINCIPAL}*`, capability: 'cloud.sandbox', effect: 'allow' });
    return work(worker);
  });
}
