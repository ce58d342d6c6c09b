/**
 * Issue 29, item 6: a moto container's operator token travels only in a header, so after a
 * failing health probe (the emulator frozen as it starts, the create failing
 * EMULATOR_UNHEALTHY with the endpoint in its message) none of the places that keep text
 * about it holds the token: the workflow's history (its payloads decoded), the SQLite file
 * and its rows, the worker's log lines, `status --json`.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { OPERATOR_TOKEN_LABEL } from '../src/adapters/container-emulator';
import { fetchJson } from '../src/adapters/health-gate';
import { operatorHeaders, operatorUrl } from '../src/adapters/operator-endpoint';
import { payloadCodecFor } from '../src/codec/codec-settings';
import { SANDBOX_ID_LABEL } from '../src/domain/docker-labels';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import { DockerContainerBroker } from '../src/docker';
import { createLogger } from '../src/logging/logger';
import { runCli } from './harness/cli';
import { textsOf } from './helpers/history-texts';
import { cliOutput } from './helpers/cli-json';
import { testTemporalAddress } from './harness/test-temporal';
import { startTestWorker, type TestWorker } from './harness/test-worker';

const motoImage = process.env.SANDBOXPLANE_MOTO_IMAGE;
const skip = motoImage === undefined && 'needs the moto image and the Docker engine (SANDBOXPLANE_MOTO_IMAGE, set by the test runner)';
const ID = 'token-probe';

/** Stops a container's process where the engine runs it (its container stays `running`, its port answers nothing); else pauses it. */
function freeze(containerId: string): void {
  const pid = Number(execFileSync('docker', ['inspect', '-f', '{{.State.Pid}}', containerId], { env: process.env }).toString().trim());
  try {
    if (pid > 0) process.kill(pid, 'SIGSTOP');
  } catch {
    // The engine's processes are not in this PID namespace: a paused container answers nothing either.
    execFileSync('docker', ['pause', containerId], { env: process.env, stdio: 'ignore' });
  }
}

describe('the operator token never reaches text (real moto, real dev server)', { skip }, () => {
  let worker: TestWorker;
  const logLines: string[] = [];

  before(async () => {
    worker = await startTestWorker(await testTemporalAddress(), {
      env: { SANDBOXPLANE_EMULATOR_HEALTH_TIMEOUT: '6s', SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1', SANDBOXPLANE_MOTO_IMAGE: motoImage ?? '' },
      logger: createLogger('debug', { write: (line: string) => void logLines.push(line) }),
    });
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
  });
  after(async () => {
    await worker?.sandboxes.destroy(ID).catch(() => undefined);
    await worker?.stop();
  });

  test('the guard takes the token from the header only; a URL-bearing error of a call with it names no token', async () => {
    const broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
    const created = await worker.sandboxes.create({ id: 'token-guard', principal: 'agent-1', adapter: 'moto', services: ['s3'] }, { wait: 'ready' });
    try {
      const [first] = created.runtimeIds;
      assert.ok(first !== undefined && created.endpoint !== null);
      const token = (await broker.inspect(first)).labels[OPERATOR_TOKEN_LABEL];
      assert.ok(token !== undefined && token.length >= 32, 'the container holds its token in a label');
      assert.equal((await fetch(`${created.endpoint}/_sandboxplane/${token}/moto-api/data.json`)).status, 403, 'the token in a path is no key');
      assert.equal((await fetch(`${created.endpoint}/_sandboxplane/moto-api/data.json`)).status, 403);
      assert.equal((await fetch(`${created.endpoint}/_sandboxplane/moto-api/data.json`, { headers: { 'x-sandboxplane-operator': 'guess' } })).status, 403);
      const access = { endpoint: created.endpoint, token };
      assert.equal((await fetchJson(operatorUrl(access, '/moto-api/data.json'), AbortSignal.timeout(5_000), operatorHeaders(access))).ok, true);
      const refused = await fetchJson(operatorUrl(access, '/moto-api/no-such-thing'), AbortSignal.timeout(5_000), operatorHeaders(access));
      assert.ok(!refused.ok);
      assert.match(refused.reason, /\/_sandboxplane\/moto-api\/no-such-thing answered HTTP \d+/);
      assert.ok(!refused.reason.includes(token));
    } finally {
      await worker.sandboxes.destroy('token-guard');
    }
  });

  test('after a failing health probe (EMULATOR_UNHEALTHY): not in the history, SQLite, the log or status', async () => {
    const broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
    // Every container the create starts (a retry starts another) is frozen as soon as it is seen, its token kept.
    const tokens = new Set<string>();
    const frozen = new Set<string>();
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        for (const container of await broker.list({ [SANDBOX_ID_LABEL]: ID }).catch(() => [])) {
          const token = container.labels[OPERATOR_TOKEN_LABEL];
          if (token !== undefined) tokens.add(token);
          if (!frozen.has(container.id) && container.state === 'running') {
            frozen.add(container.id);
            try {
              freeze(container.id);
            } catch {
              // Removed meanwhile.
            }
          }
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    let final: SandboxStatus;
    try {
      await worker.sandboxes.create({ id: ID, principal: 'agent-1', adapter: 'moto', services: ['s3'] });
      final = (await worker.client.workflow.getHandle(`sandbox-${ID}`).result()) as SandboxStatus;
    } finally {
      watching = false;
      await watcher;
    }
    assert.equal(final.state, 'FAILED');
    assert.equal(final.error?.code, 'EMULATOR_UNHEALTHY');
    assert.match(final.error?.message ?? '', /the emulator at http:\/\/127\.0\.0\.1:\d+ was not healthy/);
    assert.ok(tokens.size > 0, 'the token of each container was read from its label');
    const leaked = (text: string) => [...tokens].some((token) => text.includes(token));

    // The history as stored, and every payload in it decoded (what the UI shows through the codec server).
    const texts = await textsOf(await worker.client.workflow.getHandle(`sandbox-${ID}`).fetchHistory(), payloadCodecFor(worker.config.codec));
    const history = texts.join('\n');
    assert.match(history, /was not healthy after/, 'the reading works: the failing probe is in the history');
    assert.ok(!leaked(history), 'the history holds the token');

    const rows = (worker.store.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map(({ name }) =>
      JSON.stringify(worker.store.db.prepare(`SELECT * FROM "${name}"`).all()),
    );
    assert.match(rows.join('\n'), /not healthy/, 'the reading works: the failure is audited');
    assert.ok(!leaked(rows.join('\n')), 'a SQLite row holds the token');
    const file = worker.config.storePath;
    for (const stored of [file, `${file}-wal`].filter((candidate) => fs.existsSync(candidate))) {
      assert.ok(!leaked(fs.readFileSync(stored).toString('latin1')), `${stored} holds the token`);
    }

    assert.ok(
      logLines.some((line) => line.includes('EMULATOR_UNHEALTHY') || line.includes('not healthy')),
      'the reading works: the failure is in the log',
    );
    assert.ok(!leaked(logLines.join('\n')), "the worker's log holds the token");

    const status = await runCli(['status', ID, '--json'], worker.env);
    const shown = cliOutput<SandboxStatus>(status);
    assert.equal(shown.state, 'FAILED');
    assert.ok(!leaked(`${status.stdout}\n${status.stderr}`), 'status --json shows the token');
  });
});
