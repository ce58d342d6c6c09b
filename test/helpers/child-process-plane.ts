import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { Client, Connection } from '@temporalio/client';
import { SandboxClient } from '../../src/client/sandbox-client';
import { CLEANUP_SCHEDULE_ID } from '../../src/domain/contract-names';
import { SANDBOX_ID_LABEL } from '../../src/domain/docker-labels';
import type { SandboxStatus } from '../../src/domain/lifecycle-messages';
import type { SandboxState } from '../../src/domain/sandbox-states';
import { DockerContainerBroker, type ContainerSummary } from '../../src/docker';
import { authenticatorFor, type TestAuthenticator } from './approvers';
import { eventually } from '../harness/eventually';
import { testTemporalAddress } from '../harness/test-temporal';
import { testDataConverter } from '../harness/test-worker';
import { createTestNamespace } from './test-namespace';
import { runSandboxctl, startWorkerProcess, type WorkerProcess } from '../harness/worker-process';

export interface ChildProcessPlaneOptions {
  /**
   * Where the plane runs: a namespace of its own, named after `namespace`, on the test
   * runner's dev server; or, with `address`, that server's `namespace` as it is (a test
   * that stops and starts its own server).
   */
  readonly namespace: string;
  readonly address?: string;
  /** The engine the worker (and this helper's container checks) use; the runner's by default. */
  readonly dockerHost?: string;
  /** Extra worker environment: lifecycle durations, flags. */
  readonly env?: Record<string, string>;
  /**
   * `sandboxctl` commands (policy rows, approvers) run once the first worker is up,
   * e.g. `['policy', 'add', '--principal', 'agent-*', …]`.
   */
  readonly seed: readonly (readonly string[])[];
}

/**
 * A plane whose worker is `sandboxctl worker` in a child process, on a task queue and
 * SQLite file of its own, with the moto adapter on the given engine: what a fault test
 * kills and starts again. Sandbox ids get a per-plane prefix (`id('ready')`), so the
 * engine's containers of this plane are found by their sandbox-id label alone.
 */
export class ChildProcessPlane {
  readonly env: Record<string, string>;
  readonly broker: DockerContainerBroker;
  readonly sandboxes: SandboxClient;
  private readonly dir: string;
  private readonly tag = randomBytes(3).toString('hex');
  private readonly ids = new Set<string>();
  private readonly workers: WorkerProcess[] = [];
  private seed: readonly (readonly string[])[];
  private readonly authenticators = new Map<string, TestAuthenticator>();

  private constructor(
    private readonly connection: Connection,
    readonly client: Client,
    options: ChildProcessPlaneOptions & { readonly address: string },
    readonly dockerHost: string | undefined,
  ) {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-fault-'));
    const motoImage = process.env.SANDBOXPLANE_MOTO_IMAGE;
    assert.ok(motoImage, 'the test runner exports SANDBOXPLANE_MOTO_IMAGE');
    this.env = {
      TEMPORAL_ADDRESS: options.address,
      TEMPORAL_NAMESPACE: options.namespace,
      SANDBOXPLANE_TASK_QUEUE: `fault-${randomUUID()}`,
      SANDBOXPLANE_DB: path.join(this.dir, 'plane.sqlite'),
      SANDBOXPLANE_FLAG_CLOUD_SANDBOX: '1',
      SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1',
      SANDBOXPLANE_MOTO_IMAGE: motoImage,
      // The schedule's sweeps would race the test's own; the test runs the sweeps it means.
      SANDBOXPLANE_SWEEP_INTERVAL: '1d',
      ...(dockerHost === undefined ? {} : { DOCKER_HOST: dockerHost }),
      ...options.env,
    };
    this.broker = new DockerContainerBroker({ dockerHost });
    this.sandboxes = new SandboxClient({ client, taskQueue: this.env.SANDBOXPLANE_TASK_QUEUE as string });
    this.seed = options.seed;
  }

  /** Connects a client of its own (closed by {@link dispose}); no worker runs until {@link startWorker}. */
  static async start(options: ChildProcessPlaneOptions): Promise<ChildProcessPlane> {
    const address = options.address ?? (await testTemporalAddress());
    const namespace = options.address === undefined ? await createTestNamespace(address, options.namespace) : options.namespace;
    const connection = await Connection.connect({ address });
    const client = new Client({ connection, namespace, dataConverter: testDataConverter() });
    return new ChildProcessPlane(connection, client, { ...options, address, namespace }, options.dockerHost ?? process.env.DOCKER_HOST);
  }

  get taskQueue(): string {
    return this.env.SANDBOXPLANE_TASK_QUEUE as string;
  }

  /** A sandbox id unique to this plane; remembered for the clean-up. */
  id(name: string): string {
    const id = `${this.tag}-${name}`;
    this.ids.add(id);
    return id;
  }

  /** Starts one more `sandboxctl worker` for this plane (with `env` over the plane's) and waits until it is ready; the first also runs the seed commands. */
  async startWorker(env: Readonly<Record<string, string>> = {}): Promise<WorkerProcess> {
    const worker = await startWorkerProcess({ ...this.env, ...env });
    this.workers.push(worker);
    for (const args of this.seed) {
      const enrols = args[0] === 'approvers' && args[1] === 'add';
      const result = await runSandboxctl(enrols ? [...args, '--json'] : args, this.env);
      assert.equal(result.code, 0, `sandboxctl ${args.join(' ')}: ${result.stderr}`);
      if (enrols) {
        const { name, otpauthUri } = JSON.parse(result.stdout) as { name: string; otpauthUri: string };
        this.authenticators.set(name, authenticatorFor(name, otpauthUri));
      }
    }
    this.seed = [];
    return worker;
  }

  /** The authenticator of an approver the seed enrolled (`approvers add NAME`). */
  authenticator(name: string): TestAuthenticator {
    const found = this.authenticators.get(name);
    if (found === undefined) throw new Error(`the seed enrolled no approver ${name}`);
    return found;
  }

  /** The sandbox's containers on this plane's engine, stopped ones included. */
  containers(id: string): Promise<ContainerSummary[]> {
    return this.broker.list({ [SANDBOX_ID_LABEL]: id });
  }

  /** The projection row's state, read without the worker (read-only; the worker stays the writer). */
  projectionState(id: string): SandboxState | undefined {
    const db = new Database(this.env.SANDBOXPLANE_DB as string, { readonly: true, fileMustExist: true });
    try {
      db.pragma('busy_timeout = 5000');
      const row = db.prepare('SELECT state FROM sandboxes WHERE id = ?').get(id) as { state: SandboxState } | undefined;
      return row?.state;
    } finally {
      db.close();
    }
  }

  /** The search attribute SandboxState: what the server holds, answered with no worker running. */
  async searchState(id: string): Promise<string | undefined> {
    const description = await this.client.workflow.getHandle(`sandbox-${id}`).describe();
    const value = description.searchAttributes.SandboxState?.[0];
    return typeof value === 'string' ? value : undefined;
  }

  /** Polls the `status` query (a worker must be running) until `done` holds. */
  async waitForStatus(id: string, what: string, done: (status: SandboxStatus) => boolean, timeoutMs = 90_000): Promise<SandboxStatus> {
    let last: SandboxStatus | undefined;
    return eventually(
      `sandbox ${id} to be ${what}`,
      async () => {
        last = await this.sandboxes.status(id).catch(() => last);
        return last !== undefined && done(last) ? last : undefined;
      },
      timeoutMs,
      () => `${last?.state} (${last?.waitingFor})`,
    );
  }

  waitForState(id: string, state: SandboxState, timeoutMs?: number): Promise<SandboxStatus> {
    return this.waitForStatus(id, state, (status) => status.state === state, timeoutMs);
  }

  /** Polls the projection until its row agrees with `state` (activities may still be recording it). */
  async waitForProjection(id: string, state: SandboxState, timeoutMs = 30_000): Promise<void> {
    await eventually(
      `the projection row of ${id} to say ${state}`,
      () => (this.projectionState(id) === state ? true : undefined),
      timeoutMs,
      () => String(this.projectionState(id)),
    );
  }

  /** Whatever a failed test left: running lifecycles terminated, workers stopped, containers removed, files deleted. */
  async dispose(): Promise<void> {
    try {
      for (const worker of this.workers) await worker.kill();
      for (const id of this.ids) {
        await this.client.workflow
          .getHandle(`sandbox-${id}`)
          .terminate('fault test clean-up')
          .catch(() => undefined);
        for (const container of await this.containers(id).catch(() => [])) await this.broker.remove(container.id, { force: true }).catch(() => undefined);
      }
      await this.client.schedule
        .getHandle(CLEANUP_SCHEDULE_ID)
        .delete()
        .catch(() => undefined);
    } finally {
      fs.rmSync(this.dir, { recursive: true, force: true });
      await this.connection.close();
    }
  }
}
