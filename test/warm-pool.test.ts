/**
 * Warm pools (DESIGN §13) on a real dev server, a real engine and real moto: a create
 * claims an idle container (its emulator emptied), the pool refills, no container is
 * handed out twice, a dead idle container is replaced, the sweep tells idle containers
 * from orphans, and a restarted worker adopts its pool (or drains it when turned off).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CreateBucketCommand, ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';
import { StoreClient } from '../src/client/store-client';
import { CLEANUP_WORKFLOW, HOST_MEMORY_REPORT_WORKFLOW, WARM_POOL_REPORT_WORKFLOW } from '../src/domain/contract-names';
import { OPERATOR_TOKEN_LABEL } from '../src/adapters/container-emulator';
import { fetchJson } from '../src/adapters/health-gate';
import { mintMotoCredentials } from '../src/adapters/moto-state';
import { operatorHeaders, operatorUrl } from '../src/adapters/operator-endpoint';
import { clientConfigFor, type ClientConfig, type SandboxCredentials } from '../src/domain/client-config';
import { PLANE_LABEL, SANDBOX_ID_LABEL, sandboxContainerLabels } from '../src/domain/docker-labels';
import type { HostReport } from '../src/domain/hosts';
import type { SweepReport } from '../src/domain/leaks';
import { containerNameFor, containerOwner, POOL_HOST_LABEL, POOL_LABEL, type PoolStatus, type WarmPoolReport } from '../src/domain/warm-pool';
import { claimSlot } from '../src/adapters/warm-pool';
import { DockerContainerBroker, type ContainerSummary } from '../src/docker';
import { runCli } from './harness/cli';
import { eventually } from './harness/eventually';
import { assertReplays, fetchHistories } from './helpers/replay-histories';
import { testTemporalAddress } from './harness/test-temporal';
import { createTestNamespace } from './helpers/test-namespace';
import { startTestWorker, type TestWorker } from './harness/test-worker';

const MIB = 1024 * 1024;

const motoImage = process.env.SANDBOXPLANE_MOTO_IMAGE;
const skip = motoImage === undefined && 'needs the moto image and the Docker engine (SANDBOXPLANE_MOTO_IMAGE, set by the test runner)';

describe('warm pools (real dev server, engine and moto)', { skip }, () => {
  const broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
  let address: string;
  let namespace: string;
  let worker: TestWorker;
  let plane: string;

  const start = (pool: string | undefined) =>
    startTestWorker(address, {
      env: {
        TEMPORAL_NAMESPACE: namespace,
        SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1',
        SANDBOXPLANE_MOTO_IMAGE: motoImage as string,
        SANDBOXPLANE_HEALTH_INTERVAL: '1h',
        ...(pool === undefined ? {} : { SANDBOXPLANE_WARM_POOL: pool }),
      },
      warmPoolCheckMs: 1_000,
    });

  /** Every pool container of this test's plane on the engine. */
  const poolContainers = () => broker.list({ [PLANE_LABEL]: plane, [POOL_LABEL]: 'moto' });
  const idleIds = async () =>
    (await poolContainers())
      .filter((container) => 'poolSlotId' in containerOwner(container))
      .map((container) => container.id)
      .sort();

  async function pools(): Promise<PoolStatus | undefined> {
    const store = new StoreClient({ client: worker.client, taskQueue: worker.config.taskQueue });
    return (await store.warmPools()).pools[0];
  }
  const poolSettled = (want: Partial<PoolStatus>) =>
    eventually(`a pool with ${JSON.stringify(want)}`, async () => {
      const status = await pools();
      return status !== undefined && Object.entries(want).every(([key, value]) => status[key as keyof PoolStatus] === value) ? status : undefined;
    });

  before(async () => {
    address = await testTemporalAddress();
    // A namespace of its own is a plane of its own: no other test's worker drains or sweeps this pool.
    namespace = await createTestNamespace(address, 'pools');
    worker = await start('moto=2');
    plane = worker.plane.planeId;
    worker.store.policies.add({ principalPattern: '*', capability: 'cloud.sandbox', effect: 'allow' });
  });

  after(async () => {
    await worker?.stop();
    for (const container of await broker.list({ [PLANE_LABEL]: plane })) await broker.remove(container.id, { force: true });
    // A start the stopped pool abandoned may leave its slot's network: ranges are few on an engine with Docker's pools.
    for (const network of await broker.listNetworks({ [PLANE_LABEL]: plane })) await broker.removeNetwork(network.id);
  });

  test('a create claims an idle container, its emulator emptied; the pool refills; sandboxctl pools and audit say so', async () => {
    await poolSettled({ ready: 2, starting: 0 });
    // A start that failed its health gate under load leaves its container until the next check
    // discards it (the pool keeps at most its target): the engine converges to exactly two.
    const idle = await eventually('exactly two idle containers on the engine', async () => {
      const ids = await idleIds();
      return ids.length === 2 ? ids : undefined;
    });
    assert.equal(idle.length, 2);
    // Whatever a pooled emulator holds must never reach the sandbox that claims it: not a
    // bucket, and not an access key minted in it (through its operator endpoint) while it waited.
    const leftKeys = new Map<string, SandboxCredentials>();
    for (const container of await poolContainers()) {
      const endpoint = `http://127.0.0.1:${container.ports[0]?.hostPort}`;
      const operator = { endpoint, token: container.labels[OPERATOR_TOKEN_LABEL] ?? '' };
      // The pool minted once in each to warm its IAM up, and emptied it again.
      const held = await fetchJson(operatorUrl(operator, '/moto-api/data.json'), AbortSignal.timeout(5_000), operatorHeaders(operator));
      assert.ok(held.ok);
      assert.doesNotMatch(JSON.stringify(held.body), /pool\.moto\./, 'nothing of the warm-up (a user named after the slot, its key) is left in an idle emulator');
      const key = await mintMotoCredentials(operator, { sandboxId: 'someone-else', services: ['s3'] }, AbortSignal.timeout(10_000));
      leftKeys.set(container.id, key);
      await new S3Client(clientConfigFor('moto', endpoint, 'us-east-1', key)).send(new CreateBucketCommand({ Bucket: 'left-by-someone-else' }));
    }

    const created = await worker.sandboxes.create({ id: 'pool-a', principal: 'agent-1', adapter: 'moto', services: ['s3'] }, { wait: 'ready' });
    const [containerId] = created.runtimeIds;
    assert.ok(containerId !== undefined && idle.includes(containerId), `the sandbox runs on a pooled container (${containerId} of ${idle.join(', ')})`);
    assert.ok(created.clientConfig !== null);
    const buckets = await new S3Client(created.clientConfig).send(new ListBucketsCommand({}));
    assert.deepEqual(buckets.Buckets ?? [], [], 'the claim reset the emulator');
    assert.notDeepEqual(created.clientConfig.credentials, clientConfigFor('moto', created.clientConfig.endpoint, 'us-east-1').credentials, 'the sandbox has a key of its own');
    const leftKey = leftKeys.get(containerId);
    assert.ok(leftKey !== undefined);
    await assert.rejects(
      new S3Client(clientConfigFor('moto', created.clientConfig.endpoint, 'us-east-1', leftKey)).send(new ListBucketsCommand({})),
      { name: 'InvalidAccessKeyId' },
      'the key minted before the claim is gone: the reset emptied IAM too',
    );

    const container = await broker.inspect(containerId);
    assert.equal(container.name, containerNameFor(plane, 'pool-a'), 'renamed to the sandbox: the claim is on the engine');
    assert.match(container.labels[SANDBOX_ID_LABEL] ?? '', /^pool\.moto\.[0-9a-f]{12}$/, 'labels are immutable: the slot id stays');
    const ready = worker.store.sandboxes.audit('pool-a').find((op) => op.action === 'ready');
    assert.match(ready?.reason ?? '', new RegExp(`container ${containerId.slice(0, 12)} claimed from the moto warm pool \\(slot pool\\.moto\\.`));

    await poolSettled({ ready: 2, claimed: 1, starting: 0 });
    const cli = await runCli(['pools', '--json'], worker.env);
    assert.equal(cli.code, 0, cli.stderr);
    const report = JSON.parse(cli.stdout) as WarmPoolReport;
    assert.deepEqual(Object.keys(report).sort(), ['pools', 'unanswered']);
    assert.deepEqual(report.unanswered, []);
    const [pool] = report.pools;
    // A snapshot: a container may be being replaced at that moment, so ready + starting is what the pool holds.
    assert.deepEqual(pool && { ...pool, ready: pool.ready + pool.starting, starting: 0 }, { hostId: 'local', adapter: 'moto', target: 2, ready: 2, claimed: 1, starting: 0 });

    // `hosts` says what the host's containers really use, read from the engine when asked: three moto emulators' worth.
    const hostsCli = await runCli(['hosts', '--json'], worker.env);
    assert.equal(hostsCli.code, 0, hostsCli.stderr);
    const [local] = (JSON.parse(hostsCli.stdout) as { hosts: HostReport[] }).hosts;
    const running = (await broker.list({ [PLANE_LABEL]: plane })).filter((listed) => listed.state === 'running');
    const engineSays = (await Promise.all(running.map((listed) => broker.stats(listed.id)))).reduce((sum, stats) => sum + stats.memoryBytes, 0);
    assert.equal(running.length, 3, 'two idle pool containers and the claimed one');
    assert.ok(local?.memoryInUseBytes !== null && local?.memoryInUseBytes !== undefined, 'the live host answered');
    assert.ok(local.memoryInUseBytes > 3 * 20 * MIB && local.memoryInUseBytes < local.memoryRequestedBytes, `in use ${local.memoryInUseBytes} B: moto's own, below what they request`);
    assert.ok(Math.abs(local.memoryInUseBytes - engineSays) < engineSays / 2, `in use ${local.memoryInUseBytes} B is what docker stats says (${engineSays} B)`);

    // Both reports are AUTO_UPGRADE workflows: this build's histories of them replay on this build's code.
    const reports = await Promise.all(
      [WARM_POOL_REPORT_WORKFLOW, HOST_MEMORY_REPORT_WORKFLOW].map(async (type) => {
        const workflowId = `replay-${type}-${Date.now()}`;
        await worker.client.workflow.execute(type, { taskQueue: worker.config.taskQueue, workflowId, workflowExecutionTimeout: '1 minute' });
        return workflowId;
      }),
    );
    await assertReplays(await fetchHistories(worker.client, reports));

    await worker.sandboxes.destroy('pool-a');
    await assert.rejects(broker.inspect(containerId), { code: 'CONTAINER_NOT_FOUND' }, 'teardown removes the pooled container');
  });

  test('a paused sandbox holds no pool container; its resume claims one, with its state and its key', async () => {
    await poolSettled({ ready: 2, starting: 0 });
    const created = await worker.sandboxes.create({ id: 'pool-p', principal: 'agent-1', adapter: 'moto', services: ['s3'] }, { wait: 'ready' });
    const config = created.clientConfig as ClientConfig;
    const { accessKeyId, secretAccessKey } = config.credentials;
    await new S3Client(config).send(new CreateBucketCommand({ Bucket: 'kept-while-paused' }));
    await poolSettled({ ready: 2, claimed: 1, starting: 0 });
    const paused = await worker.sandboxes.pause('pool-p');
    assert.equal(paused.state, 'PAUSED');
    await poolSettled({ ready: 2, claimed: 0, starting: 0 });
    const resumed = await worker.sandboxes.resume('pool-p');
    assert.equal(resumed.state, 'READY');
    const row = worker.store.sandboxes.audit('pool-p').find((op) => op.action === 'resumed');
    assert.match(row?.reason ?? '', /claimed from the moto warm pool/, 'the resume claimed a pooled container');
    assert.deepEqual(resumed.clientConfig?.credentials, { accessKeyId, secretAccessKey }, 'the same key');
    const buckets = await new S3Client(resumed.clientConfig as ClientConfig).send(new ListBucketsCommand({}));
    assert.deepEqual(
      (buckets.Buckets ?? []).map((bucket) => bucket.Name),
      ['kept-while-paused'],
    );
    await worker.sandboxes.destroy('pool-p');
  });

  test('creates at once never share a container: those the pool cannot serve start cold', async () => {
    await poolSettled({ ready: 2, starting: 0 });
    const ids = ['pool-b1', 'pool-b2', 'pool-b3', 'pool-b4'];
    const created = await Promise.all(ids.map((id) => worker.sandboxes.create({ id, principal: 'agent-2', adapter: 'moto', services: ['s3'] }, { wait: 'ready' })));
    const containers = created.map((status) => status.runtimeIds[0]);
    assert.equal(new Set(containers).size, ids.length, `four sandboxes, four containers: ${containers.join(', ')}`);
    const pooled = ids.filter((id) => /warm pool/.test(worker.store.sandboxes.audit(id).find((op) => op.action === 'ready')?.reason ?? ''));
    assert.ok(pooled.length >= 1 && pooled.length <= 2, `at most the two ready containers were claimed (${pooled.join(', ')})`);
    await Promise.all(ids.map((id) => worker.sandboxes.destroy(id)));
    for (const id of containers) await assert.rejects(broker.inspect(id as string), { code: 'CONTAINER_NOT_FOUND' });
  });

  test('two claims of one idle container (two processes serving one host): exactly one gets it, every time', async () => {
    for (let round = 0; round < 6; round += 1) {
      const slot = `pool.moto.00000000c1a${round}`;
      const info = await broker.run({
        name: containerNameFor(plane, slot),
        image: motoImage as string,
        labels: { [PLANE_LABEL]: plane, ...sandboxContainerLabels(slot, 'moto'), [POOL_LABEL]: 'moto', [POOL_HOST_LABEL]: 'elsewhere' },
        limits: { memoryBytes: 256 * 1024 * 1024, pidsLimit: 64, nanoCpus: 1_000_000_000, logMaxBytes: 1024 * 1024, logFiles: 2 },
      });
      try {
        const claimants = [`pool-c${round}a`, `pool-c${round}b`];
        const outcomes = await Promise.all(
          claimants.map((id) => claimSlot(broker, (owner) => containerNameFor(plane, owner), { name: containerNameFor(plane, slot), slotId: slot }, containerNameFor(plane, id))),
        );
        assert.deepEqual([...outcomes].sort(), ['claimed', 'lost'], `round ${round}: ${outcomes.join(', ')}`);
        const winner = claimants[outcomes.indexOf('claimed')] as string;
        assert.equal((await broker.inspect(info.id)).name, containerNameFor(plane, winner), "the container is the winner's");
      } finally {
        await broker.remove(info.id, { force: true });
      }
    }
  });

  test('an idle container that dies is replaced', async () => {
    await poolSettled({ ready: 2, starting: 0 });
    const [victim] = await idleIds();
    await broker.stop(victim as string, { timeoutSeconds: 0 });
    await eventually('the dead idle container replaced', async () => {
      const now = await idleIds();
      return now.length === 2 && !now.includes(victim as string) ? now : undefined;
    });
    await assert.rejects(broker.inspect(victim as string), { code: 'CONTAINER_NOT_FOUND' }, 'the dead one is removed, not left behind');
  });

  test('the sweep keeps idle containers and removes a claimed one whose sandbox workflow was terminated', async () => {
    await poolSettled({ ready: 2, starting: 0 });
    const created = await worker.sandboxes.create({ id: 'pool-t', principal: 'agent-3', adapter: 'moto', services: ['s3'] }, { wait: 'ready' });
    const [claimed] = created.runtimeIds;
    await poolSettled({ ready: 2, starting: 0 });
    const idleBefore = await idleIds();
    await worker.client.workflow.getHandle('sandbox-pool-t').terminate('test: an operator pressed Terminate');

    const report: SweepReport = await worker.client.workflow.execute(CLEANUP_WORKFLOW, {
      taskQueue: worker.config.taskQueue,
      workflowId: `test-pool-sweep-${Date.now()}`,
      workflowExecutionTimeout: '2 minutes',
    });
    assert.ok(
      report.removed.some((finding) => finding.subject === claimed && finding.sandboxId === 'pool-t'),
      `the claimed container is an orphan of pool-t: ${JSON.stringify(report.removed)}`,
    );
    await assert.rejects(broker.inspect(claimed as string), { code: 'CONTAINER_NOT_FOUND' });
    const idleAfter = await idleIds();
    for (const id of idleBefore) assert.ok(idleAfter.includes(id), `idle container ${id.slice(0, 12)} is the pool's, not an orphan`);
    assert.equal(worker.store.sandboxes.state('pool-t'), 'DESTROYED');
  });

  test('a restarted worker adopts its idle containers; one started with the pool off drains them', async () => {
    await poolSettled({ ready: 2, starting: 0 });
    const idle = await idleIds();
    await worker.stop();
    assert.deepEqual(await idleIds(), idle, 'a stopped worker leaves its warm containers for the next one');

    worker = await start('moto=2');
    worker.store.policies.add({ principalPattern: '*', capability: 'cloud.sandbox', effect: 'allow' });
    await poolSettled({ ready: 2, starting: 0 });
    assert.deepEqual(await idleIds(), idle, 'the same two containers, adopted: none started, none lost');
    const created = await worker.sandboxes.create({ id: 'pool-r', principal: 'agent-4', adapter: 'moto', services: ['s3'] }, { wait: 'ready' });
    assert.ok(idle.includes(created.runtimeIds[0] as string), 'an adopted container is claimed like any other');
    await worker.sandboxes.destroy('pool-r');
    await worker.stop();

    worker = await start(undefined);
    assert.deepEqual(await poolContainers(), [] as ContainerSummary[], 'with the pool turned off, its idle containers are gone once the worker is up');
  });
});
