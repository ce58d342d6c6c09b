/**
 * The broker's verbs as activities, run in Temporal's mock activity context against the
 * real engine: they heartbeat while they wait and fail with the taxonomy code as type.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { SANDBOX_ID_LABEL, sandboxContainerLabels } from '../../src/domain/docker-labels';
import { createDockerActivities } from '../../src/activities/docker-activities';
import { DockerContainerBroker, type ContainerBroker, type ContainerInfo, type ContainerSpecInput } from '../../src/docker';
import { MIB, engineDocker, removeSandboxContainers, requireEngineAndImage, uniqueSandboxId } from './docker-test-support';

/** The expected failures would otherwise be logged as warnings by the mock worker. */
function mockEnvironment(): MockActivityEnvironment {
  return new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') });
}

/** Runs `work` in the activity context; `run` itself cannot infer the result type. */
async function inActivity<R>(env: MockActivityEnvironment, work: () => Promise<R>): Promise<R> {
  return (await env.run(work)) as R;
}

describe('docker activities', () => {
  const docker = engineDocker();
  const sandboxId = uniqueSandboxId('activities');
  let imageId = '';
  let spec: ContainerSpecInput;

  before(async () => {
    imageId = await requireEngineAndImage(docker);
    spec = {
      image: imageId,
      labels: { ...sandboxContainerLabels(sandboxId, 'testhttp') },
      limits: { memoryBytes: 64 * MIB, pidsLimit: 32 },
      ports: [{ containerPort: 8080 }],
    };
  });

  after(async () => {
    await removeSandboxContainers(docker, sandboxId);
  });

  test('run, list, stop and remove, heartbeating while the engine works', async () => {
    const activities = createDockerActivities({
      broker: new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST }),
      heartbeatIntervalMs: 100,
    });
    const env = mockEnvironment();
    const heartbeats: unknown[] = [];
    env.on('heartbeat', (details: unknown) => heartbeats.push(details));

    const info = await inActivity(env, () => activities.runContainer(spec));
    assert.equal(info.state, 'running');
    assert.deepEqual(
      (await inActivity(env, () => activities.listContainers({ [SANDBOX_ID_LABEL]: sandboxId }))).map((entry) => entry.id),
      [info.id],
    );

    heartbeats.length = 0;
    // busybox as PID 1 ignores SIGTERM, so the engine waits the full timeout before killing it.
    const stopStarted = Date.now();
    assert.equal(await inActivity(env, () => activities.stopContainer(info.id, { timeoutSeconds: 2 })), 'stopped');
    const waitedMs = Date.now() - stopStarted;
    assert.ok(waitedMs >= 1500, `the stop waited ${waitedMs} ms`);
    assert.ok(heartbeats.length >= Math.floor(waitedMs / 200), `${heartbeats.length} heartbeats during a ${waitedMs} ms stop`);
    assert.deepEqual(heartbeats[0], { waitingFor: 'stop' });

    assert.equal((await inActivity(env, () => activities.inspectContainer(info.id))).state, 'exited');
    assert.equal(await inActivity(env, () => activities.removeContainer(info.id)), 'removed');
    assert.equal(await inActivity(env, () => activities.removeContainer(info.id)), 'already_gone');
  });

  test('failures carry the taxonomy code as type and its retry verdict', async () => {
    const activities = createDockerActivities({ broker: new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST }) });
    const env = mockEnvironment();
    await assert.rejects(inActivity(env, () => activities.runContainer({ ...spec, privileged: true })), (err: unknown) => {
      assert.ok(err instanceof ApplicationFailure);
      assert.equal(err.type, 'SPEC_PRIVILEGED');
      assert.equal(err.nonRetryable, true);
      return true;
    });

    const dead = createDockerActivities({ broker: new DockerContainerBroker({ dockerHost: 'unix:///nonexistent/docker.sock' }) });
    await assert.rejects(inActivity(env, () => dead.listContainers({})), (err: unknown) => {
      assert.ok(err instanceof ApplicationFailure);
      assert.equal(err.type, 'DOCKER_UNREACHABLE');
      assert.equal(err.nonRetryable, false);
      return true;
    });
  });

  test('a container that is not running after start is CONTAINER_NOT_RUNNING', async () => {
    // The engine cannot be made to report "exited" right after a start without a race, so
    // this broker answers as it would for a container whose process died at once.
    const exited: ContainerInfo = {
      id: 'c0ffee',
      name: 'exited',
      image: imageId,
      imageId,
      state: 'exited',
      labels: {},
      ports: [],
      createdAt: new Date().toISOString(),
      exitCode: 1,
      oomKilled: false,
      startedAt: null,
      finishedAt: null,
      limits: { memoryBytes: 64 * MIB, pidsLimit: 32 },
    };
    const broker: ContainerBroker = {
      run: async () => exited,
      inspect: async () => exited,
      list: async () => [],
      stop: async () => 'already_stopped',
      remove: async () => 'already_gone',
      ping: async () => ({ version: 'stub', endpoint: 'stub' }),
    };
    const env = mockEnvironment();
    await assert.rejects(inActivity(env, () => createDockerActivities({ broker }).runContainer(spec)), (err: unknown) => {
      assert.ok(err instanceof ApplicationFailure);
      assert.equal(err.type, 'CONTAINER_NOT_RUNNING');
      assert.equal(err.nonRetryable, true);
      assert.equal(err.message, 'Container c0ffee is exited (exit code 1) instead of running');
      return true;
    });
  });
});
