import os from 'node:os';
import type { Client } from '@temporalio/client';
import { connectTemporal } from '../client/temporal-connection';
import { bundleWorkflowCode, NativeConnection, Worker, type WorkflowBundle } from '@temporalio/worker';
import { createActivities } from '../activities';
import type { AdapterRegistry } from '../adapters/cloud-emulator-adapter';
import { DockerContainerBroker, type ContainerBroker } from '../docker';
import type { Config } from '../config/config';
import type { Logger } from '../logging/logger';
import type { Store } from '../store';
import { buildAdapterRegistry } from './adapter-registry';
import { resolvePlaneId } from './plane-identity';
import { installRuntimeLogger, temporalLoggerFor } from './runtime-logger';

export interface PlaneWorkerOptions {
  readonly config: Config;
  readonly store: Store;
  readonly logger: Logger;
  /** A pre-built bundle (tests build one and share it); otherwise bundled from src/workflows. */
  readonly workflowBundle?: WorkflowBundle;
  readonly identity?: string;
  /** The emulator adapters this worker runs, given its plane id; by default those the configuration enables. */
  readonly adapters?: (planeId: string) => AdapterRegistry;
  /** The Docker broker; by default one for DOCKER_HOST (it does not connect until used). */
  readonly broker?: ContainerBroker;
}

export interface PlaneWorker {
  readonly worker: Worker;
  readonly identity: string;
  /** The value of `io.sandboxplane.plane` on this worker's containers (SANDBOXPLANE_PLANE_ID or derived). */
  readonly planeId: string;
  /** A Temporal client on the worker's namespace (schedules, queries). */
  readonly client: Client;
  /** Closes the worker's connections; call after `worker.run()` has resolved. */
  close(): Promise<void>;
}

export function workflowsPath(): string {
  return require.resolve('../workflows');
}

/** Connects to Temporal and builds the worker for our task queue, with every activity wired. */
export async function createPlaneWorker(options: PlaneWorkerOptions): Promise<PlaneWorker> {
  const { config, store, logger } = options;
  installRuntimeLogger(logger);
  const identity = options.identity ?? `sandboxplane-worker@${os.hostname()}:${process.pid}`;
  const broker = options.broker ?? new DockerContainerBroker({ dockerHost: config.dockerHost, logger });
  // Bundled here rather than by Worker.create so webpack's report stays at debug level.
  const workflowBundle =
    options.workflowBundle ??
    (await bundleWorkflowCode({
      workflowsPath: workflowsPath(),
      logger: temporalLoggerFor(logger.child({ sdkComponent: 'bundler' }, { level: 'warn' })),
    }));
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  const { client, connection: clientConnection } = await connectTemporal({ address: config.temporalAddress, namespace: config.temporalNamespace }).catch(
    async (err: unknown) => {
      await connection.close();
      throw err;
    },
  );
  try {
    const planeId = await resolvePlaneId(config, clientConnection.workflowService);
    const worker = await Worker.create({
      connection,
      namespace: config.temporalNamespace,
      taskQueue: config.taskQueue,
      identity,
      activities: createActivities({
        store,
        workerIdentity: identity,
        adapters: options.adapters?.(planeId) ?? buildAdapterRegistry(config.emulators, broker, planeId),
        broker,
        flags: config.flags,
        lifecycle: config.lifecycle,
        client,
        plane: planeId,
      }),
      workflowBundle,
      shutdownGraceTime: '10 seconds',
    });
    logger.info({ taskQueue: config.taskQueue, namespace: config.temporalNamespace, identity, planeId }, 'worker ready');
    const close = async () => {
      await clientConnection.close();
      await connection.close();
    };
    return { worker, identity, planeId, client, close };
  } catch (err) {
    await clientConnection.close();
    await connection.close();
    throw err;
  }
}
