/**
 * A burst on a host that starts one emulator at a time (SANDBOXPLANE_EMULATOR_START_CONCURRENCY=1),
 * on a real dev server, engine and moto: every create comes READY, the engine never runs two
 * moto containers that are still starting, and a create waiting its turn says so in its
 * provision activity's heartbeat, where `temporal workflow describe` shows it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SANDBOX_ID_LABEL } from '../src/domain/docker-labels';
import { DockerContainerBroker } from '../src/docker';
import { startTestWorker, testDataConverter, type TestWorker } from './harness/test-worker';
import { testTemporalAddress } from './harness/test-temporal';

const motoImage = process.env.SANDBOXPLANE_MOTO_IMAGE as string;

describe('emulator starts, one at a time on a real engine', () => {
  const broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
  let worker: TestWorker;

  before(async () => {
    assert.ok(motoImage, 'the test runner exports SANDBOXPLANE_MOTO_IMAGE');
    worker = await startTestWorker(await testTemporalAddress(), {
      env: { SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1', SANDBOXPLANE_MOTO_IMAGE: motoImage, SANDBOXPLANE_EMULATOR_START_CONCURRENCY: '1', SANDBOXPLANE_NETWORK_POOL: '0' },
    });
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
  });

  after(async () => {
    await worker?.stop();
  });

  test('three creates at once: all READY, started in turn, the waiting ones heartbeating why', async () => {
    const ids = ['slots-a', 'slots-b', 'slots-c'];
    const waitedFor = new Set<string>();
    const [codec] = testDataConverter().payloadCodecs ?? [];
    let watching = true;
    // What Temporal shows of each create while the burst runs: its provision's last heartbeat.
    const watch = (async () => {
      while (watching) {
        for (const id of ids) {
          const described = await worker.client.workflow
            .getHandle(`sandbox-${id}`)
            .describe()
            .catch(() => undefined);
          for (const pending of described?.raw.pendingActivities ?? []) {
            const [payload] = pending.heartbeatDetails?.payloads ?? [];
            if (payload === undefined) continue;
            const [plain] = codec === undefined ? [payload] : await codec.decode([payload]);
            if (/waiting for a start slot/.test(Buffer.from(plain?.data ?? []).toString())) waitedFor.add(id);
          }
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    })();
    const created = await Promise.all(ids.map((id) => worker.sandboxes.create({ id, principal: 'agent-slots', adapter: 'moto', services: ['s3'], ttlSeconds: 600 }, { wait: 'ready' })));
    watching = false;
    await watch;
    assert.deepEqual(
      created.map((status) => status.state),
      ['READY', 'READY', 'READY'],
    );
    assert.ok(waitedFor.size >= 1, 'at least one create was seen waiting for its turn');

    // Each container started after the one before it had passed its health check: never two starting at once.
    const containers = await Promise.all(ids.map(async (id) => (await broker.list({ [SANDBOX_ID_LABEL]: id }))[0]));
    const started = await Promise.all(containers.map(async (container) => Date.parse((await broker.inspect(container!.id)).startedAt ?? '')));
    const sorted = [...started].sort((a, b) => a - b);
    for (let index = 1; index < sorted.length; index += 1) {
      assert.ok(sorted[index]! - sorted[index - 1]! >= 300, `starts are apart by a moto start at least: ${sorted.map((at) => new Date(at).toISOString()).join(', ')}`);
    }
    await Promise.all(ids.map((id) => worker.sandboxes.destroy(id)));
  });
});
