import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { Store } from '../src/store';
import { runCli, spawnCli, stopChild } from './harness/cli';
import { startTestWorker } from './harness/test-worker';
import { freePort } from './harness/free-port';
import { testTemporalAddress } from './harness/test-temporal';

interface Report {
  ok: boolean;
  checks: { name: string; required: boolean; status: string; detail: string; hint?: string }[];
}

function parseReport(stdout: string): Report {
  return JSON.parse(stdout) as Report;
}

function checkNamed(report: Report, name: string) {
  const found = report.checks.find((check) => check.name === name);
  assert.ok(found, `no check named ${name}`);
  return found;
}

describe('sandboxctl doctor', () => {
  let address: string;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-doctor-'));
  const storePath = path.join(dir, 'plane.sqlite');

  before(async () => {
    address = await testTemporalAddress();
    Store.open(storePath).close();
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('TEMPORAL_ADDRESS=nonsense exits 2 naming the key', async () => {
    const result = await runCli(['doctor', '--json'], { TEMPORAL_ADDRESS: 'nonsense' });
    assert.equal(result.code, 2);
    assert.equal(result.stdout, '');
    const { error } = JSON.parse(result.stderr) as { error: { code: string; message: string; hint: string } };
    assert.equal(error.code, 'CONFIG_INVALID');
    assert.match(error.message, /TEMPORAL_ADDRESS: must be host:port/);
    assert.ok(error.hint.length > 0);

    const human = await runCli(['doctor'], { TEMPORAL_ADDRESS: 'nonsense', SANDBOXPLANE_FLAG_NOPE: '1' });
    assert.equal(human.code, 2);
    assert.match(human.stderr, /TEMPORAL_ADDRESS/);
    assert.match(human.stderr, /SANDBOXPLANE_FLAG_NOPE/);
  });

  test('with nothing listening, the Temporal check fails with a hint and the rest say why they were not run', async () => {
    const result = await runCli(['doctor', '--json'], { TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}`, SANDBOXPLANE_DB: storePath });
    assert.equal(result.code, 1);
    const report = parseReport(result.stdout);
    assert.equal(report.ok, false);
    assert.equal(checkNamed(report, 'temporal').status, 'fail');
    assert.match(checkNamed(report, 'temporal').hint ?? '', /sandboxctl dev/);
    assert.match(checkNamed(report, 'worker').detail, /not checked: Temporal is unreachable/);
    assert.equal(checkNamed(report, 'store').status, 'ok', 'independent checks still run');
  });

  test('with no worker on the task queue, the worker check fails and says how to start one', async () => {
    const result = await runCli(['doctor', '--json'], {
      TEMPORAL_ADDRESS: address,
      SANDBOXPLANE_DB: storePath,
      SANDBOXPLANE_TASK_QUEUE: `nobody-${randomUUID()}`,
    });
    assert.equal(result.code, 1);
    const report = parseReport(result.stdout);
    assert.equal(checkNamed(report, 'temporal').status, 'ok');
    assert.equal(checkNamed(report, 'search attributes').status, 'ok');
    const worker = checkNamed(report, 'worker');
    assert.equal(worker.status, 'fail');
    assert.match(worker.detail, /no worker polls task queue nobody-/);
    assert.match(worker.hint ?? '', /sandboxctl worker/);
    // Nothing would take a new sandbox: the deployment has no current build.
    const deployment = checkNamed(report, 'deployment');
    assert.equal(deployment.status, 'fail');
    assert.match(deployment.detail, /^nobody-\S+ has no current build$/);
    assert.match(deployment.hint ?? '', /sandboxctl worker/);
  });

  test('a store written by a newer version fails the store check with the reason', async () => {
    const newer = path.join(dir, 'newer.sqlite');
    Store.open(newer).close();
    const raw = new Database(newer);
    raw.pragma('user_version = 999');
    raw.close();
    const result = await runCli(['doctor', '--json'], { TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}`, SANDBOXPLANE_DB: newer });
    const store = checkNamed(parseReport(result.stdout), 'store');
    assert.equal(store.status, 'fail');
    assert.match(store.detail, /schema version 999/);
    assert.match(store.hint ?? '', /upgrade/);
  });

  test('store commands need no store file where the caller runs: a plane answers, and nothing is created', async () => {
    const worker = await startTestWorker(address);
    try {
      const missing = path.join(dir, 'typo', 'plane.sqlite');
      const result = await runCli(['policy', 'list', '--json'], { ...worker.env, SANDBOXPLANE_DB: missing });
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(JSON.parse(result.stdout), { policies: [] });
      assert.equal(fs.existsSync(missing), false);
      assert.equal(fs.existsSync(path.dirname(missing)), false);
    } finally {
      await worker.stop();
    }
  });

  test('with no worker answering, a store command fails with STORE_UNAVAILABLE and names the store worker', async () => {
    const missing = path.join(dir, 'typo', 'plane.sqlite');
    const result = await runCli(['policy', 'list', '--json'], {
      TEMPORAL_ADDRESS: address,
      SANDBOXPLANE_DB: missing,
      SANDBOXPLANE_TASK_QUEUE: `nobody-${randomUUID()}`,
    });
    assert.equal(result.code, 1);
    assert.equal(result.stdout, '');
    const { error } = JSON.parse(result.stderr) as { error: { code: string; message: string; hint: string } };
    assert.equal(error.code, 'STORE_UNAVAILABLE');
    assert.match(error.message, /no worker answered policy\.list/);
    assert.match(error.hint, /sandboxctl worker --role store/);
    assert.equal(fs.existsSync(missing), false);
  });

  test('passes against `sandboxctl worker`, which drains and exits 0 on SIGTERM', async () => {
    const env = { TEMPORAL_ADDRESS: address, SANDBOXPLANE_DB: storePath, SANDBOXPLANE_TASK_QUEUE: `doctor-${randomUUID()}`, SANDBOXPLANE_LOG_LEVEL: 'info' };
    const worker = spawnCli(['worker'], env);
    let stderr = '';
    worker.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      // "worker ready" means new sandboxes can start: the build is current by then (issue 42), so doctor passes right after it.
      await waitForStderr(() => stderr, /"msg":"worker ready"/, 120_000);
      assert.match(stderr, /"buildCurrent":true[^\n]*"msg":"worker ready"/);
      const result = await runCli(['doctor', '--json'], env);
      assert.equal(result.code, 0, result.stdout + result.stderr);
      assert.equal(parseReport(result.stdout).ok, true);
      assert.match(checkNamed(parseReport(result.stdout), 'deployment').detail, /: current build wf-[0-9a-f]{16} \(1 poller\(s\)\)$/);
      assert.equal(checkNamed(parseReport(result.stdout), 'docker').status, 'ok', 'the test run provides an engine');
      assert.match(checkNamed(parseReport(result.stdout), 'worker').detail, /round trip through/);
      assert.match(checkNamed(parseReport(result.stdout), 'store worker').detail, /^sandboxplane-store@.* polls doctor-.*-store$/);
      assert.match(checkNamed(parseReport(result.stdout), 'docker hosts').detail, /^local live, 0\/100 \(memory/);

      const quick = await runCli(['doctor', '--quick', '--json'], env);
      assert.equal(quick.code, 0, quick.stdout + quick.stderr);
      assert.match(checkNamed(parseReport(quick.stdout), 'worker').detail, /poller\(s\) on task queue doctor-.* \(no round trip: --quick\)/);

      const withoutDocker = await runCli(['doctor', '--json'], { ...env, DOCKER_HOST: `unix://${dir}/no-engine.sock` });
      assert.equal(withoutDocker.code, 0, 'Docker is reported, not required');
      const docker = checkNamed(parseReport(withoutDocker.stdout), 'docker');
      assert.equal(docker.status, 'warn');
      assert.equal(docker.required, false);
      assert.match(docker.hint ?? '', /scripts\/docker-engine\.sh/);
    } finally {
      assert.equal(await stopChild(worker), 0);
    }
  });
});

async function waitForStderr(read: () => string, pattern: RegExp, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pattern.test(read())) {
    if (Date.now() > deadline) throw new Error(`no ${pattern} within ${timeoutMs} ms:\n${read().slice(-3000)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
