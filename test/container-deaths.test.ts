/**
 * Dead emulators are seen at once (issue 30): the docker worker follows its engine's
 * events and tells the sandbox when its container dies, so a READY sandbox needs no short
 * health timer. Here the timer is an hour: only the engine's word can explain a restart
 * within seconds.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { PLANE_LABEL } from '../src/domain/docker-labels';
import { DockerContainerBroker } from '../src/docker';
import { checkHealthSignal } from '../src/workflows/sandbox-messages';
import { testTemporalAddress } from './harness/test-temporal';
import { startTestWorker, type TestWorker } from './harness/test-worker';

const motoImage = process.env.SANDBOXPLANE_MOTO_IMAGE;
const skip = motoImage === undefined && 'needs the moto image and the Docker engine (SANDBOXPLANE_MOTO_IMAGE, set by the test runner)';

describe("a container's death, told by the engine (real dev server, engine and moto; health timer 1h)", { skip }, () => {
  const broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
  let worker: TestWorker;

  before(async () => {
    worker = await startTestWorker(await testTemporalAddress(), {
      env: { SANDBOXPLANE_HEALTH_INTERVAL: '1h', SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1', SANDBOXPLANE_MOTO_IMAGE: motoImage as string },
    });
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
  });
  after(async () => {
    const plane = worker?.plane.planeId;
    await worker?.stop();
    if (plane !== undefined) for (const container of await broker.list({ [PLANE_LABEL]: plane })) await broker.remove(container.id, { force: true });
  });

  test('`docker kill` of a READY moto sandbox: restarted within seconds (not the hour of its timer), on a new container; an idle sandbox records nothing meanwhile', async () => {
    const ready = await worker.sandboxes.create({ id: 'death-told', principal: 'agent-1', adapter: 'moto', services: ['s3'] }, { wait: 'ready' });
    const handle = worker.client.workflow.getHandle('sandbox-death-told');
    // Idle: with the timer an hour away, the history does not grow.
    const before = (await handle.fetchHistory()).events?.length ?? 0;
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    assert.equal((await handle.fetchHistory()).events?.length ?? 0, before, 'an idle READY sandbox adds no history events');

    const killedAt = Date.now();
    execFileSync('docker', ['kill', ready.runtimeIds[0] as string], { env: process.env, stdio: 'ignore' });
    let status = await worker.sandboxes.status('death-told');
    while (status.health.restarts === 0 && Date.now() - killedAt < 30_000) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      status = await worker.sandboxes.status('death-told');
    }
    assert.equal(status.health.restarts, 1, `restarted within 30 s of the kill: ${status.waitingFor}`);
    assert.equal(status.state, 'READY');
    assert.notDeepEqual(status.runtimeIds, ready.runtimeIds, 'a new container');
    assert.ok(worker.store.sandboxes.audit('death-told').some((op) => op.action === 'emulator_restarted'));
    await worker.sandboxes.destroy('death-told');
    await handle.result();
    // The teardown's own stop is the worker's doing, not a death: only the kill was told.
    const signals = ((await handle.fetchHistory()).events ?? []).filter((event) => event.workflowExecutionSignaledEventAttributes?.signalName === checkHealthSignal.name);
    assert.equal(signals.length, 1, 'one checkHealth signal: the kill; none for the stop of the teardown');
  });
  test('`docker pause` of a READY moto sandbox is told by the engine too: restarted within seconds on a new container, the paused one removed (issue 39)', async () => {
    const ready = await worker.sandboxes.create({ id: 'pause-told', principal: 'agent-1', adapter: 'moto', services: ['s3'] }, { wait: 'ready' });
    const pausedAt = Date.now();
    execFileSync('docker', ['pause', ready.runtimeIds[0] as string], { env: process.env, stdio: 'ignore' });
    let status = await worker.sandboxes.status('pause-told');
    while (status.health.restarts === 0 && Date.now() - pausedAt < 30_000) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      status = await worker.sandboxes.status('pause-told');
    }
    assert.equal(status.health.restarts, 1, `restarted within 30 s of the pause, with the timer an hour away: ${status.waitingFor}`);
    assert.notDeepEqual(status.runtimeIds, ready.runtimeIds, 'a new container');
    assert.throws(() => execFileSync('docker', ['unpause', ready.runtimeIds[0] as string], { env: process.env, stdio: 'ignore' }), 'the paused one is gone');
    await worker.sandboxes.destroy('pause-told');
  });
});
