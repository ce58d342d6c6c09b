/**
 * A provision attempt that is cancelled (Temporal timed it out while the history service
 * was away, so a retry runs) must not take its container with it: the retry adopts that
 * container, and the sandbox comes up with one container. Real engine, real moto.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createMotoAdapter } from '../src/adapters/moto-adapter';
import { SANDBOX_ID_LABEL } from '../src/domain/docker-labels';
import { DockerContainerBroker, type ContainerBroker } from '../src/docker';

const motoImage = process.env.SANDBOXPLANE_MOTO_IMAGE as string;

describe('a cancelled provision attempt and its retry', () => {
  const broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
  const sandboxId = `retry-${process.pid}`;

  after(async () => {
    for (const container of await broker.list({ [SANDBOX_ID_LABEL]: sandboxId })) await broker.remove(container.id, { force: true });
  });

  test('the cancelled attempt leaves its container; the retry adopts it and mints in it', async (t) => {
    assert.ok(motoImage, 'the test runner exports SANDBOXPLANE_MOTO_IMAGE');
    // fetch's timeout timer does not hold the event loop open while moto starts, and no worker runs here to: this does.
    const keepAlive = setInterval(() => undefined, 1_000);
    t.after(() => clearInterval(keepAlive));
    const superseded = new AbortController();
    // The first attempt is cancelled just as its container runs, before its health wait.
    const cancelOnRun = new Proxy(broker, {
      get: (target, key, receiver) =>
        key === 'run'
          ? async (...args: Parameters<ContainerBroker['run']>) => {
              const info = await target.run(...args);
              superseded.abort(new Error('activity timed out'));
              return info;
            }
          : (Reflect.get(target, key, receiver) as unknown),
    });
    const first = createMotoAdapter({ broker: cancelOnRun, image: motoImage, healthTimeoutMs: 60_000 });
    const plan = first.launchPlan({ sandboxId, services: ['s3'], labels: {} });
    await assert.rejects(first.provision(plan, { heartbeat: () => undefined, cancelled: superseded.signal }));
    const left = await broker.list({ [SANDBOX_ID_LABEL]: sandboxId });
    assert.equal(left.length, 1, 'the cancelled attempt left its container for the retry');

    const retry = createMotoAdapter({ broker, image: motoImage, healthTimeoutMs: 60_000 });
    const handle = await retry.provision(retry.launchPlan({ sandboxId, services: ['s3'], labels: {} }), { heartbeat: () => undefined });
    assert.deepEqual(handle.runtimeIds, [left[0]!.id], 'the retry adopted that container');
    assert.ok(handle.credentials !== undefined, 'and minted the sandbox credentials in it');
    assert.equal((await broker.list({ [SANDBOX_ID_LABEL]: sandboxId })).length, 1);
    assert.equal((await retry.health(sandboxId, null)).healthy, true);
  });
});
