/**
 * The health watch (DESIGN §2): a READY sandbox whose emulator dies does not stay READY
 * with a dead endpoint. It is restarted once — its state is lost, and `waitingFor` says
 * so — and a second death ends it FAILED with everything torn down.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';
import { SANDBOX_ID_LABEL } from '../src/domain/docker-labels';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import { DockerContainerBroker } from '../src/docker';
import { isListening } from './harness/free-port';
import { testTemporalAddress } from './harness/test-temporal';
import { startTestWorker, type TestWorker } from './harness/test-worker';

const motoImage = process.env.SANDBOXPLANE_MOTO_IMAGE;

/** Waits until the sandbox's status satisfies `done` (tests may look repeatedly; product code waits inside Temporal). */
async function waitForStatus(worker: TestWorker, id: string, done: (status: SandboxStatus) => boolean, what: string, timeoutMs = 60_000): Promise<SandboxStatus> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await worker.sandboxes.status(id);
    if (done(status)) return status;
    if (Date.now() > deadline) assert.fail(`sandbox ${id} never got ${what}: ${status.state}, health ${JSON.stringify(status.health)}; ${status.waitingFor}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const actionsOf = (worker: TestWorker, id: string) => worker.store.sandboxes.audit(id).map((op) => `${op.action}:${op.actor}`);

describe('the health watch of READY sandboxes (real dev server)', () => {
  let worker: TestWorker;

  before(async () => {
    worker = await startTestWorker(await testTemporalAddress(), {
      env: {
        SANDBOXPLANE_HEALTH_INTERVAL: '1s',
        ...(motoImage === undefined ? {} : { SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1', SANDBOXPLANE_MOTO_IMAGE: motoImage }),
      },
    });
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
  });
  after(async () => worker?.stop());

  test('a healthy sandbox is seen healthy: status.health says ok and when it looked', async () => {
    const created = await worker.sandboxes.create({ id: 'health-ok', principal: 'agent-1', services: ['s3'] }, { wait: 'ready' });
    assert.deepEqual(created.runtimeIds, ['memory-health-ok']);
    const seen = await waitForStatus(worker, 'health-ok', (status) => status.health.status === 'ok', 'a health check');
    assert.equal(seen.state, 'READY');
    assert.equal(seen.health.restarts, 0);
    assert.ok(seen.health.checkedAt !== null && Date.parse(seen.health.checkedAt) > Date.parse(created.createdAt));
    await worker.sandboxes.destroy('health-ok');
  });

  test('an emulator that dies is restarted once (state lost, said so); a second death ends the sandbox FAILED, torn down', async () => {
    await worker.sandboxes.create({ id: 'health-dies', principal: 'agent-2', services: ['s3'] }, { wait: 'ready' });
    await worker.memory.destroy('health-dies'); // the emulator dies under the sandbox

    const restarted = await waitForStatus(worker, 'health-dies', (status) => status.health.restarts === 1, 'a restart');
    assert.equal(restarted.state, 'READY');
    assert.equal(restarted.health.status, 'ok');
    assert.match(restarted.waitingFor, /restarted at .*everything created in the sandbox before then is lost/);
    assert.ok(worker.memory.liveSandboxIds().includes('health-dies'), 'a fresh emulator runs');
    assert.ok(actionsOf(worker, 'health-dies').includes('emulator_restarted:health-watch'));

    await worker.memory.destroy('health-dies'); // and dies again
    const final = (await worker.client.workflow.getHandle('sandbox-health-dies').result()) as SandboxStatus;
    assert.equal(final.state, 'FAILED');
    assert.equal(final.error?.code, 'EMULATOR_DIED');
    assert.match(final.error?.message ?? '', /again after one restart/);
    assert.ok(!worker.memory.liveSandboxIds().includes('health-dies'), 'nothing left running');
    assert.equal(worker.store.sandboxes.state('health-dies'), 'FAILED', 'the row no longer holds quota');
    assert.deepEqual(actionsOf(worker, 'health-dies').slice(-2), ['destroying:health-watch', 'destroyed:worker']);
  });

  test(
    "moto: `docker kill` of a READY sandbox's container → a new container on a new endpoint, the dead one removed",
    { skip: motoImage === undefined && 'needs the moto image (SANDBOXPLANE_MOTO_IMAGE, built by scripts/build-moto-image.sh)' },
    async () => {
      const broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
      const created = await worker.sandboxes.create({ id: 'health-moto', principal: 'agent-3', adapter: 'moto', services: ['s3'] }, { wait: 'ready' });
      try {
        const [first] = created.runtimeIds;
        assert.ok(first !== undefined);
        execFileSync('docker', ['kill', first], { env: process.env, stdio: 'ignore' });
        assert.equal((await broker.inspect(first)).state === 'running', false, 'the emulator is dead');

        const restarted = await waitForStatus(worker, 'health-moto', (status) => status.health.restarts === 1, 'a restart', 90_000);
        assert.equal(restarted.state, 'READY');
        assert.notDeepEqual(restarted.runtimeIds, created.runtimeIds, 'a new container');
        const containers = await broker.list({ [SANDBOX_ID_LABEL]: 'health-moto' });
        assert.deepEqual(
          containers.map((container) => container.id),
          [...restarted.runtimeIds],
          'exactly one container: the new one',
        );
        assert.ok(restarted.endpoint !== null && (await isListening(Number(new URL(restarted.endpoint).port))), 'the new endpoint answers');
        assert.equal(restarted.clientConfig?.endpoint, restarted.endpoint, 'the client settings follow the new endpoint');
        // The new emulator minted new credentials: status shows them, the agent's old ones are refused.
        assert.ok(created.clientConfig !== null && restarted.clientConfig !== null);
        assert.notEqual(restarted.clientConfig.credentials.accessKeyId, created.clientConfig.credentials.accessKeyId);
        assert.match(restarted.waitingFor, /credentials are new/);
        await assert.rejects(new S3Client({ ...created.clientConfig, endpoint: restarted.endpoint }).send(new ListBucketsCommand({})), { name: 'InvalidAccessKeyId' });
        assert.deepEqual((await new S3Client(restarted.clientConfig).send(new ListBucketsCommand({}))).Buckets ?? [], []);
      } finally {
        await worker.sandboxes.destroy('health-moto');
      }
      assert.deepEqual(await broker.list({ [SANDBOX_ID_LABEL]: 'health-moto' }), []);
    },
  );
  for (const [how, freeze] of [
    ['docker pause', (id: string) => execFileSync('docker', ['pause', id], { env: process.env, stdio: 'ignore' })],
    ['SIGSTOP of its emulator', (id: string) => execFileSync('docker', ['kill', '--signal', 'STOP', id], { env: process.env, stdio: 'ignore' })],
  ] as const) {
    test(
      `moto: a READY sandbox's emulator frozen by ${how} is restarted like a dead one, and the old container never comes back (issue 39)`,
      { skip: motoImage === undefined && 'needs the moto image (SANDBOXPLANE_MOTO_IMAGE, built by scripts/build-moto-image.sh)' },
      async () => {
        const broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
        const id = `health-frozen-${how.startsWith('docker') ? 'pause' : 'stop'}`;
        const created = await worker.sandboxes.create({ id, principal: 'agent-3', adapter: 'moto', services: ['s3'] }, { wait: 'ready' });
        try {
          const [first] = created.runtimeIds;
          assert.ok(first !== undefined);
          freeze(first);
          const restarted = await waitForStatus(worker, id, (status) => status.health.restarts === 1, 'a restart', 60_000);
          assert.equal(restarted.state, 'READY');
          assert.notDeepEqual(restarted.runtimeIds, created.runtimeIds, 'a new container');
          assert.ok(restarted.clientConfig !== null);
          assert.deepEqual((await new S3Client(restarted.clientConfig).send(new ListBucketsCommand({}))).Buckets ?? [], [], 'the new emulator answers');
          // The frozen one was removed: unpausing it (or continuing it) cannot bring a second emulator of the sandbox back.
          assert.throws(() => execFileSync('docker', ['unpause', first], { env: process.env, stdio: 'ignore' }));
          assert.deepEqual(
            (await broker.list({ [SANDBOX_ID_LABEL]: id })).map((container) => container.id),
            [...restarted.runtimeIds],
          );
        } finally {
          await worker.sandboxes.destroy(id);
        }
      },
    );
  }
});
