import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Connection, WorkflowClient } from '@temporalio/client';
import { runCli, spawnCli, stopChild, waitForOutput } from './harness/cli';
import { freePort, isListening } from './harness/free-port';
import { testTemporalAddress } from './harness/test-temporal';

const READY = /dev: ready on /;
const START_TIMEOUT_MS = 120_000;

function roundTripWorkflowId(output: string): string {
  const match = /round trip ok through worker \S+ \(workflow (\S+)\)/.exec(output);
  assert.ok(match?.[1], `no round-trip line in:\n${output}`);
  return match[1];
}

describe('sandboxctl dev', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-dev-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('serves the UI, passes doctor, stops everything on SIGTERM and keeps history across restarts', async () => {
    const [port, uiPort, codecPort] = await Promise.all([freePort(), freePort(), freePort()]);
    const temporalDb = path.join(dir, 'temporal.sqlite');
    const env = { SANDBOXPLANE_DB: path.join(dir, 'plane.sqlite') };
    const args = ['dev', '--port', String(port), '--ui-port', String(uiPort), '--db', temporalDb, '--codec-port', String(codecPort)];

    const first = spawnCli(args, env);
    let firstWorkflowId: string;
    try {
      const output = await waitForOutput(first, READY, START_TIMEOUT_MS);
      firstWorkflowId = roundTripWorkflowId(output);
      assert.match(output, new RegExp(`Temporal UI at http://127\\.0\\.0\\.1:${uiPort}/namespaces/default/workflows`));
      assert.match(output, /turning on local flags SANDBOXPLANE_FLAG_CLOUD_SANDBOX/);

      const ui = await fetch(`http://127.0.0.1:${uiPort}/`);
      assert.equal(ui.status, 200);
      assert.match(output, new RegExp(`codec server at http://127\\.0\\.0\\.1:${codecPort}`));
      const uiOrigin = `http://localhost:${uiPort}`;
      const preflight = await fetch(`http://127.0.0.1:${codecPort}/decode`, { method: 'OPTIONS', headers: { Origin: uiOrigin, 'Access-Control-Request-Method': 'POST' } });
      assert.equal(preflight.headers.get('access-control-allow-origin'), uiOrigin, "the launcher's codec server serves its own UI");

      const doctor = await runCli(['doctor', '--json'], { ...env, TEMPORAL_ADDRESS: `127.0.0.1:${port}` });
      const report = JSON.parse(doctor.stdout) as { ok: boolean; checks: { name: string; status: string }[] };
      assert.equal(doctor.code, 0, doctor.stdout + doctor.stderr);
      assert.equal(report.ok, true);
      for (const name of ['temporal', 'namespace', 'search attributes', 'worker', 'store']) {
        assert.equal(report.checks.find((check) => check.name === name)?.status, 'ok', name);
      }
    } finally {
      assert.equal(await stopChild(first), 0, 'dev exits 0 on SIGTERM');
    }
    assert.equal(await isListening(port), false, 'the Temporal frontend is gone');
    assert.equal(await isListening(uiPort), false, 'the UI is gone');
    assert.equal(await isListening(codecPort), false, 'the codec server is gone');

    const second = spawnCli(args, env);
    try {
      await waitForOutput(second, READY, START_TIMEOUT_MS);
      const connection = await Connection.connect({ address: `127.0.0.1:${port}` });
      try {
        const earlier = await new WorkflowClient({ connection }).getHandle(firstWorkflowId).describe();
        assert.equal(earlier.status.name, 'COMPLETED');
        assert.equal(earlier.type, 'roundTrip');
      } finally {
        await connection.close();
      }
    } finally {
      assert.equal(await stopChild(second, 'SIGINT'), 0, 'dev exits 0 on SIGINT');
    }
    assert.equal(await isListening(port), false);
  });

  describe('with a server already running', () => {
    let address: string;
    before(async () => {
      address = await testTemporalAddress();
    });

    test('uses the server at TEMPORAL_ADDRESS instead of starting one, and leaves it running', async () => {
      const child = spawnCli(['dev'], {
        TEMPORAL_ADDRESS: address,
        SANDBOXPLANE_DB: path.join(dir, 'existing.sqlite'),
        SANDBOXPLANE_TASK_QUEUE: 'dev-existing-server',
      });
      try {
        const output = await waitForOutput(child, READY, START_TIMEOUT_MS);
        assert.match(output, new RegExp(`a Temporal server already answers at ${address.replace(/\./g, '\\.')}; using it`));
        assert.doesNotMatch(output, /starting the Temporal dev server/);
      } finally {
        assert.equal(await stopChild(child), 0);
      }
      const port = Number(address.split(':')[1]);
      assert.equal(await isListening(port), true, 'the server it did not start is still up');
    });
  });

  test('refuses a bad flag with exit code 2 and names it', async () => {
    const result = await runCli(['dev', '--ui-port', '99999', '--json']);
    assert.equal(result.code, 2);
    const { error } = JSON.parse(result.stderr) as { error: { code: string; message: string } };
    assert.equal(error.code, 'INVALID_INPUT');
    assert.match(error.message, /--ui-port must be at most 65535/);
  });
});
