/**
 * `sandboxctl status` without the Temporal SDK (docs/performance.md#cli-start-up): one
 * QueryWorkflow over node:http2 must say exactly what the SDK's `SandboxClient.status`
 * says, on a real dev server and worker, with the plane's payload codec on.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { leanSandboxStatus, type LeanStatusOptions } from '../src/client/lean-status-query';
import { SandboxClient } from '../src/client/sandbox-client';
import { payloadCodecFor } from '../src/codec/codec-settings';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import type { SandboxPlaneError } from '../src/domain/errors';
import { enrolApprover } from './helpers/approvers';
import { cliEnv, REPO_ROOT, runCli } from './harness/cli';
import { cliFailure, cliOutput } from './helpers/cli-json';
import { freePort } from './harness/free-port';
import { rejectsWith } from './helpers/rejects-with';
import { testTemporalAddress } from './harness/test-temporal';
import { startTestWorker, type TestWorker } from './harness/test-worker';

/** The status without the one field that follows the clock; the seconds left are compared apart, within a few seconds. */
function sameStatus(actual: SandboxStatus, expected: SandboxStatus, what: string): void {
  const { timeLeftSeconds: actualLeft, ...actualRest } = actual;
  const { timeLeftSeconds: expectedLeft, ...expectedRest } = expected;
  assert.deepEqual(actualRest, expectedRest, what);
  assert.ok(Math.abs((actualLeft ?? 0) - (expectedLeft ?? 0)) <= 3, `${what}: ${actualLeft} and ${expectedLeft} seconds left`);
}

/** The human output without the seconds left (minutes at this TTL), which follow the clock. */
const withoutTimeLeft = (text: string) => text.replace(/\b\d+h( \d+m)?\b/g, '<left>');

describe('sandboxctl status answers as the SDK does, without loading it', () => {
  let worker: TestWorker;
  const own = 'lean-own';
  const other = 'lean-other';
  const cli = (args: string[], env: Record<string, string> = {}) => runCli(args, { ...worker.env, ...env });
  let lean: LeanStatusOptions;

  before(async () => {
    worker = await startTestWorker(await testTemporalAddress());
    worker.store.policies.add({ principalPattern: 'agent-lean-*', capability: 'cloud.sandbox', effect: 'require_approval' });
    const alice = await enrolApprover(worker, 'alice');
    for (const [id, principal] of [
      [own, 'agent-lean-a'],
      [other, 'agent-lean-b'],
    ] as const) {
      assert.equal((await worker.sandboxes.create({ id, principal, services: ['s3'], ttlSeconds: 3 * 3600, purpose: `for ${principal}` })).state, 'AWAITING_APPROVAL');
      const outcome = await worker.sandboxes.approve(id, { approver: 'alice', reason: 'alice says yes', code: await alice.code() });
      assert.equal(outcome.attempt.verdict, 'accepted');
    }
    await worker.sandboxes.create({ id: own, principal: 'agent-lean-a', services: ['s3'], ttlSeconds: 3 * 3600, purpose: 'for agent-lean-a' }, { wait: 'ready' });
    lean = {
      address: worker.config.temporalAddress,
      namespace: worker.config.temporalNamespace,
      tls: undefined,
      payloadCodec: payloadCodecFor(worker.config.codec),
      principal: undefined,
    };
  });
  after(async () => worker?.stop());

  test('the lean query decodes the encrypted result to what SandboxClient.status gives, and declines what it cannot read', async () => {
    const status = await leanSandboxStatus(own, lean);
    assert.ok(status !== undefined, 'answered without the SDK');
    sameStatus(status, await worker.sandboxes.status(own), 'operator view');
    assert.equal(status.approval?.approver, 'alice');
    // Without the codec the result is binary/encrypted: the lean path leaves it to the SDK rather than answer differently.
    assert.equal(await leanSandboxStatus(own, { ...lean, payloadCodec: null }), undefined);
  });

  test('status --json and the human form equal the SDK path, operator and bound caller alike', async () => {
    // With tracing on, `status` takes the SDK's client (its interceptors carry the trace): a sink that takes the spans.
    let spansPosted = 0;
    const sink = http.createServer((request, response) => {
      spansPosted += 1;
      request.resume();
      request.on('end', () => response.end());
    });
    await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
    const traced = { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(sink.address() as { port: number }).port}` };
    try {
      const sdk = await worker.sandboxes.status(own);
      const [json, sdkJson, human, sdkHuman] = await Promise.all([
        cli(['status', own, '--json']),
        cli(['status', own, '--json'], traced),
        cli(['status', own]),
        cli(['status', own], traced),
      ]);
      sameStatus(cliOutput<SandboxStatus>(json), sdk, 'status --json');
      sameStatus(cliOutput<SandboxStatus>(json), cliOutput<SandboxStatus>(sdkJson), 'status --json, lean and SDK path');
      assert.equal(human.code, 0, human.stderr);
      assert.equal(sdkHuman.code, 0, sdkHuman.stderr);
      assert.equal(withoutTimeLeft(human.stdout), withoutTimeLeft(sdkHuman.stdout));
      assert.match(human.stdout, /alice says yes/);
      assert.ok(spansPosted >= 2, 'the SDK path ran, traced');
    } finally {
      sink.close();
    }

    const bound = new SandboxClient({ client: worker.client, taskQueue: worker.config.taskQueue, principal: 'agent-lean-a' });
    const boundSdk = await bound.status(own);
    assert.equal(boundSdk.approval?.approver, 'a reviewer', 'the SDK hides the approver from an agent');
    const boundJson = cliOutput<SandboxStatus>(await cli(['status', own, '--json'], { SANDBOXPLANE_PRINCIPAL: 'agent-lean-a' }));
    sameStatus(boundJson, boundSdk, 'status --json as agent-lean-a');
    sameStatus((await leanSandboxStatus(own, { ...lean, principal: 'agent-lean-a' })) as SandboxStatus, boundSdk, 'lean, bound');
  });

  test("a bound caller asking for another principal's sandbox, and an unknown id, are NOT_FOUND as the SDK says it", async () => {
    const bound = new SandboxClient({ client: worker.client, taskQueue: worker.config.taskQueue, principal: 'agent-lean-a' });
    for (const [id, env] of [
      [other, { SANDBOXPLANE_PRINCIPAL: 'agent-lean-a' }],
      ['lean-nobody', {}],
    ] as const) {
      const sdkError = await (env.SANDBOXPLANE_PRINCIPAL === undefined ? worker.sandboxes : bound).status(id).then(
        () => assert.fail(`the SDK found ${id}`),
        (err: unknown) => err as SandboxPlaneError,
      );
      const error = cliFailure(await cli(['status', id, '--json'], env), 4, 'NOT_FOUND');
      assert.deepEqual({ code: error.code, message: error.message, hint: error.hint }, sdkError.toJSON());
      await assert.rejects(leanSandboxStatus(id, { ...lean, principal: env.SANDBOXPLANE_PRINCIPAL }), rejectsWith('NOT_FOUND', new RegExp(`^no sandbox ${id}$`)));
    }
  });

  test('nothing listening is TEMPORAL_UNREACHABLE after the connect timeout', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    const started = Date.now();
    await assert.rejects(
      leanSandboxStatus(own, { ...lean, address, connectTimeoutMs: 1_500 }),
      rejectsWith('TEMPORAL_UNREACHABLE', /cannot reach Temporal at 127\.0\.0\.1:\d+ \(without TLS/),
    );
    const took = Date.now() - started;
    assert.ok(took >= 1_400 && took < 3_500, `gave up after ${took} ms, for a timeout of 1500`);
    const error = cliFailure(await cli(['status', own, '--json'], { TEMPORAL_ADDRESS: address }), 1, 'TEMPORAL_UNREACHABLE');
    assert.match(error.message, new RegExp(`cannot reach Temporal at ${address.replace(/\./g, '\\.')}`));
  });

  test('the compiled status command loads neither the Temporal SDK nor the other commands', async () => {
    const main = path.join(REPO_ROOT, 'src', 'cli', 'main.ts');
    const probe = `require(${JSON.stringify(main)}).main(['node', 'sandboxctl', 'status', ${JSON.stringify(own)}, '--json']).then((code) => {
      const loaded = Object.keys(require.cache).filter((file) => /@temporalio|@grpc|protobufjs|[\\/]cli[\\/]program|sandbox-commands/.test(file));
      process.stderr.write(JSON.stringify({ code, loaded }));
    });`;
    const child = spawn(process.execPath, ['--import', 'tsx', '-e', probe], { cwd: REPO_ROOT, env: cliEnv(worker.env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await new Promise((resolve) => child.once('close', resolve));
    const { code, loaded } = JSON.parse(stderr.slice(stderr.lastIndexOf('{"code"'))) as { code: number; loaded: string[] };
    assert.equal(code, 0, stderr);
    assert.equal((JSON.parse(stdout) as SandboxStatus).id, own);
    assert.deepEqual(loaded, []);
  });
});
