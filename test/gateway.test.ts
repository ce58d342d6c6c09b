/**
 * `sandboxctl gateway` (DESIGN §18) as a process of its own, beside a real worker on the dev
 * server: keys made with `sandboxctl keys add`, HTTP with curl's equivalent (fetch), the
 * SDK's GatewayClient, and an MCP session over Streamable HTTP through the SDK's client.
 */
import assert from 'node:assert/strict';
import { execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { GatewayClient } from '../src/client/gateway-client';
import type { SandboxSummary } from '../src/client/sandbox-client';
import { PLANE_LABEL } from '../src/domain/docker-labels';
import type { IacStatus } from '../src/domain/iac/iac-run';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import { DockerContainerBroker } from '../src/docker';
import { runCli, spawnCli, stopChild, waitForOutput } from './harness/cli';
import { cliFailure, cliOutput } from './helpers/cli-json';
import { eventually } from './harness/eventually';
import { MCP_TOOLS } from './helpers/mcp-tools';
import { testTemporalAddress } from './harness/test-temporal';
import { startTestWorker, type TestWorker } from './harness/test-worker';

const motoImage = process.env.SANDBOXPLANE_MOTO_IMAGE;

interface ErrorDocument {
  error: { code: string; message: string; hint: string };
}

interface NewKey {
  principal: string;
  keyId: string;
  key: string;
}

const QUEUE = '{"Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "gateway-queue"}}}}';

describe('the gateway: API keys, HTTP, the SDK and MCP over Streamable HTTP (real dev server and worker)', () => {
  const broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
  let worker: TestWorker;
  let gateway: ChildProcess;
  let url: string;
  let gatewayLog = '';
  let keyA: NewKey;
  let keyB: NewKey;
  let keySlow: NewKey;
  const operator = (...args: string[]) => runCli([...args, '--json'], worker.env);

  /** One HTTP request to the gateway; `key` null sends no Authorization header. */
  async function http(method: string, path: string, key: string | null, body?: unknown): Promise<{ status: number; body: unknown; headers: Headers }> {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { ...(key !== null ? { authorization: `Bearer ${key}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: response.status, body: (await response.json()) as unknown, headers: response.headers };
  }

  function refused(answer: { status: number; body: unknown }, status: number, code: string): ErrorDocument['error'] {
    assert.equal(answer.status, status, JSON.stringify(answer.body));
    const { error } = answer.body as ErrorDocument;
    assert.equal(error.code, code, error.message);
    assert.ok(error.hint.length > 0, 'every refusal carries a hint');
    return error;
  }

  before(async () => {
    worker = await startTestWorker(await testTemporalAddress(), {
      env: { ...(motoImage !== undefined ? { SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1', SANDBOXPLANE_MOTO_IMAGE: motoImage } : {}) },
    });
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.iac.local', effect: 'allow' });
    [keyA, keyB, keySlow] = await Promise.all(
      [['agent-a'], ['agent-b'], ['agent-slow', '--rate-per-minute', '3']].map(async (args) => cliOutput<NewKey>(await operator('keys', 'add', ...args))),
    ).then((keys) => keys as [NewKey, NewKey, NewKey]);
    gateway = spawnCli(['gateway', '--listen', '127.0.0.1:0', '--json'], { ...worker.env, SANDBOXPLANE_LOG_LEVEL: 'info' });
    gateway.stderr?.on('data', (chunk: Buffer) => (gatewayLog += chunk.toString()));
    const ready = await waitForOutput(gateway, /"mcp":\s*"[^"]+"\s*\}/, 60_000);
    url = (JSON.parse(ready) as { url: string }).url;
  });

  after(async () => {
    if (gateway !== undefined) await stopChild(gateway);
    const plane = worker?.plane.planeId;
    await worker?.stop();
    if (plane !== undefined) for (const container of await broker.list({ [PLANE_LABEL]: plane })) await broker.remove(container.id, { force: true });
  });

  test('keys add shows a key once, keys list never shows it; the store keeps a slow hash only', async () => {
    assert.match(keyA.key, /^spk_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    const { keys } = cliOutput<{ keys: Record<string, unknown>[] }>(await operator('keys', 'list'));
    assert.deepEqual(keys.map((key) => key.principal).sort(), ['agent-a', 'agent-b', 'agent-slow']);
    assert.ok(!JSON.stringify(keys).includes(keyA.key.slice(17)), 'no secret in the list');
    const row = worker.store.db.prepare('SELECT secret_hash AS hash FROM api_keys WHERE key_id = ?').get(keyA.keyId) as { hash: string };
    assert.match(row.hash, /^scrypt\$32768\$8\$1\$/);
    assert.ok(!row.hash.includes(keyA.key.slice(17)));
  });

  test('the OpenAPI document needs no key; everything else answers 401 without a valid one, in one text', async () => {
    const document = await http('GET', '/v1/openapi.json', null);
    assert.equal(document.status, 200);
    const paths = Object.keys((document.body as { paths: Record<string, unknown> }).paths).sort();
    assert.deepEqual(paths, [
      '/mcp',
      '/v1/events',
      '/v1/iac/{runId}',
      '/v1/sandboxes',
      '/v1/sandboxes/{id}',
      '/v1/sandboxes/{id}/extend',
      '/v1/sandboxes/{id}/iac',
      '/v1/sandboxes/{id}/tree',
      '/v1/snapshots/{id}/forks',
      '/v1/usage',
    ]);
    const none = refused(await http('GET', '/v1/sandboxes', null), 401, 'UNAUTHENTICATED');
    const forged = refused(await http('GET', '/v1/sandboxes', `spk_${keyA.keyId}_${'A'.repeat(43)}`), 401, 'UNAUTHENTICATED');
    const garbage = refused(await http('GET', '/v1/nowhere', 'hello'), 401, 'UNAUTHENTICATED');
    assert.equal(new Set([none.message, forged.message, garbage.message]).size, 1, 'a refusal says nothing of why');
  });

  test("key A creates, lists, reads and extends its sandbox; key B sees it as 404; a body's principal changes nothing", async () => {
    const created = await http('POST', '/v1/sandboxes', keyA.key, { id: 'gw-a', services: ['s3'], ttlSeconds: 600, wait: 'ready' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const sandbox = created.body as SandboxStatus;
    assert.deepEqual([sandbox.state, sandbox.principal], ['READY', 'agent-a']);

    const impostor = refused(await http('POST', '/v1/sandboxes', keyA.key, { id: 'gw-b', principal: 'agent-b', services: ['s3'] }), 403, 'PRINCIPAL_MISMATCH');
    assert.match(impostor.message, /agent-a/);
    assert.equal(await worker.sandboxes.get('gw-b'), undefined, 'nothing was made');

    const listed = (await http('GET', '/v1/sandboxes', keyA.key)).body as { sandboxes: SandboxSummary[] };
    assert.deepEqual(
      listed.sandboxes.map((row) => [row.id, row.principal]),
      [['gw-a', 'agent-a']],
    );
    assert.deepEqual(((await http('GET', '/v1/sandboxes', keyB.key)).body as { sandboxes: SandboxSummary[] }).sandboxes, []);
    refused(await http('GET', '/v1/sandboxes/gw-a', keyB.key), 404, 'NOT_FOUND');
    refused(await http('DELETE', '/v1/sandboxes/gw-a', keyB.key), 404, 'NOT_FOUND');
    refused(await http('POST', '/v1/sandboxes/gw-a/extend', keyB.key, { ttlSeconds: 60 }), 404, 'NOT_FOUND');

    const got = await http('GET', '/v1/sandboxes/gw-a', keyA.key);
    assert.equal((got.body as SandboxStatus).state, 'READY');
    const extended = await http('POST', '/v1/sandboxes/gw-a/extend', keyA.key, { ttlSeconds: 60, reason: 'more time' });
    assert.equal(extended.status, 200, JSON.stringify(extended.body));
    assert.equal(Date.parse((extended.body as SandboxStatus).expiresAt ?? '') - Date.parse(sandbox.expiresAt ?? ''), 60_000);
    const extendRow = await eventually('the extend audited', async () => worker.store.sandboxes.audit('gw-a').find((op) => op.action === 'extended'));
    assert.equal(extendRow.actor, `agent:key:${keyA.keyId}`, 'the audit trail names the key, as the agent');

    const bad = refused(await http('POST', '/v1/sandboxes', keyA.key, { services: 's3' }), 400, 'INVALID_INPUT');
    assert.match(bad.message, /services/);
  });

  test('the SDK speaks to the gateway with a key: status, list, destroy', async () => {
    const sdk = new GatewayClient({ url, apiKey: keyA.key });
    assert.equal((await sdk.status('gw-a')).state, 'READY');
    assert.deepEqual(
      (await sdk.list()).map((row) => row.id),
      ['gw-a'],
    );
    assert.equal(await new GatewayClient({ url, apiKey: keyB.key }).get('gw-a'), undefined);
    await assert.rejects(new GatewayClient({ url, apiKey: keyB.key }).destroy('gw-a'), (err: Error & { code?: string }) => err.code === 'NOT_FOUND');
    const destroyed = await sdk.destroy('gw-a', { reason: 'done' });
    assert.equal(destroyed.state, 'DESTROYED');
  });

  test("GET /v1/events: key A reads its sandbox's events and follows with the cursor (a long poll); key B sees none of them, and 404 for the sandbox", async () => {
    interface Page {
      events: { kind: string; reason: string; sandboxId: string | null; principal: string }[];
      next: string;
    }
    const read = await http('GET', '/v1/events?sandboxId=gw-a&since=1h', keyA.key);
    assert.equal(read.status, 200, JSON.stringify(read.body));
    const page = read.body as Page;
    assert.deepEqual(
      page.events.map((e) => [e.kind, e.reason]),
      [
        ['sandbox.requested', 'agent'],
        ['sandbox.ready', 'agent'],
        ['sandbox.extended', 'agent'],
        ['sandbox.destroyed', 'agent'],
      ],
    );
    const mine = ((await http('GET', '/v1/events', keyA.key)).body as Page).events;
    assert.ok(mine.every((e) => e.principal === 'agent-a'));

    const others = (await http('GET', '/v1/events', keyB.key)).body as Page;
    assert.ok(!others.events.some((e) => e.sandboxId === 'gw-a'), 'none of key A’s events');
    const theirs = refused(await http('GET', '/v1/events?sandboxId=gw-a', keyB.key), 404, 'NOT_FOUND');
    const never = refused(await http('GET', '/v1/events?sandboxId=gw-never', keyB.key), 404, 'NOT_FOUND');
    assert.equal(theirs.message.replace('gw-a', 'ID'), never.message.replace('gw-never', 'ID'));
    assert.match(refused(await http('GET', '/v1/events?since=yesterday', keyA.key), 400, 'INVALID_INPUT').message, /since/);
    refused(await http('GET', '/v1/events?after=12', keyA.key), 400, 'INVALID_INPUT');
    refused(await http('GET', '/v1/events?waitSeconds=60', keyA.key), 400, 'INVALID_INPUT');

    // Follow: a read after the cursor waits at the gateway until key A's next sandbox is requested.
    const sdk = new GatewayClient({ url, apiKey: keyA.key });
    const started = Date.now();
    const waiting = sdk.events({ after: page.next, waitSeconds: 20 });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.equal((await http('POST', '/v1/sandboxes', keyA.key, { id: 'gw-ev', services: ['s3'], ttlSeconds: 600 })).status, 201);
    const next = await waiting;
    assert.equal(next.events[0]?.kind, 'sandbox.requested');
    assert.equal(next.events[0]?.sandboxId, 'gw-ev');
    assert.ok(Date.now() - started < 15_000, 'answered when the event came, not at the end of the wait');
    await sdk.destroy('gw-ev');
  });

  test('key A forks its snapshot into two sandboxes at once and reads their tree; key B gets 404 for both; past SANDBOXPLANE_FORK_MAX is 400', async () => {
    const source = await http('POST', '/v1/sandboxes', keyA.key, { id: 'gw-fsrc', services: ['s3'], ttlSeconds: 600, wait: 'ready' });
    assert.equal(source.status, 201, JSON.stringify(source.body));
    const { snapshotId } = await worker.sandboxes.snapshot('gw-fsrc');
    refused(await http('POST', `/v1/snapshots/${snapshotId}/forks`, keyB.key, { count: 2 }), 404, 'NOT_FOUND');
    const tooMany = refused(await http('POST', `/v1/snapshots/${snapshotId}/forks`, keyA.key, { count: 21 }), 400, 'INVALID_INPUT');
    assert.match(tooMany.message, /count: must be at most 20 \(SANDBOXPLANE_FORK_MAX\)/);
    const forked = await http('POST', `/v1/snapshots/${snapshotId}/forks`, keyA.key, { count: 2, wait: 'ready' });
    assert.equal(forked.status, 201, JSON.stringify(forked.body));
    const forks = (forked.body as { sandboxes: SandboxStatus[] }).sandboxes;
    assert.deepEqual(
      forks.map((fork) => [fork.state, fork.principal, fork.parent, fork.root]),
      [
        ['READY', 'agent-a', 'gw-fsrc', 'gw-fsrc'],
        ['READY', 'agent-a', 'gw-fsrc', 'gw-fsrc'],
      ],
    );
    const tree = (await http('GET', `/v1/sandboxes/${forks[0]?.id}/tree`, keyA.key)).body as { root: string; sandboxes: SandboxStatus[] };
    assert.equal(tree.root, 'gw-fsrc');
    assert.deepEqual(new Set(tree.sandboxes.map((member) => member.id)), new Set(['gw-fsrc', ...forks.map((fork) => fork.id)]));
    refused(await http('GET', `/v1/sandboxes/${forks[0]?.id}/tree`, keyB.key), 404, 'NOT_FOUND');
    const ended = await worker.sandboxes.destroyTree('gw-fsrc');
    assert.deepEqual(
      ended.sandboxes.map((member) => ('state' in member ? member.state : member.error.code)),
      ['DESTROYED', 'DESTROYED', 'DESTROYED'],
    );
  });

  test('an MCP session over Streamable HTTP at /mcp acts as the key: the same tools, its own sandboxes only', async () => {
    const connect = async (key: string) => {
      const client = new McpClient({ name: 'gateway-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
      return client;
    };
    const mcp = await connect(keyA.key);
    try {
      const tools = (await mcp.listTools()).tools.map((tool) => tool.name).sort();
      assert.deepEqual(tools, [...MCP_TOOLS]);
      const created = (await mcp.callTool({ name: 'create_sandbox', arguments: { id: 'gw-mcp', services: ['sqs'], wait: 'ready' } })) as CallToolResult;
      assert.notEqual(created.isError, true, JSON.stringify(created.content));
      assert.deepEqual([(created.structuredContent as unknown as SandboxStatus).principal, (created.structuredContent as unknown as SandboxStatus).state], ['agent-a', 'READY']);
      const destroyed = (await mcp.callTool({ name: 'destroy_sandbox', arguments: { id: 'gw-mcp' } })) as CallToolResult;
      assert.equal((destroyed.structuredContent as unknown as SandboxStatus).state, 'DESTROYED');
      assert.match(worker.store.sandboxes.audit('gw-mcp').find((op) => op.action === 'destroying')?.actor ?? '', new RegExp(`^agent:mcp key:${keyA.keyId}$`));
    } finally {
      await mcp.close();
    }
    const other = await connect(keyB.key);
    try {
      const seen = (await other.callTool({ name: 'get_sandbox', arguments: { id: 'gw-mcp' } })) as CallToolResult;
      assert.equal(seen.isError, true);
      assert.equal((seen.structuredContent as unknown as ErrorDocument).error.code, 'NOT_FOUND');
    } finally {
      await other.close();
    }
    const noKey = await fetch(`${url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(noKey.status, 401);
  });

  test(
    'an IaC plan through the gateway: 201 with the run; its status for the key, 404 for another',
    { skip: motoImage === undefined && 'needs the moto image (SANDBOXPLANE_MOTO_IMAGE, set by the test runner)' },
    async () => {
      const sdk = new GatewayClient({ url, apiKey: keyA.key });
      await sdk.create({ id: 'gw-iac', adapter: 'moto', services: ['sqs', 'cloudformation'] }, { wait: 'ready' });
      const planned = await http('POST', '/v1/sandboxes/gw-iac/iac', keyA.key, { mode: 'plan', template: QUEUE, templateName: 'queue.json' });
      assert.equal(planned.status, 201, JSON.stringify(planned.body));
      const run = planned.body as IacStatus;
      assert.equal(run.state, 'PLANNED');
      assert.deepEqual(
        run.plan?.changes.map((change) => [change.action, change.logicalId]),
        [['Add', 'Q']],
      );
      assert.equal(((await http('GET', `/v1/iac/${run.runId}`, keyA.key)).body as IacStatus).runId, run.runId);
      refused(await http('GET', `/v1/iac/${run.runId}`, keyB.key), 404, 'NOT_FOUND');
      refused(await http('POST', '/v1/sandboxes/gw-iac/iac', keyA.key, { mode: 'plan', template: QUEUE, cdkApp: '/tmp/app' }), 400, 'INVALID_INPUT');
      await sdk.destroy('gw-iac');
    },
  );

  test('what a gateway refuses of HTTP itself: other methods (405 with Allow), bad escapes, batches and CDK apps over MCP, oversized bodies', async () => {
    const unauthenticated = await http('GET', '/v1/sandboxes', null);
    assert.equal(unauthenticated.headers.get('www-authenticate'), 'Bearer');
    const wrongMethod = await http('PUT', '/v1/sandboxes', keyA.key, {});
    assert.equal(wrongMethod.status, 405);
    assert.equal(wrongMethod.headers.get('allow'), 'POST, GET');
    const streamed = await fetch(`${url}/mcp`, { headers: { authorization: `Bearer ${keyA.key}`, accept: 'text/event-stream' }, signal: AbortSignal.timeout(10_000) });
    assert.equal(streamed.status, 405, 'no stream is opened on GET /mcp');
    assert.equal(streamed.headers.get('allow'), 'POST');
    refused(await http('GET', '/v1/sandboxes/%E0%A4%A', keyA.key), 400, 'INVALID_INPUT');
    const batch = [
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    ];
    assert.match(refused(await http('POST', '/mcp', keyA.key, batch), 400, 'INVALID_INPUT').message, /not a batch/);

    const mcpCall = async (name: string, args: Record<string, unknown>) =>
      (await fetch(`${url}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keyA.key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
      }).then((response) => response.json())) as { result: CallToolResult };
    const cdk = await mcpCall('plan_iac', { sandboxId: 'gw-a', cdkApp: '/tmp' });
    assert.equal(cdk.result.isError, true);
    assert.match((cdk.result.structuredContent as unknown as ErrorDocument).error.message, /cdkApp/, 'a CDK app folder is not synthesized on the gateway');
    const listed = (await fetch(`${url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keyA.key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    }).then((response) => response.json())) as { result: { tools: { name: string; inputSchema: { properties: Record<string, unknown> } }[] } };
    const plan = listed.result.tools.find((tool) => tool.name === 'plan_iac');
    assert.ok(plan !== undefined && !('cdkApp' in plan.inputSchema.properties) && 'template' in plan.inputSchema.properties);

    const huge = await fetch(`${url}/v1/sandboxes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keyA.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ services: ['s3'], purpose: 'x'.repeat(3 * 1024 * 1024) }),
    });
    assert.equal(huge.status, 400);
    assert.equal(huge.headers.get('connection'), 'close');
    assert.equal((await http('GET', '/v1/sandboxes', keyA.key)).status, 200, 'the gateway goes on');
  });

  test('per-key rate limit: past its requests per minute a key gets 429 RATE_LIMITED with Retry-After', async () => {
    for (let i = 0; i < 3; i += 1) assert.equal((await http('GET', '/v1/sandboxes', keySlow.key)).status, 200);
    const limited = await http('GET', '/v1/sandboxes', keySlow.key);
    const error = refused(limited, 429, 'RATE_LIMITED');
    assert.match(error.message, /3 requests a minute/);
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    assert.equal((await http('GET', '/v1/sandboxes', keyB.key)).status, 200, "another key's bucket is its own");
  });

  test('requests in flight per key: with --max-in-flight 2, five creates that wait at once get three 429s; the two wait, and end', async () => {
    worker.store.policies.add({ principalPattern: 'agent-waiting', capability: 'cloud.sandbox', effect: 'require_approval' });
    const waiting = cliOutput<NewKey & { maxInFlight: number }>(await operator('keys', 'add', 'agent-waiting', '--max-in-flight', '2'));
    assert.equal(waiting.maxInFlight, 2);
    const answers = await Promise.all(
      Array.from({ length: 5 }, (_, index) => http('POST', '/v1/sandboxes', waiting.key, { id: `gw-wait-${index}`, services: ['s3'], wait: 'ready', timeoutSeconds: 8 })),
    );
    const statuses = answers.map((answer) => answer.status).sort();
    assert.deepEqual(statuses, [429, 429, 429, 504, 504], JSON.stringify(answers.map((answer) => answer.body)));
    for (const answer of answers.filter((one) => one.status === 429)) {
      assert.match(refused(answer, 429, 'RATE_LIMITED').message, /has 2 requests in flight/);
      assert.equal(answer.headers.get('retry-after'), '1');
    }
    // Once they ended, the key has its two again.
    assert.equal((await http('GET', '/v1/sandboxes', waiting.key)).status, 200);
    const made = await Promise.all(Array.from({ length: 5 }, (_, index) => worker.sandboxes.get(`gw-wait-${index}`)));
    assert.equal(made.filter((status) => status !== undefined).length, 2, 'a refused request made nothing: only the two in flight asked for a sandbox');
  });

  test('a revoked key is refused from its next request; every request is in the log with its key id', async () => {
    assert.equal((await http('GET', '/v1/sandboxes', keyB.key)).status, 200);
    const revoked = cliOutput<{ keyId: string; revokedAt: string | null }>(await operator('keys', 'revoke', keyB.keyId));
    assert.ok(revoked.revokedAt !== null);
    refused(await http('GET', '/v1/sandboxes', keyB.key), 401, 'UNAUTHENTICATED');
    cliFailure(await operator('keys', 'revoke', 'ffffffffffff'), 4, 'NOT_FOUND');

    const lines = gatewayLog
      .split('\n')
      .filter((line) => line.includes('"gateway request"'))
      .map((line) => JSON.parse(line) as { keyId: string | null; principal: string | null; status: number; route: string });
    assert.ok(lines.some((line) => line.keyId === keyA.keyId && line.principal === 'agent-a' && line.route === 'POST /v1/sandboxes' && line.status === 201));
    assert.ok(lines.some((line) => line.keyId === null && line.status === 401));
    for (const key of [keyA, keyB, keySlow]) assert.ok(!gatewayLog.includes(key.key.slice(17)), 'no key in the log');
  });

  test('with --tls-cert and --tls-key the gateway speaks HTTPS only; a missing half or a key of another certificate is refused before it listens', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-gateway-tls-'));
    const certificate = (name: string) => {
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:prime256v1',
          '-nodes',
          '-days',
          '1',
          '-subj',
          '/CN=127.0.0.1',
          '-addext',
          'subjectAltName=IP:127.0.0.1',
          '-keyout',
          path.join(dir, `${name}.key`),
          '-out',
          path.join(dir, `${name}.pem`),
        ],
        { stdio: 'ignore' },
      );
      return { cert: path.join(dir, `${name}.pem`), key: path.join(dir, `${name}.key`) };
    };
    const [own, other] = [certificate('own'), certificate('other')];
    const tlsGateway = spawnCli(['gateway', '--listen', '127.0.0.1:0', '--tls-cert', own.cert, '--tls-key', own.key, '--json'], worker.env);
    try {
      const secure = (JSON.parse(await waitForOutput(tlsGateway, /"mcp":\s*"[^"]+"\s*\}/, 60_000)) as { url: string }).url;
      assert.match(secure, /^https:\/\/127\.0\.0\.1:\d+$/);
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const request = https.request(`${secure}/v1/sandboxes`, { headers: { authorization: `Bearer ${keyA.key}` }, ca: fs.readFileSync(own.cert) }, (response) => {
          let body = '';
          response.on('data', (chunk: Buffer) => (body += chunk.toString()));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
        });
        request.on('error', reject);
        request.end();
      });
      assert.equal(answer.status, 200, answer.body);
      assert.ok(Array.isArray((JSON.parse(answer.body) as { sandboxes: unknown[] }).sandboxes));
      await assert.rejects(fetch(`${secure.replace('https:', 'http:')}/v1/sandboxes`, { headers: { authorization: `Bearer ${keyA.key}` } }), 'no plain HTTP on that port');
    } finally {
      await stopChild(tlsGateway);
    }
    const half = cliFailure(await runCli(['gateway', '--listen', '127.0.0.1:0', '--tls-cert', own.cert, '--json'], worker.env), 2, 'INVALID_INPUT');
    assert.match(half.message, /both --tls-cert and --tls-key/);
    const mismatched = cliFailure(await runCli(['gateway', '--listen', '127.0.0.1:0', '--tls-cert', own.cert, '--tls-key', other.key, '--json'], worker.env), 2, 'INVALID_INPUT');
    assert.match(mismatched.message, /do not make a pair/);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
