import assert from 'node:assert/strict';
import { MCP_TOOLS } from './helpers/mcp-tools';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { SandboxSummary } from '../src/client/sandbox-client';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import { enrolApprover } from './helpers/approvers';
import { mcpServerTransport } from './helpers/mcp-transport';
import { startTestWorker, type TestWorker } from './harness/test-worker';
import { testTemporalAddress } from './harness/test-temporal';

interface JsonSchema {
  type?: string;
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: string[];
  additionalProperties?: unknown;
}

interface ErrorDocument {
  error: { code: string; message: string; hint: string };
  status?: SandboxStatus;
}

function textOf(result: CallToolResult): string {
  return result.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');
}

/** The structured document of a successful call, checked against its text rendering. */
function ok<T>(result: CallToolResult): T {
  assert.notEqual(result.isError, true, `tool failed: ${textOf(result)}`);
  assert.ok(result.structuredContent, 'a result carries structured content');
  assert.deepEqual(JSON.parse(textOf(result)), result.structuredContent, 'the text is the same document');
  return result.structuredContent as T;
}

function refused(result: CallToolResult, code: string): ErrorDocument {
  assert.equal(result.isError, true, `expected ${code}, got: ${textOf(result)}`);
  const document = result.structuredContent as unknown as ErrorDocument;
  assert.equal(document.error.code, code, document.error.message);
  assert.ok(document.error.message.length > 0);
  assert.ok(document.error.hint.length > 0, 'every refusal carries a hint');
  return document;
}

// One MCP server process bound to agent-mcp for most of the file, spoken to through the
// SDK's own client over stdio, exactly as an agent's host would; servers bound to other
// principals where a test needs them. The tests build on each other.
describe('sandboxctl mcp (stdio)', () => {
  let worker: TestWorker;
  let client: Client;
  let stderr = '';
  // A line on stdout that is not an MCP frame surfaces here (the transport cannot parse it).
  const protocolErrors: Error[] = [];
  const others: Client[] = [];
  const call = async (name: string, args: Record<string, unknown>, as: Client = client) => (await as.callTool({ name, arguments: args })) as CallToolResult;

  /** Another MCP server process, bound to `principal`. */
  async function serverFor(principal: string): Promise<Client> {
    const other = new Client({ name: `mcp-test-${principal}`, version: '1.0.0' });
    await other.connect(mcpServerTransport(worker.env, principal, 'warn'));
    others.push(other);
    return other;
  }

  before(async () => {
    worker = await startTestWorker(await testTemporalAddress());
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
    worker.store.policies.add({ principalPattern: 'admin', capability: 'cloud.sandbox', effect: 'allow' });
    worker.store.policies.add({ principalPattern: 'gated-*', capability: 'cloud.sandbox', effect: 'require_approval' });
    const transport = mcpServerTransport(worker.env, 'agent-mcp');
    transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    client = new Client({ name: 'mcp-test', version: '1.0.0' });
    client.onerror = (error) => protocolErrors.push(error);
    await client.connect(transport);
  });
  after(async () => {
    for (const other of others) await other.close();
    await client?.close();
    await worker?.stop();
  });

  test('lists the twelve tools (five for sandboxes, three for IaC, three for snapshots, one for events) with JSON input schemas derived from the SDK schemas', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((tool) => tool.name).sort(), [...MCP_TOOLS]);
    const byName = new Map(tools.map((tool) => [tool.name, tool]));

    const create = byName.get('create_sandbox')?.inputSchema as JsonSchema;
    assert.equal(create.type, 'object');
    assert.deepEqual(create.required?.sort(), ['services']);
    assert.equal(create.properties?.principal, undefined, "who asks is the server's principal, never an argument");
    assert.equal(create.properties?.services?.type, 'array');
    assert.equal(create.properties?.services?.items?.type, 'string');
    assert.equal(create.properties?.ttlSeconds?.type, 'integer');
    assert.deepEqual(create.properties?.wait?.enum, ['accepted', 'ready']);
    assert.deepEqual(create.properties?.adapter?.enum, ['memory', 'moto', 'floci']);
    assert.equal(create.additionalProperties, false, 'unknown keys are refused, as the SDK refuses them');

    const extend = byName.get('extend_sandbox')?.inputSchema as JsonSchema;
    assert.deepEqual(extend.required?.sort(), ['id', 'ttlSeconds']);
    assert.equal(extend.properties?.ttlSeconds?.type, 'integer');
    assert.equal(extend.properties?.actor, undefined, 'the actor is the MCP client, not an argument');

    const list = byName.get('list_sandboxes')?.inputSchema as JsonSchema;
    assert.ok(list.properties?.state?.enum?.includes('AWAITING_APPROVAL'));
    assert.equal(list.properties?.principal, undefined);
    assert.deepEqual(list.required ?? [], []);

    const plan = byName.get('plan_iac')?.inputSchema as JsonSchema;
    assert.deepEqual(plan.required ?? [], [], 'a sandbox or a target, a template or a CDK app: the tool says which is missing');
    assert.equal(plan.properties?.principal, undefined, "who asks is the server's principal, never an argument");
    assert.equal(plan.additionalProperties, false);
    assert.deepEqual((byName.get('apply_iac')?.inputSchema as JsonSchema).properties?.wait?.enum, ['planned', 'ended']);
    assert.deepEqual((byName.get('iac_status')?.inputSchema as JsonSchema).required, ['runId']);

    assert.deepEqual((byName.get('snapshot_sandbox')?.inputSchema as JsonSchema).required, ['id']);
    const fork = byName.get('fork_sandbox')?.inputSchema as JsonSchema;
    assert.deepEqual(fork.required, ['snapshotId']);
    assert.equal(fork.properties?.principal, undefined, "who asks is the server's principal, never an argument");
    assert.equal(fork.additionalProperties, false);
    assert.equal(fork.properties?.count?.type, 'integer', 'fork_sandbox forks many with count');

    const events = byName.get('sandbox_events')?.inputSchema as JsonSchema;
    assert.deepEqual(events.required ?? [], []);
    assert.deepEqual(Object.keys(events.properties ?? {}).sort(), ['after', 'limit', 'sandboxId', 'since', 'waitSeconds']);
    assert.equal(byName.get('sandbox_events')?.annotations?.readOnlyHint, true);

    assert.deepEqual((byName.get('get_sandbox')?.inputSchema as JsonSchema).required, ['id']);
    assert.deepEqual((byName.get('destroy_sandbox')?.inputSchema as JsonSchema).required, ['id']);
    assert.match(byName.get('create_sandbox')?.description ?? '', /clientConfig.*AWS SDK v3 client constructor/);
    assert.equal(byName.get('destroy_sandbox')?.annotations?.destructiveHint, true);
    assert.equal(byName.get('get_sandbox')?.annotations?.readOnlyHint, true);
  });

  test('create (wait ready) → READY with endpoint and clientConfig; get; list', async () => {
    const ready = ok<SandboxStatus>(await call('create_sandbox', { id: 'mcp-one', services: ['S3', 'sqs'], ttlSeconds: 900, wait: 'ready', purpose: 'mcp test' }));
    assert.equal(ready.state, 'READY');
    assert.equal(ready.principal, 'agent-mcp', "created as the server's principal");
    assert.equal(ready.endpoint, 'memory://mcp-one');
    assert.equal(ready.clientConfig?.endpoint, 'memory://mcp-one');
    assert.equal(typeof ready.clientConfig?.region, 'string');
    assert.equal(ready.clientConfig?.forcePathStyle, true);
    assert.deepEqual(ready.services, ['s3', 'sqs']);
    assert.deepEqual(Object.keys(ready.fidelity).sort(), ['s3', 'sqs']);
    assert.equal(ready.decision?.effect, 'allow');
    assert.ok(ready.expiresAt !== null && ready.timeLeftSeconds !== null && ready.timeLeftSeconds > 800);
    assert.equal(typeof ready.waitingFor, 'string');

    const got = ok<SandboxStatus>(await call('get_sandbox', { id: 'mcp-one' }));
    assert.equal(got.state, 'READY');
    assert.equal(got.endpoint, ready.endpoint);

    // Visibility lags a moment behind the workflow.
    let rows: SandboxSummary[] = [];
    for (let attempt = 0; attempt < 50 && !rows.some((row) => row.id === 'mcp-one' && row.state === 'READY'); attempt += 1) {
      rows = ok<{ sandboxes: SandboxSummary[] }>(await call('list_sandboxes', { state: 'READY' })).sandboxes;
      if (!rows.some((row) => row.id === 'mcp-one')) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const row = rows.find((candidate) => candidate.id === 'mcp-one');
    assert.ok(row, `mcp-one is listed; got ${JSON.stringify(rows)}`);
    assert.equal(row.principal, 'agent-mcp');
  });

  test('extend moves the expiry; destroy → DESTROYED, recorded as the MCP client', async () => {
    const before = ok<SandboxStatus>(await call('get_sandbox', { id: 'mcp-one' }));
    const extended = ok<SandboxStatus>(await call('extend_sandbox', { id: 'mcp-one', ttlSeconds: 600, reason: 'more tests' }));
    assert.equal(Date.parse(extended.expiresAt ?? '') - Date.parse(before.expiresAt ?? ''), 600_000);

    const destroyed = ok<SandboxStatus>(await call('destroy_sandbox', { id: 'mcp-one', reason: 'done' }));
    assert.equal(destroyed.state, 'DESTROYED');
    assert.equal(destroyed.endpoint, null);
    assert.ok(!worker.memory.liveSandboxIds().includes('mcp-one'), 'the emulator is gone');

    const actors = worker.store.sandboxes.audit('mcp-one').map((operation) => operation.actor);
    assert.ok(actors.includes('agent:mcp:mcp-test'), `the audit trail names the MCP client, as the agent; actors: ${actors.join(', ')}`);
  });

  test("bound to agent-mcp: it cannot create as admin, nor see, extend or destroy another principal's sandbox", async () => {
    const asAdmin = (await call('create_sandbox', { principal: 'admin', services: ['s3'] })) as CallToolResult;
    assert.equal(asAdmin.isError, true);
    assert.match(textOf(asAdmin), /INVALID_INPUT[\s\S]*principal/, 'a principal argument is an unknown key');

    const theirs = await worker.sandboxes.create({ id: 'mcp-theirs', principal: 'agent-b', services: ['s3'], ttlSeconds: 600 }, { wait: 'ready' });
    assert.equal(theirs.state, 'READY');
    assert.equal(refused(await call('get_sandbox', { id: 'mcp-theirs' }), 'NOT_FOUND').error.message, 'no sandbox mcp-theirs');
    refused(await call('extend_sandbox', { id: 'mcp-theirs', ttlSeconds: 60 }), 'NOT_FOUND');
    refused(await call('destroy_sandbox', { id: 'mcp-theirs' }), 'NOT_FOUND');
    assert.equal((await worker.sandboxes.status('mcp-theirs')).state, 'READY', 'untouched');
    const mine = ok<{ sandboxes: SandboxSummary[] }>(await call('list_sandboxes', {})).sandboxes;
    assert.ok(mine.length > 0 && mine.every((row) => row.principal === 'agent-mcp'), `only its own sandboxes: ${JSON.stringify(mine)}`);
    // agent-b's own server sees it.
    const b = await serverFor('agent-b');
    assert.equal(ok<SandboxStatus>(await call('get_sandbox', { id: 'mcp-theirs' }, b)).state, 'READY');
    ok(await call('destroy_sandbox', { id: 'mcp-theirs' }, b));
  });

  test("sandbox_events: its own sandbox's events in order with reasons; another principal's sandbox is NOT_FOUND, its events never listed", async () => {
    interface Page {
      events: { kind: string; reason: string; sandboxId: string | null; principal: string; actor: string }[];
      next: string;
    }
    const page = ok<Page>(await call('sandbox_events', { sandboxId: 'mcp-one', since: '1h' }));
    assert.deepEqual(
      page.events.map((e) => [e.kind, e.reason]),
      [
        ['sandbox.requested', 'agent'],
        ['sandbox.ready', 'agent'],
        ['sandbox.extended', 'agent'],
        ['sandbox.destroyed', 'agent'],
      ],
    );
    assert.match(page.next, /^evc_/);
    const all = ok<Page>(await call('sandbox_events', { limit: 500 })).events;
    assert.ok(all.length >= 4 && all.every((e) => e.principal === 'agent-mcp'), 'its own events only');
    assert.ok(!all.some((e) => e.sandboxId === 'mcp-theirs'));
    const theirs = refused(await call('sandbox_events', { sandboxId: 'mcp-theirs' }), 'NOT_FOUND');
    const never = refused(await call('sandbox_events', { sandboxId: 'mcp-never' }), 'NOT_FOUND');
    assert.equal(theirs.error.message.replace('mcp-theirs', 'ID'), never.error.message.replace('mcp-never', 'ID'));
    assert.deepEqual(ok<Page>(await call('sandbox_events', { after: page.next, sandboxId: 'mcp-one' })).events, [], 'nothing after the cursor');
    refused(await call('sandbox_events', { since: 'last tuesday' }), 'INVALID_INPUT');
  });

  test('refusals are tool errors with the code and a hint, never protocol errors', async () => {
    const stranger = await serverFor('stranger-1');
    const denied = refused(await call('create_sandbox', { services: ['s3'], wait: 'ready' }, stranger), 'POLICY_DENIED');
    assert.match(denied.error.message, /stranger-1/);
    assert.match(denied.error.hint, /policy add/);
    assert.equal(denied.status?.state, 'DENIED', 'the refused sandbox comes along');

    assert.match(refused(await call('get_sandbox', { id: 'no-such-sandbox' }), 'NOT_FOUND').error.hint, /list_sandboxes/);
    assert.match(refused(await call('extend_sandbox', { id: 'mcp-one', ttlSeconds: 60 }), 'INVALID_STATE').error.hint, /get_sandbox/);
  });

  test('waiting for READY past timeoutSeconds is WAIT_TIMEOUT with the status; the sandbox goes on', async () => {
    const gated = await serverFor('gated-1');
    const request = { id: 'mcp-gated', services: ['s3'], ttlSeconds: 600 };
    const timedOut = refused(await call('create_sandbox', { ...request, wait: 'ready', timeoutSeconds: 1 }, gated), 'WAIT_TIMEOUT');
    assert.equal(timedOut.status?.state, 'AWAITING_APPROVAL');
    assert.match(timedOut.error.hint, /get_sandbox/);

    const again = ok<SandboxStatus>(await call('create_sandbox', request, gated));
    assert.equal(again.state, 'AWAITING_APPROVAL', 'the same id and request return the same sandbox');
    assert.match(again.waitingFor, /approve/);

    const withdrawn = ok<SandboxStatus>(await call('destroy_sandbox', { id: 'mcp-gated', reason: 'not needed' }, gated));
    assert.equal(withdrawn.state, 'DESTROYED');
  });

  test('an agent is not shown who approved its sandbox, nor who tried to', async () => {
    const alice = await enrolApprover(worker, 'alice');
    const gated = await serverFor('gated-2');
    ok(await call('create_sandbox', { id: 'mcp-reviewed', services: ['s3'] }, gated));
    await assert.rejects(worker.sandboxes.approve('mcp-reviewed', { approver: 'mallory', reason: 'me' }));
    await worker.sandboxes.approve('mcp-reviewed', { approver: 'alice', reason: 'fine by alice', code: await alice.code() });
    const seen = ok<SandboxStatus>(await call('create_sandbox', { id: 'mcp-reviewed', services: ['s3'], wait: 'ready' }, gated));
    assert.equal(seen.state, 'READY');
    assert.equal(seen.approval?.approver, 'a reviewer');
    assert.equal(seen.approval?.reason, 'fine by a reviewer', 'nor inside the reason');
    const text = JSON.stringify(ok<SandboxStatus>(await call('get_sandbox', { id: 'mcp-reviewed' }, gated)));
    for (const name of ['alice', 'mallory']) assert.ok(!text.includes(name), `${name} is not shown to the agent: ${text}`);
    assert.equal((await worker.sandboxes.status('mcp-reviewed')).approval?.approver, 'alice', 'an operator sees who approved');
    ok(await call('destroy_sandbox', { id: 'mcp-reviewed' }, gated));
  });

  test('invalid input is refused naming the field, before anything starts', async () => {
    const empty = (await call('create_sandbox', { services: [] })) as CallToolResult;
    assert.equal(empty.isError, true);
    assert.match(textOf(empty), /services/);
    assert.match(textOf(empty), /name at least one service/);

    const fractional = (await call('extend_sandbox', { id: 'mcp-one', ttlSeconds: 1.5 })) as CallToolResult;
    assert.equal(fractional.isError, true);
    assert.match(textOf(fractional), /ttlSeconds/);

    const unknownKey = (await call('get_sandbox', { id: 'mcp-one', verbose: true })) as CallToolResult;
    assert.equal(unknownKey.isError, true);
    assert.match(textOf(unknownKey), /verbose/);
  });

  test('stdout carries MCP frames only (logs go to stderr), and the server ends when stdin closes', async () => {
    assert.match(stderr, /mcp server ready on stdio/);
    assert.deepEqual(
      protocolErrors.map((error) => error.message),
      [],
    );
    await client.close();
    for (let attempt = 0; attempt < 50 && !/mcp server stopping/.test(stderr); attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.match(stderr, /"reason":"stdin closed"|"reason":"transport closed"/);
  });
});
