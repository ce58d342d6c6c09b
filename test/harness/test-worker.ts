import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { AdapterRegistry } from '../../src/adapters/cloud-emulator-adapter';
import { MemoryAdapter } from '../../src/adapters/memory-adapter';
import { SandboxClient } from '../../src/client/sandbox-client';
import { dataConverterFor } from '../../src/client/temporal-connection';
import type { DataConverter } from '@temporalio/common';
import type { WorkflowBundle } from '@temporalio/worker';
import { payloadCodecFor } from '../../src/codec/codec-settings';
import { loadCodecSettings, loadConfig, type Config } from '../../src/config/config';
import { DockerContainerBroker, type ContainerBroker } from '../../src/docker';
import { createLogger, type Logger } from '../../src/logging/logger';
import { Store } from '../../src/store';
import { buildAdapterRegistry } from '../../src/worker/adapter-registry';
import { createPlaneWorker, type PlaneWorker } from '../../src/worker/plane-worker';
import { planeDeployment } from './cli';
import { testWorkflowBundle } from './workflow-bundle';

export interface TestWorker {
  readonly config: Config;
  /** The environment a CLI child needs to reach this worker and its store. */
  readonly env: Record<string, string>;
  readonly store: Store;
  readonly memory: MemoryAdapter;
  readonly sandboxes: SandboxClient;
  readonly client: Client;
  readonly plane: PlaneWorker;
  stop(): Promise<void>;
}

export interface TestWorkerOptions {
  /** Extra environment for the worker's config (flags, lifecycle durations). */
  readonly env?: Record<string, string>;
  /** The adapters to run; by default those the configuration enables, with this worker's memory adapter. */
  readonly adapters?: (memory: MemoryAdapter, broker: ContainerBroker, planeId: string) => AdapterRegistry;
  readonly broker?: ContainerBroker;
  readonly logger?: Logger;
  /** How often warm pools look at their idle containers (the product's default is 10 s). */
  readonly warmPoolCheckMs?: number;
  /** Workflow code of the test's own (an earlier build's); this build's by default. */
  readonly workflowBundle?: WorkflowBundle;
  /** 0: every workflow task replays the history first (no cache). */
  readonly maxCachedWorkflows?: number;
}

/**
 * The data converter of every test client: the payload codec with the keys the test
 * workers read (the checkout's `.data/codec-keys`, made on first use).
 */
export function testDataConverter(): DataConverter {
  return dataConverterFor(payloadCodecFor(loadCodecSettings({})));
}

/** Flags a lifecycle test usually wants: local capabilities and the memory adapter on. */
export const LOCAL_FLAGS = {
  SANDBOXPLANE_FLAG_CLOUD_SANDBOX: '1',
  SANDBOXPLANE_FLAG_IAC_LOCAL: '1',
  SANDBOXPLANE_FLAG_ADAPTER_MEMORY: '1',
} as const;

/**
 * A real worker on its own task queue and store, running in this process until
 * `stop()`, plus an SDK client for it. Each call gets a fresh queue and database, so
 * test files never see each other's sandboxes.
 */
export async function startTestWorker(address: string, options: TestWorkerOptions = {}): Promise<TestWorker> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-worker-'));
  const taskQueue = options.env?.SANDBOXPLANE_TASK_QUEUE ?? `test-${randomUUID()}`;
  const env: Record<string, string> = {
    TEMPORAL_ADDRESS: address,
    SANDBOXPLANE_TASK_QUEUE: taskQueue,
    ...planeDeployment({ SANDBOXPLANE_TASK_QUEUE: taskQueue }),
    SANDBOXPLANE_DB: path.join(dir, 'plane.sqlite'),
    ...LOCAL_FLAGS,
    ...(process.env.DOCKER_HOST !== undefined ? { DOCKER_HOST: process.env.DOCKER_HOST } : {}),
    ...options.env,
  };
  const config = loadConfig(env);
  const store = Store.open(config.storePath);
  const memory = new MemoryAdapter();
  const logger = options.logger ?? createLogger('error');
  const broker = options.broker ?? new DockerContainerBroker({ dockerHost: config.dockerHost, logger });
  const plane = await createPlaneWorker({
    config,
    store,
    logger,
    workflowBundle: options.workflowBundle ?? (await testWorkflowBundle()),
    ...(options.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: options.maxCachedWorkflows } : {}),
    adapters: (planeId) => options.adapters?.(memory, broker, planeId) ?? { ...buildAdapterRegistry(config.emulators, broker, planeId), memory },
    broker,
    ...(options.warmPoolCheckMs !== undefined ? { warmPoolTiming: { checkIntervalMs: options.warmPoolCheckMs } } : {}),
  });
  const running = plane.worker.run();
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, namespace: config.temporalNamespace, dataConverter: dataConverterFor(payloadCodecFor(config.codec)) });
  const sandboxes = new SandboxClient({ client, taskQueue: config.taskQueue });
  return {
    config,
    env,
    store,
    memory,
    sandboxes,
    client,
    plane,
    stop: async () => {
      plane.worker.shutdown();
      await running;
      await plane.close();
      await connection.close();
      store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
