/**
 * Observability (issue 28, DESIGN §17) with the real parts: Jaeger v1.75.0 built from the
 * Go module proxy and Debian's Prometheus, started by scripts/telemetry.sh; a worker
 * process (`sandboxctl worker`) and the CLI configured only by the standard OTEL_*
 * variables and SANDBOXPLANE_METRICS_ADDRESS. One `sandboxctl create` of a moto sandbox
 * is one trace in Jaeger, found by its sandbox id, with the client's, the workflow's, the
 * activity's and the Docker engine's spans; Prometheus scrapes a sandboxplane_ series that
 * counts the READY sandbox and the Temporal SDK's own; the worker's log lines carry the
 * trace id.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { eventually } from './harness/eventually';
import { freePort } from './harness/free-port';
import { startTelemetryStack, type TelemetryStack } from './helpers/telemetry-stack';
import { createTestNamespace } from './helpers/test-namespace';
import { testTemporalAddress } from './harness/test-temporal';
import { runSandboxctl, startWorkerProcess, type WorkerProcess } from './harness/worker-process';

const motoImage = process.env.SANDBOXPLANE_MOTO_IMAGE;
const skip = motoImage === undefined && 'needs the moto image and the Docker engine (SANDBOXPLANE_MOTO_IMAGE, set by the test runner)';

interface JaegerSpan {
  readonly traceID: string;
  readonly spanID: string;
  readonly operationName: string;
  readonly processID: string;
  readonly tags: readonly { key: string; value: unknown }[];
}
interface JaegerTrace {
  readonly traceID: string;
  readonly spans: readonly JaegerSpan[];
  readonly processes: Readonly<Record<string, { serviceName: string }>>;
}

async function getJson<T>(url: string): Promise<T> {
  const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  assert.equal(response.status, 200, `${url} answered ${response.status}: ${await response.clone().text()}`);
  return (await response.json()) as T;
}

/** `check` until it stops throwing, and what it returns; fails with its last complaint after `timeoutMs`. */
async function untilPasses<T>(what: string, check: () => Promise<T> | T, timeoutMs: number): Promise<T> {
  let last = 'nothing yet';
  const probe = async () => {
    try {
      return { passed: await check() };
    } catch (err) {
      last = (err as Error).message;
      return undefined;
    }
  };
  return (await eventually(what, probe, timeoutMs, () => last)).passed;
}

/** The value of an instant PromQL query's single series, or `undefined` while there is none. */
async function promValue(stack: TelemetryStack, query: string): Promise<number | undefined> {
  const body = await getJson<{ data: { result: { value: [number, string] }[] } }>(`${stack.prometheusUrl}/api/v1/query?query=${encodeURIComponent(query)}`);
  const first = body.data.result[0];
  return first === undefined ? undefined : Number(first.value[1]);
}

describe('traces and metrics (real Jaeger, Prometheus, worker process, CLI, engine and moto)', { skip }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-observability-'));
  let stack: TelemetryStack;
  let worker: WorkerProcess;
  let env: Record<string, string>;
  let sandboxId: string;
  let waitingId: string | undefined;

  before(async () => {
    const metricsAddress = `127.0.0.1:${await freePort()}`;
    stack = await startTelemetryStack([metricsAddress]);
    const address = await testTemporalAddress();
    const namespace = await createTestNamespace(address, 'observability');
    const taskQueue = `observability-${randomUUID()}`;
    env = {
      TEMPORAL_ADDRESS: address,
      TEMPORAL_NAMESPACE: namespace,
      SANDBOXPLANE_TASK_QUEUE: taskQueue,
      SANDBOXPLANE_DB: path.join(dir, 'plane.sqlite'),
      SANDBOXPLANE_FLAG_CLOUD_SANDBOX: '1',
      SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1',
      SANDBOXPLANE_MOTO_IMAGE: motoImage as string,
      SANDBOXPLANE_SWEEP_INTERVAL: '1d',
      OTEL_EXPORTER_OTLP_ENDPOINT: stack.otlpEndpoint,
      ...(process.env.DOCKER_HOST === undefined ? {} : { DOCKER_HOST: process.env.DOCKER_HOST }),
    };
    worker = await startWorkerProcess({ ...env, SANDBOXPLANE_METRICS_ADDRESS: metricsAddress });
    for (const [principal, effect] of [
      ['agent-otel', 'allow'],
      ['agent-waits', 'require_approval'],
    ]) {
      const policy = await runSandboxctl(['policy', 'add', '--principal', principal as string, '--capability', 'cloud.sandbox', '--effect', effect as string, '--json'], env, {
        timeoutMs: 60_000,
      });
      assert.equal(policy.code, 0, policy.stderr);
    }
  });

  after(async () => {
    for (const id of [sandboxId, waitingId]) {
      if (id !== undefined) await runSandboxctl(['destroy', id, '--json'], env, { timeoutMs: 120_000 });
    }
    await worker?.stop();
    await stack?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('one create through the CLI is one trace: client, workflow, activity and Docker spans under one trace id', async () => {
    const created = await runSandboxctl(['create', '--principal', 'agent-otel', '--adapter', 'moto', '--services', 's3', '--wait', '--json'], env, { timeoutMs: 180_000 });
    assert.equal(created.code, 0, created.stderr);
    const status = JSON.parse(created.stdout) as { id: string; state: string };
    assert.equal(status.state, 'READY');
    sandboxId = status.id;

    const tags = encodeURIComponent(JSON.stringify({ 'sandbox.id': sandboxId }));
    const trace = await untilPasses(
      'the whole trace in Jaeger',
      async () => {
        const found = await getJson<{ data: JaegerTrace[] }>(`${stack.jaegerUrl}/api/traces?service=sandboxplane-client&tags=${tags}&limit=5&lookback=1h`);
        assert.equal(found.data.length, 1, `one trace tagged sandbox.id=${sandboxId}`);
        const whole = (await getJson<{ data: JaegerTrace[] }>(`${stack.jaegerUrl}/api/traces/${found.data[0]?.traceID}`)).data[0] as JaegerTrace;
        // The worker's spans arrive in batches of their own: wait for the last of the create's.
        const names = whole.spans.map((span) => span.operationName);
        for (const last of ['RunActivity:provisionSandbox', 'StartActivity:provisionSandbox', 'aws IAM CreateAccessKey', 'StartActivity:recordTransitions']) {
          assert.ok(names.includes(last), `no ${last} span yet: ${names.join(', ')}`);
        }
        return whole;
      },
      60_000,
    );

    const serviceOf = (span: JaegerSpan) => trace.processes[span.processID]?.serviceName;
    const names = (service: string) => trace.spans.filter((span) => serviceOf(span) === service).map((span) => span.operationName);
    assert.ok(new Set(trace.spans.map((span) => span.traceID)).size === 1, 'every span shares the trace id');
    const client = names('sandboxplane-client');
    const worked = names('sandboxplane-worker');
    assert.ok(client.includes('sandboxctl create'), `client spans: ${client.join(', ')}`);
    assert.ok(client.includes('sandbox create'), `client spans: ${client.join(', ')}`);
    assert.ok(
      client.some((name) => name.startsWith('StartWorkflow:sandboxLifecycle') || name.startsWith('UpdateWithStartWorkflow')),
      `the client's Temporal span: ${client.join(', ')}`,
    );
    // The workflow's spans (scheduling activities) and the activities' own, in the worker.
    assert.ok(
      worked.some((name) => name.startsWith('StartActivity:')),
      `workflow spans: ${worked.join(', ')}`,
    );
    assert.ok(worked.includes('RunActivity:provisionSandbox'), `activity spans: ${worked.join(', ')}`);
    for (const expected of ['docker create', 'docker start', 'emulator health', 'aws IAM CreateAccessKey']) {
      assert.ok(worked.includes(expected), `no ${expected} span among: ${worked.join(', ')}`);
    }
    const dockerCreate = trace.spans.find((span) => span.operationName === 'docker create') as JaegerSpan;
    assert.ok(
      dockerCreate.tags.some((tag) => tag.key === 'container.id' && typeof tag.value === 'string' && tag.value.length > 0),
      'the docker create span names its container',
    );

    // A workflow span names its run, and nothing else of the workflow's info.
    const scheduled = trace.spans.find((span) => span.operationName === 'StartActivity:provisionSandbox') as JaegerSpan;
    const keys = scheduled.tags.map((tag) => tag.key);
    assert.ok(
      scheduled.tags.some((tag) => tag.key === 'workflowId' && tag.value === `sandbox-${sandboxId}`),
      keys.join(', '),
    );
    for (const dropped of ['searchAttributes', 'memo', 'lastFailure', 'historyLength']) assert.ok(!keys.includes(dropped), `${dropped} on a workflow span: ${keys.join(', ')}`);

    // The worker's log lines written inside those spans carry the same trace id.
    await untilPasses('a worker log line with the trace id', () => assert.match(worker.output(), new RegExp(`"trace_id":"${trace.traceID}"`)), 10_000);
  });

  test('Prometheus scrapes a sandboxplane_ series counting the READY sandbox, and the Temporal SDK series', async () => {
    assert.ok(sandboxId !== undefined, 'the create test ran first');
    // One more, waiting for an approver: Temporal counts it for the approvals gauge.
    const waiting = await runSandboxctl(['create', '--principal', 'agent-waits', '--adapter', 'moto', '--services', 's3', '--json'], env, { timeoutMs: 60_000 });
    assert.equal(waiting.code, 0, waiting.stderr);
    const screened = JSON.parse(waiting.stdout) as { id: string; state: string };
    assert.equal(screened.state, 'AWAITING_APPROVAL');
    waitingId = screened.id;
    await untilPasses(
      'the series in Prometheus',
      async () => {
        assert.equal(await promValue(stack, 'sandboxplane_sandboxes{state="READY",adapter="moto"}'), 1);
        assert.equal(await promValue(stack, 'sandboxplane_approvals_waiting{kind="sandbox"}'), 1);
        assert.equal(await promValue(stack, 'sandboxplane_approvals_waiting{kind="iac"}'), 0);
        assert.equal(await promValue(stack, 'sum(sandboxplane_create_ready_seconds_count{adapter="moto",source="cold",approval="none"})'), 1);
        const sdk = await promValue(stack, 'sum(temporal_worker_task_slots_available)');
        assert.ok(sdk !== undefined && sdk > 0, `the Temporal SDK's worker slots: ${sdk}`);
        assert.ok(((await promValue(stack, 'sum(temporal_request)')) ?? 0) > 0, 'the SDK counts its requests to Temporal');
      },
      60_000,
    );
    // The alert rules of docs/observability-alerts.yml are loaded (telemetry.sh names the file).
    const rules = await getJson<{ data: { groups: { rules: { name: string }[] }[] } }>(`${stack.prometheusUrl}/api/v1/rules`);
    const names = rules.data.groups.flatMap((group) => group.rules.map((rule) => rule.name));
    assert.ok(names.includes('SandboxplaneLeaksOutstanding') && names.includes('SandboxplaneApprovalsStuck'), names.join(', '));
  });
});
