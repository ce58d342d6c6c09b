import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { SandboxClient } from '../src/client/sandbox-client';
import { CLEANUP_SCHEDULE_ID } from '../src/domain/contract-names';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, SANDBOX_ID_LABEL } from '../src/domain/docker-labels';
import type { HostView } from '../src/domain/hosts';
import type { SweepReport } from '../src/domain/leaks';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import type { AuditEntry, LeakRecord } from '../src/domain/store-commands';
import { dockerClient } from './harness/container-events';
import { eventually } from './harness/eventually';
import { startPrivateDockerEngine, type PrivateDockerEngine } from './helpers/private-docker-engine';
import { createTestNamespace } from './helpers/test-namespace';
import { testTemporalAddress } from './harness/test-temporal';
import { testDataConverter } from './harness/test-worker';
import { runSandboxctl, startWorkerProcess, type WorkerProcess } from './harness/worker-process';

/** Sandboxes created at once across the two hosts (issue 13's acceptance). */
const BURST = 20;
/** The first lifecycle worker is SIGKILLed once this many of the burst are READY: the rest are still on their way. */
const KILL_AFTER_READY = 5;
/** A docker queue nobody polls for 90 s is not live (src/client/queue-pollers.ts); a long poll adds up to a minute before that. */
const HOST_SILENCE_WAIT_MS = 150_000;
const CREATE_TIMEOUT_MS = 240_000;

/**
 * Issue 13's acceptance: the plane scaled out over processes and engines. One store
 * worker (the only one with the SQLite file), two lifecycle workers and two docker
 * workers — host `a` on the shared engine, host `b` on an engine of this file's own —
 * all `sandboxctl worker` child processes on one task queue. Lifecycle and docker
 * workers get a SQLite path that does not exist (and lifecycle workers an engine that
 * does not exist either), and every `sandboxctl` call the test makes gets that path
 * too: only the store worker ever opens the projection, everyone else goes through
 * Temporal. Each sandbox's host is checked against the engine that really holds its
 * container, found by the sandbox-id label.
 *
 * The tests run in order and share the workers.
 */
describe('scale-out: one store, two lifecycle and two docker workers on two engines', () => {
  const tag = randomBytes(3).toString('hex');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-scale-'));
  /** Never created: a worker or command that opened the projection here would fail, or leave the file behind. */
  const noStore = path.join(dir, 'never', 'plane.sqlite');
  const engineA = process.env.DOCKER_HOST;
  const ids: string[] = [];
  const workers: WorkerProcess[] = [];
  let engineB: PrivateDockerEngine;
  let connection: Connection;
  let client: Client;
  let sandboxes: SandboxClient;
  /** The plane's coordinates, and a SQLite path nobody may open: what every `sandboxctl` call here gets. */
  let callerEnv: Record<string, string>;
  let workerEnv: Record<string, string>;
  let lifecycleWorkers: WorkerProcess[];
  let dockerB: WorkerProcess;

  const engineOf = (hostId: string) => (hostId === 'a' ? engineA : engineB.dockerHost);

  async function startWorker(args: readonly string[], env: Record<string, string> = {}): Promise<WorkerProcess> {
    const worker = await startWorkerProcess({ ...workerEnv, ...env }, { args });
    workers.push(worker);
    return worker;
  }

  const startDockerWorker = (hostId: 'a' | 'b') => startWorker(['--role', 'docker', '--host-id', hostId], { DOCKER_HOST: engineOf(hostId) as string });

  /** `sandboxctl ARGS --json` through Temporal only; its JSON answer. */
  async function sandboxctl<T>(...args: string[]): Promise<T> {
    const result = await runSandboxctl([...args, '--json'], callerEnv, { timeoutMs: 120_000 });
    assert.equal(result.code, 0, `sandboxctl ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
    return JSON.parse(result.stdout) as T;
  }

  async function hosts(): Promise<Record<string, HostView>> {
    const { hosts: listed } = await sandboxctl<{ hosts: HostView[] }>('hosts');
    return Object.fromEntries(listed.map((host) => [host.hostId, host]));
  }

  /** This test's containers on one engine (stopped ones too): sandbox id → container ids. */
  async function containersOn(hostId: string): Promise<Map<string, string[]>> {
    const listed = await dockerClient(engineOf(hostId)).listContainers({ all: true, filters: { label: [`${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`] } });
    const bySandbox = new Map<string, string[]>();
    for (const container of listed) {
      const sandboxId = container.Labels[SANDBOX_ID_LABEL];
      if (sandboxId?.startsWith(`${tag}-`)) bySandbox.set(sandboxId, [...(bySandbox.get(sandboxId) ?? []), container.Id]);
    }
    return bySandbox;
  }

  function newIds(name: string, count: number): string[] {
    const made = Array.from({ length: count }, (_, index) => `${tag}-${name}${index}`);
    ids.push(...made);
    return made;
  }

  const create = (id: string) => sandboxes.create({ id, principal: 'agent-scale', adapter: 'moto', services: ['s3'], ttlSeconds: 1800 }, { wait: 'ready', timeoutMs: CREATE_TIMEOUT_MS });

  /** Each sandbox's host as its status says, checked against the engine that holds its one container. */
  async function assertPlacedWhereTheContainersAre(statuses: readonly SandboxStatus[]): Promise<Record<string, string[]>> {
    const [onA, onB] = await Promise.all([containersOn('a'), containersOn('b')]);
    const byHost: Record<string, string[]> = { a: [], b: [] };
    for (const status of statuses) {
      assert.ok(status.host === 'a' || status.host === 'b', `${status.id} names host ${status.host}`);
      byHost[status.host]?.push(status.id);
      const [here, there] = status.host === 'a' ? [onA, onB] : [onB, onA];
      assert.deepEqual(here.get(status.id), status.runtimeIds, `${status.id}: its container is on the engine of host ${status.host}`);
      assert.equal(status.runtimeIds.length, 1, `${status.id} runs one container`);
      assert.equal(there.get(status.id), undefined, `${status.id}: nothing of it on the other engine`);
    }
    return byHost;
  }

  async function destroyAll(batch: readonly string[]): Promise<void> {
    const ended = await Promise.all(batch.map((id) => sandboxes.destroy(id)));
    assert.deepEqual(
      ended.map((status) => status.state),
      batch.map(() => 'DESTROYED'),
    );
    const [onA, onB] = await Promise.all([containersOn('a'), containersOn('b')]);
    assert.deepEqual([...onA.keys(), ...onB.keys()], [], "no container of this test's sandboxes is left on either engine");
    const emptied = await eventually(
      'both hosts to hold no sandbox',
      async () => {
        const listed = await hosts();
        return listed.a?.liveSandboxes === 0 && listed.b?.liveSandboxes === 0 ? listed : undefined;
      },
      30_000,
    );
    assert.equal(emptied.a?.live && emptied.b?.live, true);
  }

  before(async () => {
    const motoImage = process.env.SANDBOXPLANE_MOTO_IMAGE;
    assert.ok(motoImage, 'the test runner exports SANDBOXPLANE_MOTO_IMAGE');
    assert.ok(engineA, 'the test runner exports DOCKER_HOST');
    engineB = await startPrivateDockerEngine();
    await engineB.copyImageFrom(engineA, motoImage);
    const address = await testTemporalAddress();
    const namespace = await createTestNamespace(address, 'scale-out');
    connection = await Connection.connect({ address });
    client = new Client({ connection, namespace, dataConverter: testDataConverter() });
    const taskQueue = `scale-${randomUUID()}`;
    sandboxes = new SandboxClient({ client, taskQueue });
    callerEnv = { TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: namespace, SANDBOXPLANE_TASK_QUEUE: taskQueue, SANDBOXPLANE_DB: noStore };
    workerEnv = {
      ...callerEnv,
      SANDBOXPLANE_FLAG_CLOUD_SANDBOX: '1',
      SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1',
      SANDBOXPLANE_MOTO_IMAGE: motoImage,
      // The schedule's sweeps would race the test's own; the test runs the sweep it means.
      SANDBOXPLANE_SWEEP_INTERVAL: '1d',
      // Lifecycle and store workers never talk to an engine: give them none that exists.
      DOCKER_HOST: `unix://${path.join(dir, 'no-engine.sock')}`,
    };
    // Lifecycle and store workers first: docker workers register their host through a workflow those serve.
    lifecycleWorkers = await Promise.all([
      startWorker(['--role', 'lifecycle']),
      startWorker(['--role', 'lifecycle']),
      startWorker(['--role', 'store'], { SANDBOXPLANE_DB: path.join(dir, 'store.sqlite') }),
    ]).then(([first, second]) => [first, second]);
    [, dockerB] = await Promise.all([startDockerWorker('a'), startDockerWorker('b')]);
    await sandboxctl('policy', 'add', '--principal', 'agent-*', '--capability', 'cloud.sandbox', '--effect', 'allow');
  });

  after(async () => {
    try {
      for (const worker of workers) await worker.kill();
      for (const id of ids) {
        await client?.workflow
          .getHandle(`sandbox-${id}`)
          .terminate('scale-out test clean-up')
          .catch(() => undefined);
      }
      await client?.schedule
        .getHandle(CLEANUP_SCHEDULE_ID)
        .delete()
        .catch(() => undefined);
      if (engineA !== undefined) {
        const docker = dockerClient(engineA);
        for (const containerIds of (await containersOn('a').catch(() => new Map<string, string[]>())).values()) {
          for (const containerId of containerIds)
            await docker
              .getContainer(containerId)
              .remove({ force: true, v: true })
              .catch(() => undefined);
        }
      }
      await connection?.close();
    } finally {
      await engineB?.dispose();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('both docker hosts register through Temporal and are live', async () => {
    const listed = await eventually(
      'hosts a and b to be listed live',
      async () => {
        const current = await hosts();
        return current.a?.live === true && current.b?.live === true ? current : undefined;
      },
      60_000,
    );
    for (const hostId of ['a', 'b'] as const) {
      const host = listed[hostId] as HostView;
      assert.equal(host.taskQueue, `${callerEnv.SANDBOXPLANE_TASK_QUEUE}-docker-${hostId}`);
      assert.ok(host.adapters.includes('moto'), `${hostId} runs moto: ${host.adapters.join(',')}`);
      assert.equal(host.liveSandboxes, 0);
      assert.ok(host.engineId !== null && host.lastSeenAt !== null, `${hostId}: ${JSON.stringify(host)}`);
    }
    assert.notEqual(listed.a?.engineId, listed.b?.engineId, 'two engines, not one engine under two names');
  });

  test(`${BURST} sandboxes at once land on both hosts, through a lifecycle worker's SIGKILL`, async () => {
    const batch = newIds('burst', BURST);
    let ready = 0;
    let killed: Promise<void> | undefined;
    const outcomes = await Promise.allSettled(
      batch.map(async (id) => {
        const status = await create(id);
        ready += 1;
        if (ready === KILL_AFTER_READY) killed = lifecycleWorkers[0]?.kill();
        return status;
      }),
    );
    await killed;
    assert.ok(killed !== undefined && lifecycleWorkers[0]?.exited, `a lifecycle worker was killed when ${KILL_AFTER_READY} of ${BURST} were READY`);
    const failures = outcomes.flatMap((outcome, index) => (outcome.status === 'rejected' ? [`${batch[index]}: ${String(outcome.reason)}`] : []));
    assert.deepEqual(failures, [], 'every create reached READY');
    const statuses = outcomes.map((outcome) => (outcome as PromiseFulfilledResult<SandboxStatus>).value);
    assert.deepEqual(
      statuses.map((status) => status.state),
      batch.map(() => 'READY'),
    );

    const byHost = await assertPlacedWhereTheContainersAre(statuses);
    assert.ok((byHost.a?.length ?? 0) >= 1 && (byHost.b?.length ?? 0) >= 1, `both hosts got sandboxes: a ${byHost.a?.length}, b ${byHost.b?.length}`);
    const listed = await hosts();
    assert.deepEqual([listed.a?.liveSandboxes, listed.b?.liveSandboxes], [byHost.a?.length, byHost.b?.length], 'hosts --json counts the sandboxes each host holds');

    // One sandbox per host through the CLI: status names the host, the audit trail has the placement.
    for (const hostId of ['a', 'b'] as const) {
      const id = byHost[hostId]?.[0] as string;
      const status = await sandboxctl<SandboxStatus>('status', id);
      assert.equal(status.host, hostId);
      const { operations } = await sandboxctl<{ operations: AuditEntry[] }>('audit', id);
      const placed = operations.filter((operation) => operation.action === 'placed');
      assert.equal(placed.length, 1, `one placement in ${id}'s audit trail`);
      assert.equal(placed[0]?.summary.hostId, hostId);
    }
  });

  test(`destroying all ${BURST} leaves nothing on either engine`, async () => {
    await destroyAll(ids.filter((id) => id.startsWith(`${tag}-burst`)));
  });

  test('a second store worker on the same queue refuses to start (STORE_CONFLICT)', async () => {
    const second = await runSandboxctl(['worker', '--role', 'store'], { ...workerEnv, SANDBOXPLANE_DB: path.join(dir, 'second-store.sqlite') }, { timeoutMs: 60_000 });
    assert.ok(second.code !== null && second.code !== 0, `it exited non-zero (exit ${second.code})`);
    assert.match(second.stdout + second.stderr, /STORE_CONFLICT/);
    assert.equal((await hosts()).a?.live, true, 'the first store worker still answers');
  });

  test('a docker host whose worker dies is passed over, reported by the sweep, and served again on return', async () => {
    // Three at once: the store places one at a time, least loaded first, ties to `a` — two on a, one on b.
    const trio = newIds('trio', 3);
    const placed = await assertPlacedWhereTheContainersAre(await Promise.all(trio.map(create)));
    assert.deepEqual([placed.a?.length, placed.b?.length], [2, 1]);
    const stranded = placed.b?.[0] as string;

    await dockerB.kill();
    const killedAt = Date.now();
    const gone = await eventually(
      'host b to be not live',
      async () => {
        const current = await hosts();
        return current.b?.live === false ? current : undefined;
      },
      HOST_SILENCE_WAIT_MS,
    );
    assert.ok(Date.now() - killedAt <= HOST_SILENCE_WAIT_MS);
    assert.equal(gone.a?.live, true);
    assert.equal(gone.b?.liveSandboxes, 1, 'the sandbox on b still holds its place');

    // b is the less loaded host (1 against 2); only its silence sends the next sandbox to a.
    const [late] = newIds('late', 1);
    const lateStatus = await create(late as string);
    assert.equal(lateStatus.host, 'a');
    assert.equal((await sandboxes.status(stranded)).state, 'READY', 'a sandbox on a silent host is not given up');

    const report = await sandboxctl<SweepReport>('sweep', '--wait');
    assert.deepEqual(
      report.hosts?.find((host) => host.hostId === 'b'),
      { hostId: 'b', live: false, swept: false },
    );
    const unreachable = report.remaining.filter((finding) => finding.kind === 'host_unreachable');
    assert.deepEqual(
      unreachable.map((finding) => finding.subject),
      ['b'],
    );
    assert.deepEqual(report.removed, [], 'nothing of a live sandbox is removed');
    const { leaks } = await sandboxctl<{ leaks: LeakRecord[] }>('leaks');
    assert.ok(
      leaks.some((leak) => leak.kind === 'host_unreachable' && leak.subject === 'b'),
      `leaks --json reports host b: ${JSON.stringify(leaks)}`,
    );

    // A silent host that still holds a sandbox cannot be retired: its teardown waits for it.
    const retire = await runSandboxctl(['hosts', 'remove', 'b', '--json'], callerEnv, { timeoutMs: 120_000 });
    assert.equal(retire.code, 3, retire.stderr);
    assert.equal((JSON.parse(retire.stderr) as { error: { code: string } }).error.code, 'HOST_IN_USE');

    dockerB = await startDockerWorker('b');
    await eventually('host b to be live again', async () => ((await hosts()).b?.live === true ? true : undefined), 60_000);
    assert.ok((await containersOn('b')).has(stranded), "the silent host's container ran on");
    await destroyAll([...trio, late as string]);
    assert.equal(fs.existsSync(noStore) || fs.existsSync(path.dirname(noStore)), false, 'nobody but the store worker opened a SQLite file');
  });
});
