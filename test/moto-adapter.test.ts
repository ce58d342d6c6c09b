import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';
import { ContainerEmulatorAdapter } from '../src/adapters/container-emulator';
import { MOTO_PORT } from '../src/adapters/moto-guard';
import { fakeCredentialValues } from '../src/domain/client-config';
import { SANDBOX_ID_LABEL } from '../src/domain/docker-labels';
import { SandboxPlaneError } from '../src/domain/errors';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import { SERVICE_CATALOGS } from '../src/domain/service-catalog';
import { DockerContainerBroker } from '../src/docker';
import { createLogger } from '../src/logging/logger';
import { createTableCommand } from './helpers/aws-fixtures';
import { runCli } from './harness/cli';
import { waitForState } from './harness/eventually';
import { isListening } from './harness/free-port';
import { testTemporalAddress } from './harness/test-temporal';
import { startTestWorker, type TestWorker } from './harness/test-worker';

const motoImage = process.env.SANDBOXPLANE_MOTO_IMAGE;

function portOf(endpoint: string): number {
  return Number(new URL(endpoint).port);
}

describe('moto sandboxes end to end (real dev server, real engine, the locally built moto image)', () => {
  const broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
  const logLines: string[] = [];
  let worker: TestWorker;

  before(async () => {
    assert.ok(motoImage, 'the test runner exports SANDBOXPLANE_MOTO_IMAGE (scripts/build-moto-image.sh)');
    worker = await startTestWorker(await testTemporalAddress(), {
      env: { SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1', SANDBOXPLANE_MOTO_IMAGE: motoImage, SANDBOXPLANE_EXPIRY_WARNING: '1s' },
      logger: createLogger('debug', { write: (line: string) => void logLines.push(line) }),
    });
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
  });
  after(async () => {
    for (const container of await broker.list({ 'io.sandboxplane.adapter': 'moto' })) {
      if (container.labels[SANDBOX_ID_LABEL]?.startsWith('moto-')) await broker.remove(container.id, { force: true });
    }
    await worker?.stop();
  });

  test('create → bucket and table through the clientConfig → listResources shows them → destroy removes the container and closes the port', async () => {
    const ready = await worker.sandboxes.create({ id: 'moto-e2e', principal: 'agent-1', adapter: 'moto', services: ['s3', 'dynamodb'], ttlSeconds: 600 }, { wait: 'ready' });
    assert.equal(ready.state, 'READY');
    assert.match(ready.endpoint ?? '', /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.deepEqual(ready.fidelity, { dynamodb: 'HIGH', s3: 'HIGH' });
    const config = ready.clientConfig;
    assert.ok(config);
    assert.equal(config.endpoint, ready.endpoint);
    assert.equal(config.forcePathStyle, true);

    const s3 = new S3Client(config);
    const dynamodb = new DynamoDBClient(config);
    try {
      await s3.send(new CreateBucketCommand({ Bucket: 'agent-bucket' }));
      await dynamodb.send(createTableCommand('agent-table'));
    } finally {
      s3.destroy();
      dynamodb.destroy();
    }

    const resources = await worker.sandboxes.resources('moto-e2e');
    assert.deepEqual(resources.map((resource) => `${resource.service}/${resource.type}/${resource.id}`).sort(), ['dynamodb/table/agent-table', 's3/bucket/agent-bucket']);

    const containers = await broker.list({ [SANDBOX_ID_LABEL]: 'moto-e2e' });
    assert.equal(containers.length, 1);
    assert.equal(containers[0]?.labels['io.sandboxplane.adapter'], 'moto');

    const destroyed = await worker.sandboxes.destroy('moto-e2e', { reason: 'test over' });
    assert.equal(destroyed.state, 'DESTROYED');
    assert.deepEqual(await broker.list({ [SANDBOX_ID_LABEL]: 'moto-e2e' }), []);
    assert.equal(await isListening(portOf(ready.endpoint as string)), false);
  });

  test('two sandboxes at once are isolated: a bucket in one is absent in the other', async () => {
    const request = { principal: 'agent-2', adapter: 'moto' as const, services: ['s3'], ttlSeconds: 600 };
    const [a, b] = await Promise.all([
      worker.sandboxes.create({ ...request, id: 'moto-iso-a' }, { wait: 'ready' }),
      worker.sandboxes.create({ ...request, id: 'moto-iso-b' }, { wait: 'ready' }),
    ]);
    assert.notEqual(a.endpoint, b.endpoint);
    const s3a = new S3Client(a.clientConfig ?? {});
    const s3b = new S3Client(b.clientConfig ?? {});
    try {
      await s3a.send(new CreateBucketCommand({ Bucket: 'only-in-a' }));
      const inA = (await s3a.send(new ListBucketsCommand({}))).Buckets?.map((bucket) => bucket.Name);
      const inB = (await s3b.send(new ListBucketsCommand({}))).Buckets?.map((bucket) => bucket.Name) ?? [];
      assert.deepEqual(inA, ['only-in-a']);
      assert.deepEqual(inB, []);
    } finally {
      s3a.destroy();
      s3b.destroy();
    }
    await Promise.all([worker.sandboxes.destroy('moto-iso-a'), worker.sandboxes.destroy('moto-iso-b')]);
  });

  test('TTL expiry removes the container', async () => {
    const ready = await worker.sandboxes.create({ id: 'moto-ttl', principal: 'agent-3', adapter: 'moto', services: ['sqs'], ttlSeconds: 4 }, { wait: 'ready' });
    assert.equal((await broker.list({ [SANDBOX_ID_LABEL]: 'moto-ttl' })).length, 1);
    await waitForState(worker.sandboxes, 'moto-ttl', 'DESTROYED');
    assert.deepEqual(await broker.list({ [SANDBOX_ID_LABEL]: 'moto-ttl' }), []);
    assert.equal(await isListening(portOf(ready.endpoint as string)), false);
  });

  test('sandboxctl create --adapter moto --services s3,dynamodb --ttl 2m --wait --json returns READY with endpoint and clientConfig', async () => {
    const result = await runCli(['create', '--id', 'moto-cli', '--principal', 'agent-4', '--adapter', 'moto', '--services', 's3,dynamodb', '--ttl', '2m', '--wait', '--json'], worker.env);
    assert.equal(result.code, 0, result.stderr);
    const status = JSON.parse(result.stdout) as SandboxStatus;
    assert.equal(status.state, 'READY');
    assert.match(status.endpoint ?? '', /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(status.clientConfig?.endpoint, status.endpoint);
    assert.deepEqual(status.fidelity, { dynamodb: 'HIGH', s3: 'HIGH' });
    assert.ok(status.timeLeftSeconds !== null && status.timeLeftSeconds > 100 && status.timeLeftSeconds <= 120);
    await worker.sandboxes.destroy('moto-cli');
    assert.deepEqual(await broker.list({ [SANDBOX_ID_LABEL]: 'moto-cli' }), []);
  });

  test('no fake credential appears in the logs or the SQLite file', () => {
    const logs = logLines.join('\n');
    assert.ok(logs.includes('moto-e2e'), 'the logs did record the sandboxes');
    const database = Buffer.concat([worker.config.storePath, `${worker.config.storePath}-wal`].filter((file) => fs.existsSync(file)).map((file) => fs.readFileSync(file))).toString('latin1');
    assert.ok(database.includes('moto-e2e'), 'the projection did record the sandboxes');
    for (const secret of fakeCredentialValues()) {
      assert.ok(!logs.includes(secret), `logs contain ${secret}`);
      assert.ok(!database.includes(secret), `the SQLite file contains ${secret}`);
    }
  });
});

describe('moto health gate on the lifecycle', () => {
  test('a health-gate timeout fails the sandbox with EMULATOR_UNHEALTHY and leaves no container', async () => {
    assert.ok(motoImage, 'the test runner exports SANDBOXPLANE_MOTO_IMAGE');
    const worker = await startTestWorker(await testTemporalAddress(), {
      env: { SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1' },
      adapters: (memory, broker) => ({
        memory,
        moto: new ContainerEmulatorAdapter({
          adapter: 'moto',
          catalog: SERVICE_CATALOGS.moto,
          broker,
          image: motoImage,
          containerPort: MOTO_PORT,
          region: 'us-east-1',
          memoryBytes: 512 * 1024 * 1024,
          pidsLimit: 256,
          nanoCpus: 1_000_000_000,
          healthTimeoutMs: 2_000,
          probe: async () => ({ healthy: false, registeredServices: [], readyServices: [], detail: 'never healthy (test)' }),
          environment: () => ({}),
          listResources: async () => ({ resources: [], unlisted: [] }),
        }),
      }),
    });
    try {
      worker.store.policies.add({ principalPattern: '*', capability: 'cloud.sandbox', effect: 'allow' });
      await assert.rejects(
        worker.sandboxes.create({ id: 'moto-sick', principal: 'agent-1', adapter: 'moto', services: ['s3'] }, { wait: 'ready' }),
        (err: unknown) => err instanceof SandboxPlaneError && err.code === 'EMULATOR_UNHEALTHY' && /never healthy/.test(err.message),
      );
      const broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
      assert.deepEqual(await broker.list({ [SANDBOX_ID_LABEL]: 'moto-sick' }), []);
      assert.deepEqual(
        worker.store.sandboxes.audit('moto-sick').map((op) => op.action),
        ['requested', 'screened', 'placed', 'provision_failed'],
      );
    } finally {
      await worker.stop();
    }
  });
});
