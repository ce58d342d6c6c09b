/**
 * Observability's rules (DESIGN §17) without the servers: how the OpenTelemetry variables
 * are read, what the store role's metrics count (each audit row once, gauges from the
 * projection), the /metrics page (the plane's and the SDK's in one), and the plane's own
 * spans (a failure's code, never its message). test/observability.test.ts runs the
 * real Jaeger and Prometheus.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { context, propagation, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ConfigError, loadConfig, loadTraceExportSettings } from '../../src/config/config';
import { SandboxPlaneError } from '../../src/domain/errors';
import { createLogger } from '../../src/logging/logger';
import { Store } from '../../src/store';
import { serveMetrics } from '../../src/telemetry/metrics-server';
import { meterPools, planeRegistry } from '../../src/telemetry/plane-metrics';
import { activeTraceIds, inSpan } from '../../src/telemetry/spans';
import { startTracing, stopTracing, tracingClientInterceptors } from '../../src/telemetry/tracing';
import { meterStore } from '../../src/worker/store-metrics';
import { freePort } from '../harness/free-port';
import { projectionSnapshot } from '../helpers/projection-row';

/** One series' value in the registry's text, `undefined` when absent. Audit rows written just before are heard first. */
async function seriesValue(series: string): Promise<number | undefined> {
  await new Promise((resolve) => setImmediate(resolve));
  const line = (await planeRegistry.metrics()).split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('the OpenTelemetry variables', () => {
  test('an endpoint turns traces on, at its /v1/traces, over http/protobuf unless told', () => {
    assert.deepEqual(loadTraceExportSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318/' }), {
      url: 'http://127.0.0.1:4318/v1/traces',
      protocol: 'http/protobuf',
      serviceName: undefined,
    });
    assert.equal(loadTraceExportSettings({}), undefined, 'unset: off');
    assert.equal(loadConfig({}).telemetry.traces, undefined);
  });

  test('the traces-only variables win over the general ones, and OTEL_SERVICE_NAME is kept', () => {
    const settings = loadTraceExportSettings({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example:443/custom',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'plane-eu-1',
    });
    assert.deepEqual(settings, { url: 'https://traces.example:443/custom', protocol: 'http/json', serviceName: 'plane-eu-1' });
  });

  test('OTEL_SDK_DISABLED=true (any case), or an OTEL_TRACES_EXPORTER list without otlp, turns tracing off', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' };
    assert.equal(loadTraceExportSettings({ ...endpoint, OTEL_SDK_DISABLED: 'true' }), undefined);
    assert.equal(loadTraceExportSettings({ ...endpoint, OTEL_SDK_DISABLED: 'TRUE' }), undefined);
    assert.notEqual(loadTraceExportSettings({ ...endpoint, OTEL_SDK_DISABLED: 'no' }), undefined, 'anything but true is false');
    assert.equal(loadTraceExportSettings({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' }), undefined);
    assert.equal(loadTraceExportSettings({ ...endpoint, OTEL_TRACES_EXPORTER: 'console' }), undefined);
    assert.notEqual(loadTraceExportSettings({ ...endpoint, OTEL_TRACES_EXPORTER: 'otlp, console' }), undefined);
  });

  test('a protocol we do not speak is refused only when an endpoint asks for traces, naming the variable and what to set', () => {
    const refused = (env: Record<string, string>) => {
      try {
        loadTraceExportSettings(env);
      } catch (err) {
        assert.ok(err instanceof ConfigError);
        return err.message;
      }
      assert.fail(`accepted ${JSON.stringify(env)}`);
    };
    assert.match(
      refused({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
      /OTEL_EXPORTER_OTLP_PROTOCOL: must be http\/protobuf or http\/json \(got 'grpc'; grpc is not offered/,
    );
    assert.match(
      refused({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' }),
      /OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: must be/,
    );
    assert.equal(loadTraceExportSettings({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), undefined, 'no endpoint: nothing to refuse');
    assert.throws(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), /OTEL_EXPORTER_OTLP_PROTOCOL/);
    assert.match(refused({ OTEL_EXPORTER_OTLP_ENDPOINT: 'localhost:4318' }), /OTEL_EXPORTER_OTLP_ENDPOINT/);
    assert.match(refused({ OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://127.0.0.1/' }), /http:\/\/ or https:\/\//);
    assert.throws(() => loadConfig({ SANDBOXPLANE_METRICS_ADDRESS: '9464' }), /SANDBOXPLANE_METRICS_ADDRESS: must be host:port/);
    assert.equal(loadConfig({ SANDBOXPLANE_METRICS_ADDRESS: '127.0.0.1:9464' }).telemetry.metricsAddress, '127.0.0.1:9464');
  });

  test('a command reads only the tracing variables before it runs: another bad variable is its own error, later', () => {
    assert.equal(loadTraceExportSettings({ SANDBOXPLANE_DEFAULT_TTL: 'forever' }), undefined);
  });
});

describe("the store role's metrics", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-metrics-'));
  const store = Store.open(path.join(dir, 'plane.sqlite'));
  // Temporal's answers to the approvals gauge's visibility queries, as the test sets them.
  const running = { sandbox: 0, iac: 0, reachable: true };
  const queries: string[] = [];
  const stop = meterStore(store, 'plane-q', async (query) => {
    queries.push(query);
    if (!running.reachable) throw new Error('Temporal unreachable');
    return query.includes('IacState') ? running.iac : running.sandbox;
  });
  after(() => {
    stop();
    store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const step = (n: number, action: string, summary: Record<string, unknown> = {}) => ({ runId: 'r1', step: n, action, actor: 'worker', effect: action, reason: null, summary });

  test('a sandbox that reaches READY is one gauge count and one create → READY observation, however often its row is retried', async () => {
    const createdAt = new Date(Date.now() - 2_000).toISOString();
    const row = projectionSnapshot({ id: 'm-1', adapter: 'moto', runId: 'r1', createdAt });
    store.sandboxes.record({ ...row, state: 'PROVISIONING' }, step(1, 'screened'));
    store.sandboxes.record({ ...row, state: 'READY' }, step(2, 'ready', { warmPoolSlot: 'slot-1' }));
    // An activity retried after its write: the same step, found already there.
    store.sandboxes.record({ ...row, state: 'READY' }, step(2, 'ready', { warmPoolSlot: 'slot-1' }));

    assert.equal(await seriesValue('sandboxplane_sandboxes{state="READY",adapter="moto"}'), 1);
    assert.equal(await seriesValue('sandboxplane_sandboxes{state="PROVISIONING",adapter="moto"}'), 0, 'zeros are series too');
    assert.equal(await seriesValue('sandboxplane_create_ready_seconds_count{adapter="moto",source="pool",approval="none"}'), 1);
    const seconds = (await seriesValue('sandboxplane_create_ready_seconds_sum{adapter="moto",source="pool",approval="none"}')) ?? 0;
    assert.ok(seconds >= 2 && seconds < 30, `measured from the row's creation: ${seconds} s`);
  });

  test('a row whose transaction rolled back counts for nothing', async () => {
    const row = projectionSnapshot({ id: 'm-rolled', adapter: 'floci', runId: 'r1' });
    assert.throws(() =>
      store.sandboxes.atomically(() => {
        store.sandboxes.record({ ...row, state: 'READY' }, step(1, 'ready'));
        throw new Error('something after the write failed');
      }),
    );
    assert.equal(await seriesValue('sandboxplane_create_ready_seconds_count{adapter="floci",source="cold",approval="none"}'), undefined);
    store.sandboxes.record({ ...row, state: 'READY' }, step(1, 'ready'));
    assert.equal(await seriesValue('sandboxplane_create_ready_seconds_count{adapter="floci",source="cold",approval="none"}'), 1, 'written again, it counts');
  });

  test('an approved sandbox is labelled approval="required"; a fork from a snapshot source="snapshot"', async () => {
    const row = projectionSnapshot({ id: 'm-2', adapter: 'moto', runId: 'r1' });
    store.sandboxes.record({ ...row, state: 'AWAITING_APPROVAL' }, step(1, 'screened'));
    store.sandboxes.record({ ...row, state: 'PROVISIONING' }, step(2, 'approved'));
    store.sandboxes.record({ ...row, state: 'READY' }, step(3, 'ready', { fromSnapshot: 'snap-1' }));
    assert.equal(await seriesValue('sandboxplane_create_ready_seconds_count{adapter="moto",source="snapshot",approval="required"}'), 1);
  });

  test("approvals waiting are what Temporal counts of this plane's running workflows; no answer, no series", async () => {
    running.sandbox = 2;
    running.iac = 1;
    assert.equal(await seriesValue('sandboxplane_approvals_waiting{kind="sandbox"}'), 2);
    assert.equal(await seriesValue('sandboxplane_approvals_waiting{kind="iac"}'), 1);
    assert.ok(queries.includes('ExecutionStatus = "Running" AND TaskQueue = "plane-q" AND SandboxState = "AWAITING_APPROVAL"'), queries.join('\n'));
    assert.ok(queries.includes('ExecutionStatus = "Running" AND TaskQueue = "plane-q" AND IacState = "AWAITING_APPROVAL"'), queries.join('\n'));
    running.reachable = false;
    assert.equal(await seriesValue('sandboxplane_approvals_waiting{kind="sandbox"}'), undefined, 'not a zero that was never seen');
    running.reachable = true;
  });

  test('health restarts count by adapter; IaC applies by outcome, in sandboxes and targets', async () => {
    assert.equal(await seriesValue('sandboxplane_health_restarts_total{adapter="moto"}'), 0, 'known labels start at zero');
    store.sandboxes.record(projectionSnapshot({ id: 'm-1', adapter: 'moto', runId: 'r1', state: 'READY' }), step(4, 'emulator_restarted'));
    assert.equal(await seriesValue('sandboxplane_health_restarts_total{adapter="moto"}'), 1);

    const run = (n: number, action: string) => ({ runId: 'iac-run', step: n, action, actor: 'plane', effect: action, reason: null, summary: {} });
    store.targets.add({ name: 'staging', environment: 'staging', region: 'us-east-1', endpoint: 'http://127.0.0.1:1', profile: null });
    store.targets.appendOperation('staging', 'iac-1', run(1, 'iac_awaiting_approval'));
    store.targets.appendOperation('staging', 'iac-1', run(2, 'iac_approved'));
    store.targets.appendOperation('staging', 'iac-1', run(3, 'iac_applied'));
    store.targets.appendOperation('staging', 'iac-1', run(3, 'iac_applied'));
    store.sandboxes.appendAudit('m-1', 'iac-2', { ...run(1, 'iac_failed'), runId: 'iac-run-2' });
    assert.equal(await seriesValue('sandboxplane_iac_runs_total{outcome="applied"}'), 1);
    assert.equal(await seriesValue('sandboxplane_iac_runs_total{outcome="failed"}'), 1);
  });
});

describe('leaks found and removed', () => {
  test('a leak is found once, however many sweeps see it, and removed once, however often the write is retried', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-leaks-'));
    const store = Store.open(path.join(dir, 'plane.sqlite'));
    try {
      const orphan = { kind: 'orphan_container' as const, subject: 'c-1', sandboxId: null, detail: 'no sandbox' };
      const stranded = { kind: 'stranded_sandbox' as const, subject: 's-1', sandboxId: 's-1', detail: 'no workflow' };
      assert.deepEqual(store.leaks.recordSweep({ outstanding: [orphan], removed: [] }).found, [orphan]);
      assert.deepEqual(store.leaks.recordSweep({ outstanding: [orphan, stranded], removed: [] }).found, [stranded], 'the orphan was known');
      assert.deepEqual(store.leaks.recordSweep({ outstanding: [], removed: [orphan] }), { found: [], removed: [orphan] }, 'removing a known leak finds nothing new');
      assert.deepEqual(store.leaks.recordSweep({ outstanding: [], removed: [orphan] }).removed, [], 'the same write retried removes nothing more');
      assert.equal(store.metrics.outstandingLeaks().stranded_sandbox, 0, 'a leak not seen again is gone');
    } finally {
      store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the /metrics page', () => {
  test('a taken port is CONFIG_INVALID naming SANDBOXPLANE_METRICS_ADDRESS', async () => {
    // First: once a server runs, it is this process's one server.
    const taken = http.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      await assert.rejects(serveMetrics(`127.0.0.1:${(taken.address() as { port: number }).port}`, undefined), (err: unknown) => {
        assert.ok(err instanceof SandboxPlaneError || (err as { code?: string }).code === 'CONFIG_INVALID');
        assert.match((err as Error).message, /SANDBOXPLANE_METRICS_ADDRESS 127\.0\.0\.1:\d+: cannot listen \(EADDRINUSE\)/);
        return true;
      });
    } finally {
      taken.close();
    }
  });

  test("serves the plane's metrics and the Temporal SDK's in one page, and only at /metrics", async () => {
    const sdk = http.createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/plain' }).end('# TYPE temporal_request counter\ntemporal_request 7\n'));
    await new Promise<void>((resolve) => sdk.listen(0, '127.0.0.1', resolve));
    const sdkAddress = sdk.address() as { port: number };
    const stopPools = meterPools({ hostId: 'a', depths: () => [{ adapter: 'moto', target: 2, ready: 1, starting: 1 }] });
    try {
      const server = await serveMetrics(`127.0.0.1:${await freePort()}`, `http://127.0.0.1:${sdkAddress.port}/metrics`);
      const page = await (await fetch(server.url)).text();
      assert.match(page, /^sandboxplane_pool_containers\{host="a",adapter="moto",state="ready"\} 1$/m);
      assert.match(page, /^sandboxplane_pool_target\{host="a",adapter="moto"\} 2$/m);
      assert.match(page, /^sandboxplane_process_resident_memory_bytes \d+/m, "the process's own figures");
      assert.match(page, /^temporal_request 7$/m, "the SDK's, read from its own port");
      assert.doesNotMatch(page, /sandbox_id|sbx-/, 'no sandbox id as a label');
      assert.equal((await fetch(server.url.replace('/metrics', '/'))).status, 404);
      assert.throws(() => serveMetrics('127.0.0.1:1', undefined), /already serves metrics/);
    } finally {
      stopPools();
      sdk.close();
    }
  });
});

describe("the plane's own spans", () => {
  test('without a tracer provider a span costs nothing and names no trace', async () => {
    assert.equal(await inSpan('docker create', {}, async () => activeTraceIds()), undefined);
  });

  test("with one, spans nest under the caller's, and a failure is marked by its code, never its message", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    provider.register();
    try {
      const secretText = 'http://127.0.0.1:5000/_sandboxplane/0123456789abcdef refused';
      await assert.rejects(
        inSpan('sandbox create', { 'sandbox.id': 'sbx-1' }, () => inSpan('docker start', {}, () => Promise.reject(new SandboxPlaneError('DOCKER_ENGINE_ERROR', secretText)))),
        /refused/,
      );
      const spans = exporter.getFinishedSpans();
      const start = spans.find((span) => span.name === 'docker start');
      const create = spans.find((span) => span.name === 'sandbox create');
      assert.ok(start !== undefined && create !== undefined);
      assert.equal(start.parentSpanId, create.spanContext().spanId);
      assert.equal(start.spanContext().traceId, create.spanContext().traceId);
      assert.equal(start.status.message, 'DOCKER_ENGINE_ERROR');
      assert.equal(create.attributes['sandbox.id'], 'sbx-1');
      assert.ok(!JSON.stringify(spans.map((span) => [span.status, span.attributes, span.events])).includes('_sandboxplane'), 'no operator token in a span');

      // A log line written inside a span carries its ids; one outside carries none.
      const lines: string[] = [];
      const logger = createLogger('info', { write: (line: string) => lines.push(line) });
      const ids = await inSpan('activity', {}, async (span) => {
        logger.info('inside');
        return span.spanContext();
      });
      logger.info('outside');
      const [inside, outside] = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
      assert.equal(inside?.trace_id, ids.traceId);
      assert.equal(inside?.span_id, ids.spanId);
      assert.equal(outside?.trace_id, undefined);
    } finally {
      trace.disable();
      context.disable();
      propagation.disable();
      await provider.shutdown();
    }
  });
});

describe('tracing started, stopped and started again', () => {
  test('the second start registers its own provider: spans record again, and the clients get the interceptor', async () => {
    const settings = { url: 'http://127.0.0.1:9/v1/traces', protocol: 'http/json' as const, serviceName: undefined };
    assert.equal(await startTracing(settings, 'sandboxplane-client'), true);
    assert.equal(await inSpan('first', {}, async (span) => span.isRecording()), true);
    await stopTracing();
    assert.deepEqual(tracingClientInterceptors(), {}, 'off: no interceptors');
    assert.equal(await inSpan('between', {}, async (span) => span.isRecording()), false, 'stopped: no-op spans');
    assert.equal(await startTracing(settings, 'sandboxplane-client'), true);
    assert.equal(await inSpan('again', {}, async (span) => span.isRecording()), true);
    assert.equal(tracingClientInterceptors().workflow?.length, 1);
    await stopTracing();
  });
});
