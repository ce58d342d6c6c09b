import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { CreateQueueCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { AdapterContext } from '../src/adapters/cloud-emulator-adapter';
import { ContainerEmulatorAdapter } from '../src/adapters/container-emulator';
import { createFlociAdapter, flociEnvironment } from '../src/adapters/floci-adapter';
import { flociHealthProbe } from '../src/adapters/floci-health';
import { freeLoopbackPort } from '../src/adapters/free-port';
import { waitUntilHealthy } from '../src/adapters/health-gate';
import { loadConfig } from '../src/config/config';
import { clientConfigFor } from '../src/domain/client-config';
import { SANDBOX_ID_LABEL } from '../src/domain/docker-labels';
import { SandboxPlaneError } from '../src/domain/errors';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import { SERVICE_CATALOGS } from '../src/domain/service-catalog';
import { DockerContainerBroker } from '../src/docker';
import { createTableCommand } from './helpers/aws-fixtures';
import { runCli } from './harness/cli';
import { isListening } from './harness/free-port';
import { testTemporalAddress } from './harness/test-temporal';
import { startTestWorker, type TestWorker } from './harness/test-worker';

const catalog = SERVICE_CATALOGS.floci;
const probe = flociHealthProbe(catalog);
const context: AdapterContext = { heartbeat: () => undefined };

/**
 * Answers recorded from Floci 1.7.0 built from source (its health map trimmed from 80
 * keys: Floci's own names `states`, `monitoring`, `email`, `es`, and no `sts`), and the
 * ways a fake or sick one answers.
 */
const HEALTH_JSON = JSON.stringify({
  original_edition: 'floci-always-free',
  version: '1.7.0',
  services: {
    s3: 'running',
    sqs: 'running',
    dynamodb: 'running',
    lambda: 'running',
    rds: 'running',
    states: 'running',
    monitoring: 'running',
    email: 'running',
    es: 'running',
    kms: 'available',
  },
  edition: 'community',
});
const STS_ANSWER =
  '<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult><UserId>000000000000</UserId>' +
  '<Account>000000000000</Account><Arn>arn:aws:iam::000000000000:root</Arn></GetCallerIdentityResult></GetCallerIdentityResponse>';
const INIT_READY = JSON.stringify({ completed: { boot: true, start: true, ready: true, shutdown: false }, scripts: {} });
const INIT_BOOTING = JSON.stringify({ completed: { boot: true, start: false, ready: false, shutdown: false }, scripts: {} });

type Scenario = 'healthy' | 'no-sts' | 'html' | 'error' | 'slow' | 'init-not-ready';

describe('Floci health, against a stand-in replaying recorded answers', () => {
  let scenario: Scenario = 'healthy';
  let endpoint: string;
  const server = http.createServer((request, response) => {
    const send = (status: number, body: string, type = 'application/json') => response.writeHead(status, { 'content-type': type }).end(body);
    if (scenario === 'html') return send(200, '<html><body>Welcome to the captive portal</body></html>', 'text/html');
    if (scenario === 'error') return send(500, '{"error": "boom"}');
    if (scenario === 'slow') return void setTimeout(() => send(200, request.url === '/_floci/init' ? INIT_READY : HEALTH_JSON), 3_000);
    if (request.url === '/_floci/health') return send(200, HEALTH_JSON);
    const stsScope = /\/sts\/aws4_request/.test(request.headers.authorization ?? '');
    if (request.method === 'POST' && request.url === '/' && stsScope && scenario !== 'no-sts') return send(200, STS_ANSWER, 'text/xml');
    if (request.url === '/_floci/init') return send(200, scenario === 'init-not-ready' ? INIT_BOOTING : INIT_READY);
    return send(404, '{}');
  });

  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('healthy JSON and init ready: healthy, in our service names, registered kept apart from ready', async () => {
    scenario = 'healthy';
    const report = await probe({ endpoint }, AbortSignal.timeout(2_000));
    assert.equal(report.healthy, true);
    assert.deepEqual(report.registeredServices, ['cloudwatch', 'dynamodb', 'kms', 'lambda', 'opensearch', 'rds', 's3', 'ses', 'sqs', 'stepfunctions', 'sts']);
    assert.deepEqual(
      report.readyServices,
      ['cloudwatch', 'dynamodb', 's3', 'ses', 'sqs', 'stepfunctions', 'sts'],
      'Docker-backed services are registered, not ready; a service Floci lists as `available` (disabled) is not ready',
    );
    assert.match(report.detail, /^Floci 1\.7\.0, 10 services in its health map$/);
  });

  test('sts, which the health map never lists, is ready only when it answers', async () => {
    scenario = 'no-sts';
    const report = await probe({ endpoint }, AbortSignal.timeout(2_000));
    assert.equal(report.healthy, true);
    assert.ok(!report.registeredServices.includes('sts'));
    assert.ok(!report.readyServices.includes('sts'));
  });

  test('a 200 with HTML is not a live emulator', async () => {
    scenario = 'html';
    const report = await probe({ endpoint }, AbortSignal.timeout(2_000));
    assert.equal(report.healthy, false);
    assert.match(report.detail, /answered 200 but not JSON/);
  });

  test('a 500 is not healthy', async () => {
    scenario = 'error';
    const report = await probe({ endpoint }, AbortSignal.timeout(2_000));
    assert.equal(report.healthy, false);
    assert.match(report.detail, /HTTP 500/);
  });

  test('init not ready is not healthy, though health answers', async () => {
    scenario = 'init-not-ready';
    const report = await probe({ endpoint }, AbortSignal.timeout(2_000));
    assert.equal(report.healthy, false);
    assert.equal(report.detail, 'Floci init has not reached ready');
    assert.equal(report.registeredServices.length, 10, 'the services listed under a health key; sts is probed only once Floci is ready');
  });

  test('the health gate gives up on a slow emulator with EMULATOR_UNHEALTHY and the last reason', async () => {
    scenario = 'slow';
    const beats: unknown[] = [];
    await assert.rejects(
      waitUntilHealthy(probe, { endpoint }, { heartbeat: (details) => beats.push(details) }, { timeoutMs: 1_500, attemptTimeoutMs: 500 }),
      (err: unknown) => err instanceof SandboxPlaneError && err.code === 'EMULATOR_UNHEALTHY' && !err.retryable && /timeout|aborted/i.test(err.message),
    );
    assert.ok(beats.length >= 1, 'the gate heartbeats while it waits');
  });

  test('the health gate passes once the emulator turns healthy', async () => {
    scenario = 'init-not-ready';
    setTimeout(() => (scenario = 'healthy'), 400);
    const report = await waitUntilHealthy(probe, { endpoint }, context, { timeoutMs: 5_000 });
    assert.equal(report.healthy, true);
  });
});

describe('Floci launch plan', () => {
  test('FLOCI_BASE_URL is the published URL, our labels become FLOCI_DOCKER_EXTRA_LABELS_*, nothing touches process.env', () => {
    const before = { ...process.env };
    const environment = flociEnvironment('http://127.0.0.1:41234', { 'io.sandboxplane.sandbox-id': 'abc', 'io.sandboxplane.adapter': 'floci' });
    assert.equal(environment.FLOCI_BASE_URL, 'http://127.0.0.1:41234');
    assert.equal(environment.FLOCI_DOCKER_EXTRA_LABELS_0__KEY, 'io.sandboxplane.adapter');
    assert.equal(environment.FLOCI_DOCKER_EXTRA_LABELS_1__KEY, 'io.sandboxplane.sandbox-id');
    assert.equal(environment.FLOCI_DOCKER_EXTRA_LABELS_1__VALUE, 'abc');
    assert.ok(!Object.keys(environment).some((key) => key.startsWith('AWS_') || key === 'FLOCI_DOCKER_DOCKER_HOST'));
    assert.deepEqual({ ...process.env }, before);
  });

  test('an image pinned only by tag is refused by the configuration; an id (a local build) or a digest is taken', () => {
    assert.throws(() => loadConfig({ SANDBOXPLANE_FLOCI_IMAGE: 'floci/floci:latest' }), /SANDBOXPLANE_FLOCI_IMAGE: must be an image id .* a tag can move/);
    for (const image of [`floci/floci@sha256:${'a'.repeat(64)}`, `localhost:5000/floci/floci@sha256:${'a'.repeat(64)}`, `sha256:${'a'.repeat(64)}`]) {
      assert.equal(loadConfig({ SANDBOXPLANE_FLOCI_IMAGE: image }).emulators.flociImage, image);
    }
  });
});

describe('the container emulator path on a real engine, with a stand-in Floci', () => {
  const broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
  const testImage = process.env.SANDBOXPLANE_TEST_IMAGE ?? 'local/sandboxplane-testhttp:1';
  let imageId: string;
  const sandboxIds: string[] = [];

  /** busybox answering like Floci: it writes the recorded documents, then serves them. */
  function standIn(options: { initReady: boolean }) {
    const init = options.initReady ? INIT_READY : INIT_BOOTING;
    const script = [
      'mkdir -p /tmp/www/_floci',
      `printf '%s' '${HEALTH_JSON}' > /tmp/www/_floci/health`,
      `printf '%s' '${init}' > /tmp/www/_floci/init`,
      'printf "%s" "$FLOCI_BASE_URL" > /tmp/www/base-url',
      'exec httpd -f -p 4566 -h /tmp/www',
    ].join(' && ');
    return new ContainerEmulatorAdapter({
      adapter: 'floci',
      catalog,
      broker,
      image: imageId,
      command: ['/bin/sh', '-c', script],
      containerPort: 4566,
      region: 'us-east-1',
      memoryBytes: 64 * 1024 * 1024,
      pidsLimit: 32,
      nanoCpus: 500_000_000,
      healthTimeoutMs: 3_000,
      probe,
      hostPort: freeLoopbackPort,
      environment: ({ labels, baseUrl }) => flociEnvironment(baseUrl, labels),
      listResources: async () => ({ resources: [], unlisted: [] }),
    });
  }

  before(() => {
    imageId = execFileSync('docker', ['image', 'inspect', '--format', '{{.Id}}', testImage], { encoding: 'utf8' }).trim();
  });
  after(async () => {
    for (const id of sandboxIds) {
      for (const container of await broker.list({ [SANDBOX_ID_LABEL]: id })) await broker.remove(container.id, { force: true });
    }
  });

  test('provision: labelled container on loopback, FLOCI_BASE_URL matches; destroy leaves nothing and closes the port', async () => {
    const sandboxId = `floci-standin-${Date.now()}`;
    sandboxIds.push(sandboxId);
    const adapter = standIn({ initReady: true });
    const plan = adapter.launchPlan({ sandboxId, services: ['s3'], labels: { team: 'qa' } });
    assert.equal(plan.labels[SANDBOX_ID_LABEL], sandboxId);
    assert.equal(plan.labels['io.sandboxplane.label.team'], 'qa');

    const provisioned = await adapter.provision(plan, context);
    assert.match(provisioned.endpoint, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(await (await fetch(`${provisioned.endpoint}/base-url`)).text(), provisioned.endpoint);
    const health = await adapter.health(sandboxId);
    assert.equal(health.healthy, true);

    const [container] = await broker.list({ [SANDBOX_ID_LABEL]: sandboxId });
    assert.equal(container?.labels['io.sandboxplane.adapter'], 'floci');
    const published = container?.ports.filter((port) => port.hostPort !== undefined);
    assert.deepEqual(
      published?.map((port) => [port.containerPort, port.hostIp]),
      [[4566, '127.0.0.1']],
      'published on loopback only',
    );

    const report = await adapter.destroy(sandboxId, context);
    assert.equal(report.removed.length, 1);
    assert.deepEqual(report.remaining, []);
    assert.deepEqual(await broker.list({ [SANDBOX_ID_LABEL]: sandboxId }), []);
    assert.equal(await isListening(Number(new URL(provisioned.endpoint).port)), false);
  });

  test('a health-gate timeout tears down what it created and fails with EMULATOR_UNHEALTHY', async () => {
    const sandboxId = `floci-unhealthy-${Date.now()}`;
    sandboxIds.push(sandboxId);
    const adapter = standIn({ initReady: false });
    await assert.rejects(adapter.provision(adapter.launchPlan({ sandboxId, services: ['s3'], labels: {} }), context), (err: unknown) => {
      assert.ok(err instanceof SandboxPlaneError);
      assert.equal(err.code, 'EMULATOR_UNHEALTHY');
      assert.match(err.message, /init has not reached ready/);
      return true;
    });
    assert.deepEqual(await broker.list({ [SANDBOX_ID_LABEL]: sandboxId }), [], 'no container left behind');
  });

  test('listResources without a running emulator is RESOURCE_DISCOVERY_FAILED, never an empty list', async () => {
    await assert.rejects(standIn({ initReady: true }).listResources('no-such-sandbox', ['s3']), (err: unknown) => {
      return err instanceof SandboxPlaneError && err.code === 'RESOURCE_DISCOVERY_FAILED';
    });
  });
});

describe('Floci, live (opt-in: a real Floci image)', () => {
  const image = process.env.SANDBOXPLANE_FLOCI_IMAGE;
  let present = false;
  if (image !== undefined) {
    try {
      execFileSync('docker', ['image', 'inspect', image], { stdio: 'ignore' });
      present = true;
    } catch {
      present = false;
    }
  }
  const skip = present
    ? false
    : 'needs a live Floci image: set SANDBOXPLANE_FLOCI_IMAGE to one present in the engine (an image id or name@sha256:<digest>; docs/adapters.md says how to build one)';
  const broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
  const sandboxIds: string[] = [];
  let worker: TestWorker | undefined;

  after(async () => {
    await worker?.stop();
    for (const id of sandboxIds) {
      for (const container of await broker.list({ [SANDBOX_ID_LABEL]: id })) await broker.remove(container.id, { force: true });
    }
  });

  test('health in our names; S3, SQS and DynamoDB through the clientConfig; listResources names lambda; destroy', { skip }, async () => {
    const adapter = createFlociAdapter({ broker, image: image as string, healthTimeoutMs: 60_000 });
    const sandboxId = `floci-live-${Date.now()}`;
    sandboxIds.push(sandboxId);
    const services = ['s3', 'sqs', 'dynamodb', 'sts', 'stepfunctions', 'lambda'];
    try {
      const provisioned = await adapter.provision(adapter.launchPlan({ sandboxId, services, labels: {} }), context);
      assert.match(provisioned.endpoint, /^http:\/\/127\.0\.0\.1:\d+$/);

      const health = await adapter.health(sandboxId);
      assert.equal(health.healthy, true);
      assert.deepEqual(health.registeredServices, Object.keys(catalog).sort(), 'every catalog service is found under its Floci key (sts by its answer)');
      const ready = Object.keys(catalog)
        .filter((service) => catalog[service]?.fidelity !== 'UNAVAILABLE')
        .sort();
      assert.deepEqual(health.readyServices, ready);
      for (const service of ['sts', 'stepfunctions', 'cloudwatch', 'ses']) assert.ok(health.readyServices.includes(service), `${service} is ready`);
      assert.ok(!health.readyServices.includes('lambda'));

      const config = clientConfigFor('floci', provisioned.endpoint, provisioned.region);
      const s3 = new S3Client(config);
      const sqs = new SQSClient(config);
      const dynamodb = new DynamoDBClient(config);
      try {
        await s3.send(new CreateBucketCommand({ Bucket: 'agent-bucket' }));
        await s3.send(new PutObjectCommand({ Bucket: 'agent-bucket', Key: 'hello.txt', Body: 'hello' }));
        const object = await s3.send(new GetObjectCommand({ Bucket: 'agent-bucket', Key: 'hello.txt' }));
        assert.equal(await object.Body?.transformToString(), 'hello');
        const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'agent-queue' }));
        assert.equal(new URL(QueueUrl ?? '').port, new URL(provisioned.endpoint).port, 'the QueueUrl points at the sandbox port (FLOCI_BASE_URL)');
        await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'ping' }));
        const received = await sqs.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 1 }));
        assert.equal(received.Messages?.[0]?.Body, 'ping');
        await dynamodb.send(createTableCommand('agent-table'));
      } finally {
        s3.destroy();
        sqs.destroy();
        dynamodb.destroy();
      }

      const started = Date.now();
      const listing = await adapter.listResources(sandboxId, ['s3', 'sqs', 'dynamodb', 'lambda']);
      assert.ok(Date.now() - started < 10_000, 'in seconds');
      const found = listing.resources.map((resource) => `${resource.service}/${resource.type}/${resource.id}`);
      for (const expected of ['s3/bucket/agent-bucket', 'sqs/queue/agent-queue', 'dynamodb/table/agent-table']) assert.ok(found.includes(expected), `${expected} in ${found.join(', ')}`);
      assert.deepEqual(
        listing.unlisted.map(({ service, kind }) => [service, kind]),
        [['lambda', 'unavailable']],
      );
    } finally {
      const report = await adapter.destroy(sandboxId, context);
      assert.deepEqual(report.remaining, []);
    }
  });

  test('through the plane: status shows honest markers; `sandboxctl resources` lists bucket and queue and names lambda, in seconds', { skip }, async () => {
    worker = await startTestWorker(await testTemporalAddress(), {
      env: { SANDBOXPLANE_FLAG_ADAPTER_FLOCI: '1', SANDBOXPLANE_FLOCI_IMAGE: image as string },
    });
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
    const id = `floci-plane-${Date.now()}`;
    sandboxIds.push(id);
    const ready = await worker.sandboxes.create(
      { id, principal: 'agent-1', adapter: 'floci', services: ['s3', 'sqs', 'sts', 'stepfunctions', 'lambda'], ttlSeconds: 600 },
      { wait: 'ready' },
    );
    assert.equal(ready.state, 'READY');
    const status = await runCli(['status', id, '--json'], worker.env);
    assert.equal(status.code, 0, status.stderr);
    assert.deepEqual((JSON.parse(status.stdout) as SandboxStatus).fidelity, {
      s3: 'HIGH',
      sqs: 'HIGH',
      sts: 'HIGH',
      stepfunctions: 'PARTIAL',
      lambda: 'UNAVAILABLE',
    });

    const config = ready.clientConfig;
    assert.ok(config);
    const s3 = new S3Client(config);
    const sqs = new SQSClient(config);
    try {
      await s3.send(new CreateBucketCommand({ Bucket: 'plane-bucket' }));
      await sqs.send(new CreateQueueCommand({ QueueName: 'plane-queue' }));
    } finally {
      s3.destroy();
      sqs.destroy();
    }

    const started = Date.now();
    const result = await runCli(['resources', id, '--json'], worker.env);
    const elapsedMs = Date.now() - started;
    assert.equal(result.code, 0, result.stderr);
    assert.ok(elapsedMs < 15_000, `resources took ${elapsedMs} ms (the CLI's own start included)`);
    const answer = JSON.parse(result.stdout) as {
      resources: { service: string; type: string; id: string }[];
      unlisted: { service: string; kind: string; reason: string }[];
      complete: boolean;
    };
    const found = answer.resources.map((resource) => `${resource.service}/${resource.type}/${resource.id}`);
    assert.ok(found.includes('s3/bucket/plane-bucket') && found.includes('sqs/queue/plane-queue'), found.join(', '));
    assert.deepEqual(
      answer.unlisted.map(({ service, kind }) => [service, kind]),
      [
        ['lambda', 'unavailable'],
        ['stepfunctions', 'not_listable'],
        ['sts', 'not_listable'],
      ],
      'named, never claimed empty',
    );
    assert.equal(answer.complete, false);
    await assert.rejects(worker.sandboxes.resources(id), (err: unknown) => err instanceof SandboxPlaneError && err.code === 'RESOURCES_PARTIAL');

    const human = await runCli(['resources', id], worker.env);
    assert.match(human.stdout, /^lambda {2}\(not listed: lambda is UNAVAILABLE here: /m);

    const destroyed = await worker.sandboxes.destroy(id, { reason: 'test over' });
    assert.equal(destroyed.state, 'DESTROYED');
    assert.deepEqual(await broker.list({ [SANDBOX_ID_LABEL]: id }), []);
  });
});
