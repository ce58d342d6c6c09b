/**
 * Teardown by the runtime ids recorded at provisioning as well as by label (issue 12),
 * on the real engine: a worker whose plane id changed still removes what its sandbox
 * recorded, and a worker on another engine never reports "nothing found".
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import type { AdapterContext } from '../../src/adapters/cloud-emulator-adapter';
import { ContainerEmulatorAdapter } from '../../src/adapters/container-emulator';
import { PLANE_LABEL, SANDBOX_ID_LABEL } from '../../src/domain/docker-labels';
import { SandboxPlaneError } from '../../src/domain/errors';
import { SERVICE_CATALOGS } from '../../src/domain/service-catalog';
import { DockerContainerBroker, type ContainerBroker } from '../../src/docker';
import { engineDocker, MIB, removeSandboxContainers, TEST_IMAGE, uniqueSandboxId } from './docker-test-support';

const context: AdapterContext = { heartbeat: () => undefined };

/** The same engine, but it claims to be another one: what a worker on another DOCKER_HOST sees. */
function onAnotherEngine(broker: ContainerBroker): ContainerBroker {
  return {
    run: (spec) => broker.run(spec),
    inspect: (id) => broker.inspect(id),
    stats: (id) => broker.stats(id),
    list: (labels) => broker.list(labels),
    stop: (id, options) => broker.stop(id, options),
    remove: (id, options) => broker.remove(id, options),
    rename: (current, newName) => broker.rename(current, newName),
    listNetworks: (labels) => broker.listNetworks(labels),
    removeNetwork: (name) => broker.removeNetwork(name),
    ping: () => broker.ping(),
    engineId: async () => 'OTHER:ENGINE:FOR:TESTS',
    engineMemoryBytes: () => broker.engineMemoryBytes(),
  };
}

describe('container teardown by recorded runtime ids, on the real engine', () => {
  const broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
  const docker = engineDocker();
  const sandboxIds: string[] = [];
  let imageId: string;

  /** busybox serving HTTP, behind an adapter that labels its containers with `planeId`. */
  function adapterFor(planeId: string, engine: ContainerBroker = broker): ContainerEmulatorAdapter {
    return new ContainerEmulatorAdapter({
      adapter: 'moto',
      catalog: SERVICE_CATALOGS.moto,
      broker: engine,
      extraLabels: { [PLANE_LABEL]: planeId },
      image: imageId,
      containerPort: 8080,
      region: 'us-east-1',
      memoryBytes: 32 * MIB,
      pidsLimit: 16,
      nanoCpus: 500_000_000,
      healthTimeoutMs: 5_000,
      probe: async () => ({ healthy: true, registeredServices: ['s3'], readyServices: ['s3'], detail: 'test' }),
      environment: () => ({}),
      listResources: async () => ({ resources: [], unlisted: [] }),
    });
  }

  async function provision(adapter: ContainerEmulatorAdapter, prefix: string) {
    const sandboxId = uniqueSandboxId(prefix);
    sandboxIds.push(sandboxId);
    const handle = await adapter.provision(adapter.launchPlan({ sandboxId, services: ['s3'], labels: {} }), context);
    return { sandboxId, handle };
  }

  before(() => {
    imageId = execFileSync('docker', ['image', 'inspect', '--format', '{{.Id}}', TEST_IMAGE], { encoding: 'utf8' }).trim();
  });

  after(async () => {
    for (const sandboxId of sandboxIds) await removeSandboxContainers(docker, sandboxId);
  });

  test('provisioning records the engine: its docker info ID, told apart by its name and data root', async () => {
    const dockerId = execFileSync('docker', ['info', '--format', '{{.ID}}'], { encoding: 'utf8' }).trim();
    const engineId = await broker.engineId();
    assert.match(engineId, new RegExp(`^${dockerId.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/[0-9a-f]{12}$`));
    const { handle } = await provision(adapterFor('plane-a'), 'teardown-engine');
    assert.equal(handle.engineId, engineId);
    assert.equal(handle.runtimeIds.length, 1);
  });

  test('a worker whose plane id changed still removes the container its sandbox recorded', async () => {
    const { sandboxId, handle } = await provision(adapterFor('plane-before'), 'teardown-renamed');
    const renamed = adapterFor('plane-after');

    const byLabelOnly = await renamed.destroy(sandboxId, context);
    assert.deepEqual(byLabelOnly, { removed: [], remaining: [] }, 'without the record, another plane sees nothing (the old behaviour)');
    assert.equal((await broker.list({ [SANDBOX_ID_LABEL]: sandboxId })).length, 1, '...and the container ran on');

    const report = await renamed.destroy(sandboxId, context, handle);
    assert.deepEqual(report, { removed: [...handle.runtimeIds], remaining: [] });
    assert.deepEqual(await broker.list({ [SANDBOX_ID_LABEL]: sandboxId }), [], 'the recorded container is gone');

    assert.deepEqual(await renamed.destroy(sandboxId, context, handle), { removed: [], remaining: [] }, 'same engine, recorded id gone: already destroyed');
  });

  test("a recorded id is removed only if it carries this sandbox's id", async () => {
    const { handle: other } = await provision(adapterFor('plane-a'), 'teardown-other');
    const sandboxId = uniqueSandboxId('teardown-wrong-record');
    const report = await adapterFor('plane-a').destroy(sandboxId, context, other);
    assert.deepEqual(report, { removed: [], remaining: [] });
    assert.equal((await broker.inspect(other.runtimeIds[0] ?? '')).state, 'running', "another sandbox's container is left alone");
  });

  test('teardown on another engine fails, retryable, names the engine, and leaves the container', async () => {
    const { sandboxId, handle } = await provision(adapterFor('plane-a'), 'teardown-elsewhere');
    await assert.rejects(
      adapterFor('plane-a', onAnotherEngine(broker)).destroy(sandboxId, context, handle),
      (err: unknown) =>
        err instanceof SandboxPlaneError &&
        err.code === 'RUNTIME_ON_OTHER_ENGINE' &&
        err.retryable &&
        err.message.includes(handle.engineId ?? 'missing') &&
        err.message.includes('OTHER:ENGINE:FOR:TESTS'),
    );
    assert.deepEqual(
      (await broker.list({ [SANDBOX_ID_LABEL]: sandboxId })).map((container) => [container.id, container.state]),
      [[handle.runtimeIds[0], 'running']],
    );
    assert.deepEqual(await adapterFor('plane-a').destroy(sandboxId, context, handle), { removed: [...handle.runtimeIds], remaining: [] });
  });

  test('the health watch of a worker whose plane id changed sees the recorded container alive, not dead', async () => {
    const { sandboxId, handle } = await provision(adapterFor('plane-before'), 'health-renamed');
    const renamed = adapterFor('plane-after');
    assert.equal((await renamed.health(sandboxId)).healthy, false, 'by label alone it looks dead (it would be restarted, its state lost)');
    assert.equal((await renamed.health(sandboxId, handle)).healthy, true, 'the recorded container is found and asked');
    await assert.rejects(
      adapterFor('plane-a', onAnotherEngine(broker)).health(sandboxId, handle),
      (err: unknown) => err instanceof SandboxPlaneError && err.code === 'RUNTIME_ON_OTHER_ENGINE',
      'from another engine the answer is "cannot tell", never "dead"',
    );
  });
});
