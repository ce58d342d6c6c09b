/**
 * Pre-made sealed networks (DESIGN §12) on the real engine at DOCKER_HOST with the offline
 * test image: each pooled network goes to exactly one sandbox's container, the pool fills
 * up again, the container's removal takes its network, the sweep removes a pooled network
 * nobody holds once past its grace (and leaves the held and the young), and a stopped pool
 * leaves none.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import type Docker from 'dockerode';
import { createHostSweepActivities } from '../../src/activities/cleanup-activities';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, PLANE_LABEL, sandboxContainerLabels } from '../../src/domain/docker-labels';
import { NETWORK_POOL_LABEL, isPooledNetworkName } from '../../src/domain/network-pool';
import { DockerContainerBroker, SealedNetworkPool, silentLogger, stopAndRemove, type ContainerSpecInput } from '../../src/docker';
import { eventually } from '../harness/eventually';
import { MIB, TEST_IMAGE, TEST_LOG_LIMITS, engineDocker, requireEngineAndImage } from './docker-test-support';

interface RawNetwork {
  Id: string;
  Name: string;
  Options: Record<string, string>;
  Labels: Record<string, string>;
}

describe('pre-made sealed networks on a real engine', () => {
  const docker: Docker = engineDocker();
  const plane = `netpool-test-${randomBytes(4).toString('hex')}`;
  const hostId = 'netpool-host';
  let imageId = '';
  let broker: DockerContainerBroker;
  let pool: SealedNetworkPool;

  const spec = (sandboxId: string): ContainerSpecInput => ({
    name: `sbp-${plane}-${sandboxId}`,
    image: imageId,
    labels: { ...sandboxContainerLabels(sandboxId, 'testhttp'), [PLANE_LABEL]: plane },
    limits: { memoryBytes: 64 * MIB, pidsLimit: 32, nanoCpus: 500_000_000, ...TEST_LOG_LIMITS },
    ports: [{ containerPort: 8080, hostPort: 0 }],
  });
  /** Every network of this plane's pool, idle or handed out. */
  const pooledNetworks = async (): Promise<RawNetwork[]> =>
    (await docker.listNetworks({ filters: { label: [`${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`, `${PLANE_LABEL}=${plane}`, `${NETWORK_POOL_LABEL}=${hostId}`] } })) as RawNetwork[];
  const networkOf = async (containerId: string): Promise<{ name: string; id: string }> => {
    const info = await broker.inspect(containerId);
    const entries = Object.entries(info.networks);
    assert.equal(entries.length, 1, 'on one network only');
    const [[name, id]] = entries as [[string, string]];
    return { name, id };
  };
  const newPool = (target: number) => new SealedNetworkPool({ hostId, plane, target, maker: broker, logger: silentLogger, refillDelayMs: 10 });

  before(async () => {
    imageId = await requireEngineAndImage(docker);
    broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST, imageAllowlist: [TEST_IMAGE] });
    pool = newPool(2);
    await pool.start();
    broker.useNetworkPool(pool);
  });

  after(async () => {
    broker.useNetworkPool(undefined);
    await pool.stop();
    const label = [`${PLANE_LABEL}=${plane}`];
    for (const container of await docker.listContainers({ all: true, filters: { label } })) await docker.getContainer(container.Id).remove({ force: true, v: true });
    for (const network of (await docker.listNetworks({ filters: { label } })) as RawNetwork[])
      await docker
        .getNetwork(network.Id)
        .remove()
        .catch(() => undefined);
  });

  test('each container gets a pooled network of its own, sealed, never another’s; the pool fills up again; removal takes the network', async () => {
    const made = (await pooledNetworks()).map((network) => network.Id).sort();
    assert.equal(made.length, 2, 'the pool made its two networks at start');
    // Five at once from a pool of two: the two pooled networks go to two of them, one each; the rest make their own.
    const sandboxes = ['a', 'b', 'c', 'd', 'e'].map((letter) => `np-${letter}-${randomBytes(3).toString('hex')}`);
    const containers = await Promise.all(sandboxes.map((sandboxId) => broker.run(spec(sandboxId))));
    const networks = await Promise.all(containers.map((container) => networkOf(container.id)));
    assert.equal(new Set(networks.map((network) => network.id)).size, 5, 'five containers, five networks');
    const pooled = networks.filter((network) => isPooledNetworkName(plane, network.name));
    assert.deepEqual(pooled.map((network) => network.id).sort(), made, 'both pooled networks were handed out, each to one container');
    for (const network of pooled) {
      const raw = (await docker.getNetwork(network.id).inspect()) as RawNetwork;
      assert.equal(raw.Options['com.docker.network.bridge.enable_icc'], 'false');
      assert.equal(raw.Options['com.docker.network.bridge.enable_ip_masquerade'], 'false');
    }

    // The refill: two new idle networks, none of them one handed out.
    await eventually('the pool filled up again', async () => ((await pooledNetworks()).length === 4 ? true : undefined), 30_000);
    assert.equal(pool.depth().ready, 2);
    const idle = (await pooledNetworks()).map((network) => network.Id).filter((id) => !made.includes(id));
    assert.equal(idle.length, 2);

    for (const container of containers) await stopAndRemove(broker, container.id, { timeoutSeconds: 1 });
    for (const network of networks) await assert.rejects(docker.getNetwork(network.id).inspect(), { statusCode: 404 }, `network ${network.name} went with its container`);
    assert.deepEqual((await pooledNetworks()).map((network) => network.Id).sort(), idle.sort(), 'only the idle pooled networks are left');
  });

  test('a retried run that adopts its earlier container gives back nothing to the pool: the network it took is removed', async () => {
    const sandboxId = `np-retry-${randomBytes(3).toString('hex')}`;
    const first = await broker.run(spec(sandboxId));
    await eventually('the pool filled up again', async () => (pool.depth().ready === 2 ? true : undefined), 30_000);
    const own = await networkOf(first.id);
    const idleBefore = (await pooledNetworks()).map((network) => network.Id).filter((id) => id !== own.id);
    const again = await broker.run(spec(sandboxId));
    assert.equal(again.id, first.id, 'adopted');
    assert.deepEqual(await networkOf(first.id), own, 'still on its first network');
    const now = (await pooledNetworks()).map((network) => network.Id);
    assert.equal(idleBefore.filter((id) => !now.includes(id)).length, 1, 'the network the retry took is gone, neither idle again nor attached');
    await stopAndRemove(broker, first.id, { timeoutSeconds: 1 });
  });

  test('the sweep leaves held and young pooled networks, and removes one nobody holds past its grace', async () => {
    await eventually('the pool filled up again', async () => (pool.depth().ready === 2 ? true : undefined), 30_000);
    // What a killed worker leaves: a pool that made its networks and never stopped.
    const killed = newPool(1);
    await killed.start();
    const [orphan] = (await pooledNetworks()).filter((network) => !pool.holds(network.Id));
    assert.ok(orphan !== undefined);
    const sweep = (graceMs?: number) =>
      new MockActivityEnvironment().run(() =>
        createHostSweepActivities({ broker, plane, networkPool: pool, ...(graceMs === undefined ? {} : { networkPoolGraceMs: graceMs }) }).listManagedContainers(),
      );

    await sweep();
    assert.equal((await pooledNetworks()).length, 3, 'within the grace the orphan stays (it may be another process’s pool’s)');
    await sweep(0);
    const left = (await pooledNetworks()).map((network) => network.Id);
    assert.equal(left.length, 2, 'past its grace the orphan goes');
    assert.ok(!left.includes(orphan.Id));
    assert.ok(
      left.every((id) => pool.holds(id)),
      'the networks the pool holds stay, whatever their age',
    );
  });

  test('a stopped pool leaves no network behind and hands out none', async () => {
    const stopped = newPool(2);
    await stopped.start();
    assert.equal((await pooledNetworks()).length, 4);
    await stopped.stop();
    assert.equal((await pooledNetworks()).length, 2, 'only the other pool’s');
    assert.equal(stopped.take(), undefined);
  });
});
