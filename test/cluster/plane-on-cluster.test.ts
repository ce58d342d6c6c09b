/**
 * Issue 14's acceptance: the plane on a real Temporal cluster. `scripts/cluster.sh up`
 * builds and starts PostgreSQL, the Temporal server v1.29.1 as four processes (frontend,
 * history, matching, worker), its UI server, two private Docker engines and the plane's
 * workers (one store, two lifecycle, a docker worker per engine). On it:
 *
 * - 30 moto sandboxes across both hosts, through the SDK and the CLI, one of them
 *   approved by a human in the cluster's own Web UI (a real Chromium);
 * - mid-run, SIGKILL of a lifecycle worker and of the history service, then `up` again,
 *   which starts only what is missing: every sandbox ends READY, nothing leaks;
 * - `down`, then `up` on the same data: the READY sandboxes are READY again (their
 *   emulators restarted once by the health watch), their expiry unchanged, and a TTL
 *   that runs out after the restart still ends its sandbox;
 * - `rollout` of a new lifecycle build: it becomes current, the sandboxes started before
 *   stay pinned to the old build (whose workers drain) and can still be extended; a new
 *   sandbox runs on the new build; once the old ones end, `drain` stops the old workers;
 * - every port of the server requires a client certificate (DESIGN §18): a `sandboxctl` and
 *   a `temporal` CLI call without one get nothing, with the operator's they work;
 * - `down` leaves no process, port or container of the cluster behind.
 *
 * It runs with `npm run test:cluster` (`.ci/run` runs it after `npm test`), needs root
 * (PostgreSQL, dockerd, bridges) and brings everything up itself; the first run builds
 * the Temporal server (a few minutes), later runs reuse it. The cluster's data lives in
 * .data/cluster-test/ (`cluster.sh purge` empties it at the start; it is kept afterwards
 * for its logs).
 *
 * The tests run in order and share the cluster.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { Client, Connection } from '@temporalio/client';
import { SandboxClient } from '../../src/client/sandbox-client';
import { connectTemporal } from '../../src/client/temporal-connection';
import { readTemporalTls, type TemporalTlsSettings } from '../../src/config/temporal-tls';
import type { DeploymentReport } from '../../src/domain/deployment';
import { ERROR_CODES } from '../../src/domain/error-codes';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, SANDBOX_ID_LABEL } from '../../src/domain/docker-labels';
import type { HostView } from '../../src/domain/hosts';
import type { SandboxStatus } from '../../src/domain/lifecycle-messages';
import { authenticatorFor, type TestAuthenticator } from '../helpers/approvers';
import { launchBrowser, screenshot } from '../helpers/browser';
import { REPO_ROOT } from '../harness/cli';
import { dockerClient } from '../harness/container-events';
import { eventually, waitForState } from '../harness/eventually';
import { GatewayClient } from '../../src/client/gateway-client';
import { isListening } from '../harness/free-port';
import { filterList, inUiPage, openAndReadDetails, plainQuotes, sendSignal } from '../helpers/temporal-ui';
import { runSandboxctl } from '../harness/worker-process';
import { parseExports } from '../harness/cluster-exports';

const CLUSTER_SH = path.join(REPO_ROOT, 'scripts', 'cluster.sh');
const DATA = path.join(REPO_ROOT, '.data', 'cluster-test');
/** Ports of scripts/cluster.sh (its header): PostgreSQL, frontend gRPC and HTTP, history, matching, membership, UI, codec server, gateway. */
const CLUSTER_PORTS = [15432, 17233, 17243, 17234, 17235, 16933, 16934, 16935, 16939, 18233, 18234, 18787];
const SDK_SANDBOXES = 27;
const CLI_SANDBOXES = 2;
/** One more waits for a human: 30 in all. */
const TOTAL = SDK_SANDBOXES + CLI_SANDBOXES + 1;
/** The lifecycle worker and the history service are SIGKILLed once this many are READY. */
const KILL_AFTER_READY = 5;
const CREATE_TIMEOUT_MS = 600_000;
/** A TTL that runs out after `down` and `up`: the timer must still end its sandbox. */
const SHORT_TTL_SECONDS = 150;
const SHOTS = 'cluster-approval';
const FIRST_UP_TIMEOUT_MS = 30 * 60_000;

interface Worker {
  readonly name: string;
  readonly role: string;
  readonly hostId: string | null;
  readonly dockerHost: string | null;
  readonly taskQueue: string;
}

/** The environment cluster.sh and the CLI get: ours, without anything naming another plane. */
function clusterEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('SANDBOXPLANE_') && !key.startsWith('TEMPORAL_') && key !== 'DOCKER_HOST') env[key] = value;
  }
  return { ...env, SANDBOXPLANE_CLUSTER_DIR: DATA, SANDBOXPLANE_LOG_LEVEL: 'info' };
}

/** `bash scripts/cluster.sh COMMAND`; its progress (stderr) is kept for the failure message. */
function cluster(command: string, timeoutMs = 10 * 60_000, env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('bash', [CLUSTER_SH, command], { cwd: REPO_ROOT, env: { ...clusterEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    process.stderr.write(chunk);
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function up(timeoutMs?: number): Promise<{ address: string; uiUrl: string; progress: string }> {
  const result = await cluster('up', timeoutMs);
  assert.equal(result.code, 0, `cluster.sh up exited ${result.code}:\n${result.stderr.slice(-4000)}`);
  const [address, ui] = result.stdout.trim().split('\n').slice(-2);
  assert.match(address ?? '', /^TEMPORAL_ADDRESS=127\.0\.0\.1:\d+$/, 'the next-to-last line names the frontend');
  assert.match(ui ?? '', /^TEMPORAL_UI=http:\/\/127\.0\.0\.1:\d+$/, 'the last line names the UI');
  return { address: address!.split('=')[1]!, uiUrl: ui!.split('=')[1]!, progress: result.stderr };
}

/**
 * Live (not zombie) processes whose command line names one of `marks`, or that carry the
 * cluster's mark in their environment (its workers: `node …/sandboxctl.js worker`).
 */
function processesNaming(marks: readonly string[]): string[] {
  const workerMark = `SANDBOXPLANE_CLUSTER_DIR=${DATA}`;
  const found: string[] = [];
  for (const pid of fs.readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      const environment = fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      if (marks.some((mark) => cmdline.includes(mark)) || environment.includes(workerMark)) found.push(`${pid}: ${cmdline.slice(0, 200)}`);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

const pidOf = (name: string) => Number(fs.readFileSync(path.join(DATA, 'run', `${name}.pid`), 'utf8').trim());

const TEMPORAL_CLI = path.join(REPO_ROOT, '.tools', 'bin', 'temporal');

/** `temporal ARGS` with only the environment given (none of ours: no TEMPORAL_TLS_* from the caller). */
async function temporalCli(args: readonly string[], env: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  const child = spawn(TEMPORAL_CLI, args, { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe('the plane on a Temporal cluster on PostgreSQL (scripts/cluster.sh)', () => {
  const tag = randomBytes(3).toString('hex');
  const ids: string[] = [];
  let address: string;
  let uiUrl: string;
  let topology: Worker[];
  let sandboxes: SandboxClient;
  let browser: Browser | undefined;
  const approvedId = `${tag}-approved`;
  const shortId = `${tag}-short`;
  let pgData: string;
  /** Each READY sandbox's status before `down`. */
  let beforeDown: SandboxStatus[] = [];
  let alice: TestAuthenticator;
  /** `cluster.sh env`: the operator's certificate, for sandboxctl and the temporal CLI. */
  let operatorEnv: Record<string, string>;
  let operatorTls: TemporalTlsSettings;

  const engineOf = (hostId: string) => {
    const dockerHost = topology.find((worker) => worker.hostId === hostId)?.dockerHost;
    assert.ok(dockerHost, `the topology has a docker worker for host ${hostId}`);
    return dockerHost;
  };
  const runRoot = () => path.dirname(path.dirname(engineOf('a').replace(/^unix:\/\//, '')));

  const plainCallerEnv = () => ({ TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: 'default', SANDBOXPLANE_TASK_QUEUE: topology[0]!.taskQueue });
  const operatorPlaneEnv = () => Object.fromEntries(Object.entries(operatorEnv).filter(([key]) => key.startsWith('SANDBOXPLANE_TEMPORAL_TLS_')));
  /** An operator's environment: the cluster's frontend answers nothing without the certificate. */
  const callerEnv = () => ({ ...plainCallerEnv(), ...operatorPlaneEnv() });

  /** `sandboxctl ARGS --json` against the cluster; its JSON answer. */
  async function sandboxctl<T>(...args: string[]): Promise<T> {
    const result = await runSandboxctl([...args, '--json'], callerEnv(), { timeoutMs: CREATE_TIMEOUT_MS });
    assert.equal(result.code, 0, `sandboxctl ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
    return JSON.parse(result.stdout) as T;
  }

  async function hosts(): Promise<Record<string, HostView>> {
    const { hosts: listed } = await sandboxctl<{ hosts: HostView[] }>('hosts');
    return Object.fromEntries(listed.map((host) => [host.hostId, host]));
  }

  /** This test's containers on one engine (stopped ones too): sandbox id → container ids. */
  async function containersOn(hostId: string, options: { running?: boolean } = {}): Promise<Map<string, string[]>> {
    const listed = await dockerClient(engineOf(hostId)).listContainers({ all: !options.running, filters: { label: [`${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`] } });
    const bySandbox = new Map<string, string[]>();
    for (const container of listed) {
      const sandboxId = container.Labels[SANDBOX_ID_LABEL];
      if (sandboxId?.startsWith(`${tag}-`)) bySandbox.set(sandboxId, [...(bySandbox.get(sandboxId) ?? []), container.Id]);
    }
    return bySandbox;
  }

  /** Each sandbox's host as its status says, checked against the engine that holds its one container; nothing else of ours runs. */
  async function assertContainersMatch(statuses: readonly SandboxStatus[]): Promise<Record<string, number>> {
    const [onA, onB] = await Promise.all([containersOn('a'), containersOn('b')]);
    const perHost: Record<string, number> = { a: 0, b: 0 };
    for (const status of statuses) {
      assert.ok(status.host === 'a' || status.host === 'b', `${status.id} names host ${status.host}`);
      perHost[status.host] = (perHost[status.host] ?? 0) + 1;
      const [here, there] = status.host === 'a' ? [onA, onB] : [onB, onA];
      assert.deepEqual(here.get(status.id), status.runtimeIds, `${status.id}: its one container is on the engine of host ${status.host}`);
      assert.equal(there.get(status.id), undefined, `${status.id}: nothing of it on the other engine`);
    }
    const known = new Set(statuses.map((status) => status.id));
    const strays = [...onA.keys(), ...onB.keys()].filter((id) => !known.has(id));
    assert.deepEqual(strays, [], 'no container of a sandbox that is not READY');
    return perHost;
  }

  /**
   * An agent's create, through the SDK or the CLI. The id is the idempotency key, so a
   * call the outage cut off (a retryable code, or none at all) is simply made again; a
   * refusal is an answer and fails the test.
   */
  async function createAsAgent(id: string, via: 'sdk' | 'cli', ttlSeconds = 3600): Promise<SandboxStatus> {
    const deadline = Date.now() + CREATE_TIMEOUT_MS;
    for (;;) {
      let failure: { code: string | undefined; message: string };
      if (via === 'sdk') {
        try {
          return await sandboxes.create({ id, principal: 'agent-sdk', adapter: 'moto', services: ['s3'], ttlSeconds }, { wait: 'ready', timeoutMs: CREATE_TIMEOUT_MS });
        } catch (err) {
          failure = { code: (err as { code?: string }).code, message: (err as Error).message };
        }
      } else {
        const args = ['create', '--id', id, '--principal', 'agent-cli', '--adapter', 'moto', '--services', 's3', '--ttl', `${ttlSeconds}s`, '--wait', '--timeout', '10m', '--json'];
        const result = await runSandboxctl(args, callerEnv(), { timeoutMs: CREATE_TIMEOUT_MS });
        if (result.code === 0) return JSON.parse(result.stdout) as SandboxStatus;
        const error = (JSON.parse(result.stdout || '{}') as { error?: { code?: string; message?: string } }).error;
        failure = { code: error?.code, message: error?.message ?? result.stderr };
      }
      const retryable = failure.code === undefined || (ERROR_CODES as Record<string, { retryable: boolean }>)[failure.code]?.retryable === true;
      if (!retryable || Date.now() > deadline) assert.fail(`create ${id} through the ${via}: ${failure.code}: ${failure.message}`);
      process.stderr.write(`cluster test: create ${id} through the ${via} got no answer (${failure.code}: ${failure.message}); again\n`);
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    }
  }

  before(async () => {
    // A run that died left its cluster up: take it down, and start from empty data.
    const purged = await cluster('purge');
    assert.equal(purged.code, 0, purged.stderr);
    for (const port of CLUSTER_PORTS) {
      assert.equal(await isListening(port), false, `port ${port} is taken: another cluster runs (bash scripts/cluster.sh down) or something else listens there`);
    }
    ({ address, uiUrl } = await up(FIRST_UP_TIMEOUT_MS));
    // PostgreSQL keeps its data outside DATA (the postgres user may not reach it), linked from there.
    pgData = fs.realpathSync(path.join(DATA, 'postgres'));
    const listed = await cluster('topology');
    topology = listed.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Worker);
    const exported = await cluster('env');
    assert.equal(exported.code, 0, exported.stderr);
    operatorEnv = parseExports(exported.stdout);
    operatorTls = {
      certPath: operatorEnv.SANDBOXPLANE_TEMPORAL_TLS_CERT,
      keyPath: operatorEnv.SANDBOXPLANE_TEMPORAL_TLS_KEY,
      caPath: operatorEnv.SANDBOXPLANE_TEMPORAL_TLS_CA,
      serverName: operatorEnv.SANDBOXPLANE_TEMPORAL_TLS_SERVER_NAME,
    };
    sandboxes = await SandboxClient.connect({ address, namespace: 'default', taskQueue: topology[0]!.taskQueue, tls: operatorTls });
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await sandboxes?.close();
    await cluster('down');
    reportTroubleInLogs(path.join(DATA, 'logs'));
  });

  test('up: PostgreSQL persistence, four server processes, both hosts live', async () => {
    const describeCluster = await temporalCli(['operator', 'cluster', 'describe', '--address', address, '-o', 'json'], operatorEnv);
    assert.equal(describeCluster.code, 0, describeCluster.output);
    const described = JSON.parse(describeCluster.output) as { persistenceStore: string; visibilityStore: string; serverVersion: string };
    assert.equal(described.persistenceStore, 'postgres12');
    assert.equal(described.visibilityStore, 'postgres12');
    assert.equal(described.serverVersion, '1.29.1');

    const servicePids = ['frontend', 'history', 'matching', 'worker'].map(pidOf);
    assert.equal(new Set(servicePids).size, 4, 'each service is a process of its own');
    const status = await cluster('status');
    assert.equal(status.code, 0, `status says something is not running:\n${status.stdout}`);

    assert.deepEqual(
      topology.map((worker) => `${worker.role}${worker.hostId === null ? '' : `:${worker.hostId}`}`),
      ['store', 'lifecycle', 'lifecycle', 'docker:a', 'docker:b'],
    );
    const live = await eventually('hosts a and b to be live', async () => {
      const current = await hosts();
      return current.a?.live && current.b?.live ? current : undefined;
    });
    assert.deepEqual(live.a?.adapters.includes('moto') && live.b?.adapters.includes('moto'), true);
  });

  test("mTLS: without a client certificate a sandboxctl and a temporal CLI call get nothing; with the operator's both work", async () => {
    const tlsDir = path.join(DATA, 'tls');
    for (const name of ['ca', 'server', 'internode', 'worker', 'operator', 'gateway', 'ui']) {
      assert.ok(fs.existsSync(path.join(tlsDir, `${name}.pem`)), `${name}.pem is made`);
      assert.equal(fs.statSync(path.join(tlsDir, `${name}-key.pem`)).mode & 0o777, 0o600, `${name}-key.pem is 0600`);
    }
    assert.equal(operatorTls.certPath, path.join(tlsDir, 'operator.pem'));

    const bare = await runSandboxctl(['hosts', '--json'], plainCallerEnv(), { timeoutMs: 120_000 });
    assert.notEqual(bare.code, 0, `sandboxctl without a certificate: ${bare.stdout}`);
    assert.match(bare.stdout + bare.stderr, /TEMPORAL_UNREACHABLE/);
    const withCert = await runSandboxctl(['hosts', '--json'], callerEnv(), { timeoutMs: 120_000 });
    assert.equal(withCert.code, 0, withCert.stderr);
    assert.ok((JSON.parse(withCert.stdout) as { hosts: HostView[] }).hosts.length >= 2);

    const health = ['operator', 'cluster', 'health', '--address', address];
    const cliBare = await temporalCli(health);
    assert.notEqual(cliBare.code, 0, cliBare.output);
    assert.doesNotMatch(cliBare.output, /SERVING/);
    // TLS that trusts the server but presents no certificate: refused too, on the frontend and on history.
    const caOnly = ['--tls-ca-path', operatorTls.caPath!, '--tls-server-name', operatorTls.serverName!];
    for (const port of [address.split(':')[1], '17234']) {
      const noCert = await temporalCli(['operator', 'cluster', 'health', '--address', `127.0.0.1:${port}`, ...caOnly]);
      assert.notEqual(noCert.code, 0, `port ${port} without a client certificate: ${noCert.output}`);
    }
    await assert.rejects(connectTemporal({ address, namespace: 'default', payloadCodec: null, connectTimeoutMs: 3_000, tls: { ...operatorTls, certPath: undefined, keyPath: undefined } }), {
      code: 'TEMPORAL_UNREACHABLE',
    });
    const cliWithCert = await temporalCli(health, operatorEnv);
    assert.equal(cliWithCert.code, 0, cliWithCert.output);
    assert.match(cliWithCert.output, /SERVING/);
    const cliFlags = await temporalCli([...health, '--tls-cert-path', operatorTls.certPath!, '--tls-key-path', operatorTls.keyPath!, ...caOnly]);
    assert.equal(cliFlags.code, 0, cliFlags.output);
  });

  test("each certificate is one role: the worker's and the gateway's are refused what only an operator does", async () => {
    const tlsDir = path.join(DATA, 'tls');
    const as = (name: string) => ({
      ...operatorEnv,
      TEMPORAL_TLS_CLIENT_CERT_PATH: path.join(tlsDir, `${name}.pem`),
      TEMPORAL_TLS_CLIENT_KEY_PATH: path.join(tlsDir, `${name}-key.pem`),
    });
    // A run nobody serves, so it waits until someone ends it.
    const workflowId = `${tag}-roles`;
    const started = await temporalCli(['workflow', 'start', '--type', 'nobodyServesThis', '--task-queue', `${tag}-roles`, '--workflow-id', workflowId], operatorEnv);
    assert.equal(started.code, 0, started.output);
    for (const name of ['worker', 'gateway']) {
      const terminate = await temporalCli(['workflow', 'terminate', '--workflow-id', workflowId, '--reason', `as ${name}`], as(name));
      assert.notEqual(terminate.code, 0, `${name} terminated a workflow: ${terminate.output}`);
      assert.match(terminate.output, /PermissionDenied|unauthorized|not for/i);
      const update = await temporalCli(['operator', 'namespace', 'update', '--namespace', 'default', '--description', `changed by ${name}`], as(name));
      assert.notEqual(update.code, 0, `${name} updated the namespace: ${update.output}`);
      assert.match(update.output, /PermissionDenied|unauthorized/i);
      const read = await temporalCli(['workflow', 'describe', '--workflow-id', workflowId], as(name));
      assert.equal(read.code, 0, `${name} reads: ${read.output}`);
    }
    const poll = await temporalCli(['task-queue', 'describe', '--task-queue', `${tag}-roles`], as('gateway'));
    assert.equal(poll.code, 0, `the gateway may read a task queue: ${poll.output}`);
    const ended = await temporalCli(['workflow', 'terminate', '--workflow-id', workflowId, '--reason', 'roles test over'], operatorEnv);
    assert.equal(ended.code, 0, `the operator ends it: ${ended.output}`);
  });

  test('30 sandboxes through the SDK, the CLI and the UI, across a SIGKILLed lifecycle worker and history service', { timeout: 20 * 60_000 }, async () => {
    await sandboxctl('policy', 'add', '--principal', 'agent-*', '--capability', 'cloud.sandbox', '--effect', 'allow');
    await sandboxctl('policy', 'add', '--principal', 'review-*', '--capability', 'cloud.sandbox', '--effect', 'require_approval');
    const enrolled = await sandboxctl<{ name: string; otpauthUri: string }>('approvers', 'add', 'alice');
    alice = authenticatorFor('alice', enrolled.otpauthUri);

    const waiting = await sandboxes.create({ id: approvedId, principal: 'review-cluster', adapter: 'moto', services: ['s3'], ttlSeconds: 3600 });
    assert.equal(waiting.state, 'AWAITING_APPROVAL');
    ids.push(approvedId);

    const sdkIds = Array.from({ length: SDK_SANDBOXES }, (_, index) => `${tag}-sdk${index}`);
    const cliIds = Array.from({ length: CLI_SANDBOXES }, (_, index) => `${tag}-cli${index}`);
    ids.push(...sdkIds, ...cliIds);
    let ready = 0;
    let killed: Promise<void> | undefined;
    const killMidRun = async () => {
      const lifecycle = pidOf('lifecycle-1');
      const history = pidOf('history');
      process.kill(lifecycle, 'SIGKILL');
      process.kill(history, 'SIGKILL');
      process.stderr.write(`cluster test: SIGKILLed lifecycle-1 (pid ${lifecycle}) and history (pid ${history}) with ${ready} READY\n`);
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      const restored = await up();
      // `up` starts what is missing and leaves the rest alone.
      assert.match(restored.progress, /starting history/);
      assert.match(restored.progress, /starting worker lifecycle-1/);
      assert.match(restored.progress, /frontend already runs/);
      assert.match(restored.progress, /lifecycle-2 already runs/);
      assert.notEqual(pidOf('history'), history);
    };
    const counted = (created: Promise<SandboxStatus>) =>
      created.then((status) => {
        ready += 1;
        if (ready === KILL_AFTER_READY) killed = killMidRun();
        return status;
      });
    const viaSdk = sdkIds.map((id) => counted(createAsAgent(id, 'sdk')));
    const viaCli = cliIds.map((id) => counted(createAsAgent(id, 'cli')));

    const created = await Promise.all([...viaSdk, ...viaCli]);
    await killed;
    assert.ok(killed !== undefined, 'the workers were killed mid-run');
    // Then a human approves the one that waited through all of it, in the cluster's Web UI.
    // Not during the burst: each container start adds a veth to an engine's bridge, and
    // Chromium fails the requests in flight then (ERR_NETWORK_CHANGED).
    assert.ok(browser !== undefined);
    await inUiPage(browser, SHOTS, 'approve', async (page) => {
      await filterList(page, { shots: SHOTS, uiUrl, query: 'SandboxState="AWAITING_APPROVAL"', present: [`sandbox-${approvedId}`], absent: [] });
      await screenshot(page, SHOTS, '1-filtered-list');
      const details = await openAndReadDetails(page, `sandbox-${approvedId}`);
      assert.match(plainQuotes(details), /Waiting for a human's approval/);
      await sendSignal(page, { shots: SHOTS, shot: '2-signal-dialog', name: 'approve', payload: { approver: 'alice', reason: 'approved in the cluster UI', code: await alice.code() } });
    });

    const approved = await waitForState(sandboxes, approvedId, 'READY', CREATE_TIMEOUT_MS);
    assert.equal(approved.approval?.approver, 'alice');

    const statuses = await Promise.all(ids.map((id) => sandboxes.status(id)));
    assert.equal(statuses.length, TOTAL);
    assert.deepEqual(
      statuses.filter((status) => status.state !== 'READY').map((status) => `${status.id}: ${status.state}`),
      [],
      'every sandbox is READY',
    );
    assert.deepEqual(
      created.map((status) => status.id),
      [...sdkIds, ...cliIds],
    );
    const perHost = await assertContainersMatch(statuses);
    assert.ok((perHost.a ?? 0) > 0 && (perHost.b ?? 0) > 0, `both hosts hold sandboxes: ${JSON.stringify(perHost)}`);
    // The projection converges to Temporal: the store counts the same sandboxes per host.
    await eventually('the store to count every sandbox on its host', async () => {
      const listed = await hosts();
      return listed.a?.liveSandboxes === perHost.a && listed.b?.liveSandboxes === perHost.b ? listed : undefined;
    });
  });

  test('the gateway: an agent with an API key and no certificate creates, reads and destroys; another key sees nothing', async () => {
    const gateway = 'http://127.0.0.1:18787';
    const [mine, theirs] = await Promise.all(['agent-gw', 'agent-gw-other'].map((principal) => sandboxctl<{ key: string; keyId: string }>('keys', 'add', principal)));
    const agent = new GatewayClient({ url: gateway, apiKey: mine!.key });
    const id = `${tag}-gateway`;
    const ready = await agent.create({ id, adapter: 'moto', services: ['s3'], ttlSeconds: 600 }, { wait: 'ready', timeoutMs: CREATE_TIMEOUT_MS });
    assert.deepEqual([ready.state, ready.principal], ['READY', 'agent-gw']);
    assert.equal(await new GatewayClient({ url: gateway, apiKey: theirs!.key }).get(id), undefined);
    const unauthenticated = await fetch(`${gateway}/v1/sandboxes/${id}`);
    assert.equal(unauthenticated.status, 401);
    assert.equal((await agent.destroy(id)).state, 'DESTROYED');
  });

  test('down, then up on the same data: READY sandboxes continue, and so do their timers', { timeout: 15 * 60_000 }, async () => {
    const short = await createAsAgent(shortId, 'sdk', SHORT_TTL_SECONDS);
    ids.push(shortId);
    beforeDown = await Promise.all(ids.map((id) => sandboxes.status(id)));
    const endpoints = beforeDown.map((status) => Number(new URL(status.endpoint!).port));

    const down = await cluster('down');
    assert.equal(down.code, 0, down.stderr);
    for (const port of [...CLUSTER_PORTS, ...endpoints]) assert.equal(await isListening(port), false, `port ${port} is closed after down`);
    assert.deepEqual(processesNaming([DATA, runRoot(), pgData]), [], 'no process of the cluster after down');

    // The machine's first engine (scripts/docker-engine.sh, which npm test started) owns docker0:
    // an engine restarting on its old data without live restore deleted it (Docker 20.10).
    const docker0Before = fs.existsSync('/sys/class/net/docker0');
    ({ address, uiUrl } = await up());
    assert.equal(fs.existsSync('/sys/class/net/docker0'), docker0Before, "the cluster's engines, started again, leave the machine's docker0 alone");
    await sandboxes.close();
    sandboxes = await SandboxClient.connect({ address, namespace: 'default', taskQueue: topology[0]!.taskQueue, tls: operatorTls });

    // The engines stopped their containers: each health watch restarts its emulator once.
    const others = beforeDown.filter((status) => status.id !== shortId);
    let lagging: string[] = [];
    const after = await eventually(
      'every sandbox READY with a healthy, restarted emulator',
      async () => {
        const current = await Promise.all(others.map((status) => sandboxes.status(status.id)));
        const back = (status: SandboxStatus) => status.state === 'READY' && status.health.status === 'ok' && status.health.restarts === 1;
        lagging = current
          .filter((status) => !back(status))
          .map((status) => `${status.id} ${status.state} health ${status.health.status} restarts ${status.health.restarts}: ${status.waitingFor}`);
        return lagging.length === 0 ? current : undefined;
      },
      5 * 60_000,
      () => lagging.join('; '),
    );
    for (const [index, status] of after.entries()) {
      assert.equal(status.expiresAt, others[index]?.expiresAt, `${status.id} keeps its expiry`);
      assert.equal(status.host, others[index]?.host, `${status.id} stays on its host`);
      const answer = await fetch(status.endpoint!).then(
        (response) => response.status,
        () => 0,
      );
      assert.notEqual(answer, 0, `${status.id}'s emulator answers at ${status.endpoint}`);
    }

    // The short TTL ran out after the restart: its timer, kept in PostgreSQL, still ends it.
    const ended = await waitForState(sandboxes, shortId, 'DESTROYED', Math.max(0, Date.parse(short.expiresAt!) - Date.now()) + 120_000);
    assert.ok(Date.parse(ended.expiresAt!) <= Date.now());
    const audit = await sandboxctl<{ operations: { action: string; actor: string }[] }>('audit', shortId);
    assert.ok(
      audit.operations.some((operation) => operation.action === 'destroying' && operation.actor === 'timer'),
      `the TTL timer ended it: ${JSON.stringify(audit.operations.map((operation) => [operation.action, operation.actor]))}`,
    );
    await assertContainersMatch(after);
  });

  const onNewBuildId = `${tag}-on-new-build`;
  let oldBuild: string;

  test('rollout: a new lifecycle build becomes current; sandboxes started before stay pinned to the old one, which drains', { timeout: 15 * 60_000 }, async () => {
    const before = await sandboxctl<DeploymentReport>('deployment');
    assert.ok(before.current, 'the first lifecycle build made itself current');
    oldBuild = before.current;
    const pinned = beforeDown.filter((status) => status.id !== shortId).map((status) => status.id);
    const newBuild = `${tag}-rollout`;

    const rollout = await cluster('rollout', 10 * 60_000, { SANDBOXPLANE_BUILD_ID: newBuild });
    assert.equal(rollout.code, 0, rollout.stderr.slice(-4000));
    assert.match(rollout.stderr, new RegExp(`still serves ${pinned.length} sandbox\\(es\\) pinned to build ${oldBuild}`));
    const report = await eventually('both builds polled, the old one holding its sandboxes', async () => {
      const seen = await sandboxctl<DeploymentReport>('deployment');
      const [current, old] = [seen.builds.find((build) => build.buildId === newBuild), seen.builds.find((build) => build.buildId === oldBuild)];
      return current?.pollers === 2 && old?.pollers === 2 && old.openRuns === pinned.length ? seen : undefined;
    });
    assert.equal(report.current, newBuild);

    const connection = await Connection.connect({ address, tls: readTemporalTls(operatorTls) });
    try {
      const client = new Client({ connection, namespace: 'default' });
      const pinOf = async (id: string) => (await client.workflow.getHandle(`sandbox-${id}`).describe()).raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId;
      await createAsAgent(onNewBuildId, 'sdk');
      assert.equal(await pinOf(onNewBuildId), newBuild, 'a new sandbox starts on the new build');
      for (const id of pinned) assert.equal(await pinOf(id), oldBuild, `${id} stays on the build that started it`);
    } finally {
      await connection.close();
    }
    // The old build's workers still serve what is pinned to them.
    const extended = await sandboxes.extend(pinned[0]!, { ttlSeconds: 3000, reason: 'during a rollout' });
    assert.equal(extended.state, 'READY');
    const status = await cluster('status');
    assert.equal((status.stdout.match(new RegExp(`^drain-${oldBuild}-lifecycle-\\d +running`, 'gm')) ?? []).length, 2, status.stdout);
  });

  test('destroy all, then down: no process, port or container of the cluster is left', { timeout: 10 * 60_000 }, async () => {
    const live = [...beforeDown.filter((status) => status.id !== shortId).map((status) => status.id), onNewBuildId];
    const ended = await Promise.all(live.map((id) => sandboxes.destroy(id, { reason: 'cluster test done' })));
    assert.deepEqual(
      ended.filter((status) => status.state !== 'DESTROYED').map((status) => status.id),
      [],
    );
    const [onA, onB] = await Promise.all([containersOn('a'), containersOn('b')]);
    assert.deepEqual([...onA.keys(), ...onB.keys()], [], 'no container of a sandbox is left on either engine');

    // Nothing is pinned to the old build any more: drain stops its workers.
    await eventually('the old build to have no open run', async () => {
      const seen = await sandboxctl<DeploymentReport>('deployment');
      return seen.builds.find((build) => build.buildId === oldBuild)?.openRuns === 0 ? true : undefined;
    });
    const drained = await cluster('drain');
    assert.equal(drained.code, 0, drained.stderr);
    const afterDrain = await cluster('status');
    assert.doesNotMatch(afterDrain.stdout, /^drain-/m, 'no old-build worker is left');
    assert.equal(fs.existsSync(path.join(DATA, 'builds', oldBuild)), false, 'the kept copy of the old build is gone');

    const down = await cluster('down');
    assert.equal(down.code, 0, down.stderr);
    const status = await cluster('status');
    assert.notEqual(status.code, 0, 'status reports the cluster stopped');
    assert.doesNotMatch(status.stdout, /running/);
    for (const port of CLUSTER_PORTS) assert.equal(await isListening(port), false, `port ${port} is closed`);
    assert.deepEqual(processesNaming([DATA, runRoot(), pgData]), [], 'no process of the cluster is left');
    assert.equal(fs.existsSync(runRoot()), false, 'the engines left no run directory');
  });
});

/**
 * The cluster's own account of what went wrong, printed where CI shows it (the logs stay
 * in .data/cluster-test/logs, which a CI machine does not keep): its errors, and every
 * sandbox the health watch gave up on. A run that passes prints nothing.
 */
function reportTroubleInLogs(logs: string): void {
  if (!fs.existsSync(logs)) return;
  const trouble = /"level":(50|60)|EMULATOR_DIED|could not be restarted|again after one restart/;
  const lines = fs
    .readdirSync(logs)
    .filter((name) => name.endsWith('.log'))
    .flatMap((name) =>
      fs
        .readFileSync(path.join(logs, name), 'utf8')
        .split('\n')
        .filter((line) => trouble.test(line))
        .map((line) => `${name}: ${line.slice(0, 600)}`),
    );
  if (lines.length > 0) process.stdout.write(`cluster logs, the lines that say something went wrong (${lines.length}, first 60):\n${lines.slice(0, 60).join('\n')}\n`);
}
