import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { AdapterContext } from '../src/adapters/cloud-emulator-adapter';
import { ContainerEmulatorAdapter } from '../src/adapters/container-emulator';
import { createFlociAdapter, flociEnvironment } from '../src/adapters/floci-adapter';
import { flociHealthProbe } from '../src/adapters/floci-health';
import { freeLoopbackPort } from '../src/adapters/free-port';
import { waitUntilHealthy } from '../src/adapters/health-gate';
import { loadConfig } from '../src/config/config';
import { SANDBOX_ID_LABEL } from '../src/domain/docker-labels';
import { SandboxPlaneError } from '../src/domain/errors';
import { SERVICE_CATALOGS } from '../src/domain/service-catalog';
import { DockerContainerBroker } from '../src/docker';
import { isListening } from './helpers/free-port';

const catalog = SERVICE_CATALOGS.floci;
const probe = flociHealthProbe(catalog);
const context: AdapterContext = { heartbeat: () => undefined };

/** Answers recorded from Floci 1.7 (trimmed), and the ways a fake or sick one answers. */
const HEALTH_JSON = JSON.stringify({
  services: { s3: 'running', sqs: 'running', dynamodb: 'running', lambda: 'running', rds: 'running' },
  edition: 'community',
  original_edition: 'floci-always-free',
  version: '1.7.2',
});
const INIT_READY = JSON.stringify({ completed: { boot: true, start: true, ready: true, shutdown: false }, scripts: {} });
const INIT_BOOTING = JSON.stringify({ completed: { boot: true, start: false, ready: false, shutdown: false }, scripts: {} });

type Scenario = 'healthy' | 'html' | 'error' | 'slow' | 'init-not-ready';

describe('Floci health, against a stand-in replaying recorded answers', () => {
  let scenario: Scenario = 'healthy';
  let endpoint: string;
  const server = http.createServer((request, response) => {
    const send = (status: number, body: string, type = 'application/json') => response.writeHead(status, { 'content-type': type }).end(body);
    if (scenario === 'html') return send(200, '<html><body>Welcome to the captive portal</body></html>', 'text/html');
    if (scenario === 'error') return send(500, '{"error": "boom"}');
    if (scenario === 'slow') return void setTimeout(() => send(200, request.url === '/_floci/init' ? INIT_READY : HEALTH_JSON), 3_000);
    if (request.url === '/_floci/health') return send(200, HEALTH_JSON);
    if (request.url === '/_floci/init') return send(200, scenario === 'init-not-ready' ? INIT_BOOTING : INIT_READY);
    return send(404, '{}');
  });

  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('healthy JSON and init ready: healthy, with registered services kept apart from ready ones', async () => {
    scenario = 'healthy';
    const report = await probe(endpoint, AbortSignal.timeout(2_000));
    assert.equal(report.healthy, true);
    assert.deepEqual(report.registeredServices, ['dynamodb', 'lambda', 'rds', 's3', 'sqs']);
    assert.deepEqual(report.readyServices, ['dynamodb', 's3', 'sqs'], 'Docker-backed services are registered, not ready');
    assert.match(report.detail, /1\.7\.2/);
  });

  test('a 200 with HTML is not a live emulator', async () => {
    scenario = 'html';
    const report = await probe(endpoint, AbortSignal.timeout(2_000));
    assert.equal(report.healthy, false);
    assert.match(report.detail, /answered 200 but not JSON/);
  });

  test('a 500 is not healthy', async () => {
    scenario = 'error';
    const report = await probe(endpoint, AbortSignal.timeout(2_000));
    assert.equal(report.healthy, false);
    assert.match(report.detail, /HTTP 500/);
  });

  test('init not ready is not healthy, though health answers', async () => {
    scenario = 'init-not-ready';
    const report = await probe(endpoint, AbortSignal.timeout(2_000));
    assert.equal(report.healthy, false);
    assert.equal(report.detail, 'Floci init has not reached ready');
    assert.equal(report.registeredServices.length, 5);
  });

  test('the health gate gives up on a slow emulator with EMULATOR_UNHEALTHY and the last reason', async () => {
    scenario = 'slow';
    const beats: unknown[] = [];
    await assert.rejects(
      waitUntilHealthy(probe, endpoint, { heartbeat: (details) => beats.push(details) }, { timeoutMs: 1_500, attemptTimeoutMs: 500 }),
      (err: unknown) =>
        err instanceof SandboxPlaneError && err.code === 'EMULATOR_UNHEALTHY' && !err.retryable && /timeout|aborted/i.test(err.message),
    );
    assert.ok(beats.length >= 1, 'the gate heartbeats while it waits');
  });

  test('the health gate passes once the emulator turns healthy', async () => {
    scenario = 'init-not-ready';
    setTimeout(() => (scenario = 'healthy'), 400);
    const report = await waitUntilHealthy(probe, endpoint, context, { timeoutMs: 5_000 });
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

  test('an image pinned only by tag is refused by the configuration', () => {
    assert.throws(() => loadConfig({ SANDBOXPLANE_FLOCI_IMAGE: 'floci/floci:latest' }), /SANDBOXPLANE_FLOCI_IMAGE: must be pinned by digest/);
    const digest = `floci/floci@sha256:${'a'.repeat(64)}`;
    assert.equal(loadConfig({ SANDBOXPLANE_FLOCI_IMAGE: digest }).emulators.flociImage, digest);
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
      healthTimeoutMs: 3_000,
      probe,
      hostPort: freeLoopbackPort,
      environment: ({ labels, baseUrl }) => flociEnvironment(baseUrl, labels),
      listResources: async () => [],
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
    assert.deepEqual(published?.map((port) => [port.containerPort, port.hostIp]), [[4566, '127.0.0.1']], 'published on loopback only');

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

describe('Floci, live', () => {
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
  const skip = present ? false : 'needs a live Floci image: set SANDBOXPLANE_FLOCI_IMAGE to floci/floci@sha256:<digest> present in the engine';

  test('provision, health with registered beside ready services, S3 through the clientConfig, destroy', { skip }, async () => {
    const broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
    const adapter = createFlociAdapter({ broker, image: image as string, healthTimeoutMs: 60_000 });
    const sandboxId = `floci-live-${Date.now()}`;
    try {
      const provisioned = await adapter.provision(adapter.launchPlan({ sandboxId, services: ['s3', 'lambda'], labels: {} }), context);
      const health = await adapter.health(sandboxId);
      assert.ok(health.registeredServices.includes('lambda'));
      assert.ok(!health.readyServices.includes('lambda'));
      const resources = await adapter.listResources(sandboxId, ['s3']);
      assert.deepEqual(resources, []);
      assert.match(provisioned.endpoint, /^http:\/\/127\.0\.0\.1:/);
    } finally {
      const report = await adapter.destroy(sandboxId, context);
      assert.deepEqual(report.remaining, []);
    }
  });
});
