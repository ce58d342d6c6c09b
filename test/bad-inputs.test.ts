import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import fc from 'fast-check';
import { toSandboxError } from '../src/client/client-errors';
import { SANDBOX_LIFECYCLE_WORKFLOW, workflowIdFor, LIFECYCLE_MESSAGES } from '../src/domain/contract-names';
import { SandboxPlaneError } from '../src/domain/errors';
import {
  awaitStatePayloadSchema,
  decidePayloadSchema,
  destroyPayloadSchema,
  extendPayloadSchema,
  lifecycleInputSchema,
  MAX_PAYLOAD_CHARS,
  payloadChars,
  type SandboxStatus,
} from '../src/domain/lifecycle-messages';
import { sandboxIdSchema, sandboxRequestSchema } from '../src/domain/sandbox-request';
import { createSandboxInput, destroySandboxInput, extendSandboxInput, getSandboxInput, listSandboxesInput } from '../src/mcp/sandbox-tools';
import {
  badApprovalPayload,
  badAwaitStatePayload,
  badCliInvocation,
  badDecidePayload,
  badDestroyPayload,
  badExtendPayload,
  badLifecycleInput,
  badRequest,
  badToolCall,
  FRESH_ID,
  type BadToolCall,
} from './helpers/bad-inputs';
import { runCli } from './harness/cli';
import { mcpServerTransport } from './helpers/mcp-transport';
import { startTestWorker, type TestWorker } from './harness/test-worker';
import { testTemporalAddress } from './harness/test-temporal';

/** Runs per surface: well over 200 generated inputs in all, in a couple of minutes. */
const RUNS = {
  sdkRequests: 50,
  sdkOptions: 20,
  rawStarts: 40,
  signals: 60,
  updates: 60,
  cli: 45,
  mcp: 50,
} as const;

/** The lifecycle's input as the workflow receives it: through JSON. */
const asJson = (value: unknown): unknown => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));

/** A deep copy of `value` with every {@link FRESH_ID} replaced by `id`. */
function withId(value: unknown, id: string): unknown {
  if (value === FRESH_ID) return id;
  if (Array.isArray(value)) return value.map((item) => withId(item, id));
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, withId(item, id)]));
  return value;
}

/** What the campaign must not change about a READY sandbox: everything but the health watch's clock and the time left. */
function lasting(status: SandboxStatus): Omit<SandboxStatus, 'health' | 'timeLeftSeconds'> {
  const { health: _health, timeLeftSeconds: _left, ...rest } = status;
  return rest;
}

function assertTyped(err: unknown, code: string): SandboxPlaneError {
  assert.ok(err instanceof SandboxPlaneError, `expected a SandboxPlaneError, got ${String(err)}`);
  assert.equal(err.code, code, err.message);
  assert.ok(err.hint.length > 0, 'every error carries a hint');
  return err;
}

/** The update names a malformed payload is aimed at, with the schema the workflow checks it by. */
const UPDATES = {
  extend: { name: LIFECYCLE_MESSAGES.extendUpdate, schema: extendPayloadSchema, payloads: badExtendPayload, refusedWhenWellFormed: 'TTL_EXCEEDS_CEILING' },
  destroy: { name: LIFECYCLE_MESSAGES.destroyUpdate, schema: destroyPayloadSchema, payloads: badDestroyPayload, refusedWhenWellFormed: undefined },
  decide: { name: LIFECYCLE_MESSAGES.decideUpdate, schema: decidePayloadSchema, payloads: badDecidePayload, refusedWhenWellFormed: 'INVALID_STATE' },
  awaitState: { name: LIFECYCLE_MESSAGES.awaitStateUpdate, schema: awaitStatePayloadSchema, payloads: badAwaitStatePayload, refusedWhenWellFormed: 'IDEMPOTENCY_CONFLICT' },
} as const;

const TOOL_SCHEMAS: Record<BadToolCall['name'], { safeParse(value: unknown): { success: boolean } }> = {
  create_sandbox: createSandboxInput,
  get_sandbox: getSandboxInput,
  list_sandboxes: listSandboxesInput,
  extend_sandbox: extendSandboxInput,
  destroy_sandbox: destroySandboxInput,
};

// One worker, one READY memory sandbox and one AWAITING_APPROVAL sandbox for the whole
// file; every generated input is aimed at them (or at a fresh id) and must change nothing.
describe('bad inputs on every surface: a typed error each, and no partial state', () => {
  const run = randomBytes(3).toString('hex');
  const readyId = `bi-${run}-ready`;
  const gatedId = `bi-${run}-gated`;
  let counter = 0;
  const freshId = () => `bi-${run}-${(counter += 1)}`;
  /** Every id a refused input named: none may have a row, a workflow or a runtime. */
  const refusedIds = new Set<string>();
  let worker: TestWorker;
  let readyBefore: SandboxStatus;

  const noTrace = async (id: string) => {
    assert.equal(worker.store.sandboxes.exists(id), false, `no projection row for ${id}`);
    assert.ok(!worker.memory.liveSandboxIds().includes(id), `no runtime for ${id}`);
    await assert.rejects(worker.client.workflow.getHandle(workflowIdFor(id)).describe(), WorkflowNotFoundError, `no workflow for ${id}`);
  };
  /** Notes the valid sandbox id a refused input named, so the final check covers it. */
  const noteId = (value: unknown) => {
    const id = (value as { id?: unknown } | null)?.id;
    if (sandboxIdSchema.safeParse(id).success && id !== readyId && id !== gatedId) refusedIds.add(id as string);
  };

  before(async () => {
    worker = await startTestWorker(await testTemporalAddress());
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow', maxTtlSeconds: 3600 });
    worker.store.policies.add({ principalPattern: 'gated-*', capability: 'cloud.sandbox', effect: 'require_approval' });
    readyBefore = await worker.sandboxes.create({ id: readyId, principal: 'agent-bad', services: ['s3'], ttlSeconds: 1800 }, { wait: 'ready' });
    const gated = await worker.sandboxes.create({ id: gatedId, principal: 'gated-bad', services: ['s3'] });
    assert.equal(gated.state, 'AWAITING_APPROVAL');
  });
  after(async () => worker?.stop());

  test(`SandboxClient.create: ${RUNS.sdkRequests} malformed requests and ${RUNS.sdkOptions} malformed options are INVALID_INPUT before anything starts`, async () => {
    await fc.assert(
      fc.asyncProperty(badRequest, async (generated) => {
        const request = withId(generated, freshId());
        assert.equal(sandboxRequestSchema.safeParse(request).success, false, `the generator made a valid request: ${JSON.stringify(request)}`);
        noteId(request);
        await assert.rejects(worker.sandboxes.create(request as never), (err) => !!assertTyped(err, 'INVALID_INPUT'));
        const id = (request as { id?: unknown } | null)?.id;
        if (typeof id === 'string' && sandboxIdSchema.safeParse(id).success) await noTrace(id);
      }),
      { numRuns: RUNS.sdkRequests },
    );

    const badOptions = fc.oneof(
      fc.record({ wait: fc.oneof(fc.constantFrom('soon', 'READY', 'screened', ''), fc.integer(), fc.constant(null)) }),
      fc.record({ timeoutMs: fc.oneof(fc.integer({ min: -10_000, max: 0 }), fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, 86_400_001, 1e12, '10s' as unknown as number)) }),
    );
    await fc.assert(
      fc.asyncProperty(badOptions, async (options) => {
        const id = freshId();
        refusedIds.add(id);
        await assert.rejects(worker.sandboxes.create({ id, principal: 'agent-bad', services: ['s3'] }, options as never), (err) => !!assertTyped(err, 'INVALID_INPUT'));
        await noTrace(id);
      }),
      { numRuns: RUNS.sdkOptions },
    );
  });

  test(`${RUNS.rawStarts} malformed runs started by hand end DENIED with INVALID_INPUT, recording and provisioning nothing`, async () => {
    const startByHand = async (input: unknown, args: unknown[]) => {
      const id = freshId();
      const filled = withId(input, id);
      const parsed = lifecycleInputSchema.safeParse(asJson(filled));
      assert.ok(!parsed.success || parsed.data.request.id !== id, `the generator made a valid input: ${JSON.stringify(filled)}`);
      const handle = await worker.client.workflow.start(SANDBOX_LIFECYCLE_WORKFLOW, {
        taskQueue: worker.config.taskQueue,
        workflowId: workflowIdFor(id),
        args: args.length === 0 ? [] : [filled],
      });
      const status = (await handle.result()) as SandboxStatus;
      assert.equal(status.state, 'DENIED', JSON.stringify(filled));
      assert.equal(status.error?.code, 'INVALID_INPUT');
      assert.equal(worker.store.sandboxes.exists(id), false, 'nothing recorded');
      const otherId = (filled as { request?: { id?: unknown } } | null)?.request?.id;
      if (typeof otherId === 'string' && otherId !== id) assert.equal(worker.store.sandboxes.exists(otherId), false);
      assert.ok(!worker.memory.liveSandboxIds().includes(id), 'nothing provisioned');
    };
    await startByHand(undefined, []);
    await fc.assert(
      fc.asyncProperty(badLifecycleInput, (input) => startByHand(input, [input])),
      { numRuns: RUNS.rawStarts },
    );
  });

  test(`${RUNS.signals} malformed or unauthorized approve/deny signals: ignored and audited while awaiting approval, dropped while READY`, async () => {
    const payloads = fc.sample(fc.tuple(fc.constantFrom(LIFECYCLE_MESSAGES.approveSignal, LIFECYCLE_MESSAGES.denySignal), badApprovalPayload), RUNS.signals);
    const ready = worker.client.workflow.getHandle(workflowIdFor(readyId));
    const gated = worker.client.workflow.getHandle(workflowIdFor(gatedId));
    const auditedBefore = worker.store.sandboxes.audit(gatedId).filter((op) => op.effect === 'ignored').length;
    for (const [index, [signal, payload]] of payloads.entries()) {
      await (index % 2 === 0 ? gated : ready).signal(signal, payload);
    }
    const toGated = Math.ceil(payloads.length / 2);
    // Judged in arrival order: once this update has its verdict, every signal before it has one too.
    await assert.rejects(worker.sandboxes.approve(gatedId, { approver: 'mallory' }), (err) => !!assertTyped(err, 'APPROVAL_UNVERIFIED'));

    const status = await worker.sandboxes.status(gatedId);
    assert.equal(status.state, 'AWAITING_APPROVAL');
    assert.equal(status.approval, null);
    assert.ok(
      status.approvalAttempts.every((attempt) => attempt.verdict === 'ignored' && attempt.reason.length > 0),
      JSON.stringify(status.approvalAttempts),
    );
    let audited = 0;
    for (let attempt = 0; attempt < 50 && audited < toGated + 1; attempt += 1) {
      audited = worker.store.sandboxes.audit(gatedId).filter((op) => op.effect === 'ignored').length - auditedBefore;
      if (audited < toGated + 1) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    assert.equal(audited, toGated + 1, 'each ignored attempt has its audit row');
    assert.deepEqual(lasting(await worker.sandboxes.status(readyId)), lasting(readyBefore), 'the READY sandbox dropped them');
  });

  test(`${RUNS.updates} malformed extend, destroy, decide and awaitState updates are refused with a code, leaving the READY sandbox as it was`, async () => {
    const handle = worker.client.workflow.getHandle(workflowIdFor(readyId));
    const kinds = Object.keys(UPDATES) as (keyof typeof UPDATES)[];
    const updates = fc.constantFrom(...kinds).chain((kind) => UPDATES[kind].payloads.map((payload) => ({ kind, payload })));
    await fc.assert(
      fc.asyncProperty(updates, async ({ kind, payload }) => {
        const { name, schema, refusedWhenWellFormed } = UPDATES[kind];
        const received = asJson(payload);
        let expected: string;
        if (payloadChars(received) > MAX_PAYLOAD_CHARS || !schema.safeParse(received).success) expected = 'INVALID_INPUT';
        else {
          assert.ok(refusedWhenWellFormed !== undefined, `the generator made a valid ${kind} payload: ${JSON.stringify(payload)}`);
          expected = refusedWhenWellFormed;
        }
        await assert.rejects(handle.executeUpdate(name, { args: [payload] }), (err) => {
          assert.ok(err instanceof WorkflowUpdateFailedError, `a refusal, not ${String(err)}`);
          assertTyped(toSandboxError(err, readyId), expected);
          return true;
        });
      }),
      { numRuns: RUNS.updates },
    );
    assert.deepEqual(lasting(await worker.sandboxes.status(readyId)), lasting(readyBefore));
  });

  test(`sandboxctl: ${RUNS.cli} malformed command lines exit 2 with {"error": {code, message, hint}} on stderr and nothing on stdout`, async () => {
    await fc.assert(
      fc.asyncProperty(badCliInvocation(readyId), async (args) => {
        const result = await runCli([...args, '--json'], worker.env);
        assert.equal(result.code, 2, `sandboxctl ${JSON.stringify(args)}: exit ${result.code}; stdout ${result.stdout}; stderr ${result.stderr}`);
        assert.equal(result.stdout, '');
        const { error } = JSON.parse(result.stderr) as { error: { code: string; message: string; hint: string } };
        assert.equal(error.code, 'INVALID_INPUT', error.message);
        assert.ok(error.message.length > 0 && error.hint.length > 0);
      }),
      { numRuns: RUNS.cli },
    );
    const rows = worker.store.db.prepare('SELECT id FROM sandboxes ORDER BY id').all() as { id: string }[];
    assert.deepEqual(
      rows.map((row) => row.id),
      [gatedId, readyId].sort(),
      'no create got as far as a row',
    );
    assert.equal(worker.store.policies.list().length, 2, 'no policy row was added');
    assert.deepEqual(lasting(await worker.sandboxes.status(readyId)), lasting(readyBefore));
  });

  test(`MCP: ${RUNS.mcp} malformed tool arguments are tool errors naming INVALID_INPUT, never protocol errors`, async () => {
    const transport = mcpServerTransport(worker.env, 'agent-mcp', 'warn');
    const client = new McpClient({ name: 'bad-inputs', version: '1.0.0' });
    const protocolErrors: Error[] = [];
    client.onerror = (error) => protocolErrors.push(error);
    await client.connect(transport);
    try {
      await fc.assert(
        fc.asyncProperty(badToolCall(readyId), async (generated) => {
          const args = withId(generated.arguments, freshId()) as Record<string, unknown>;
          assert.equal(TOOL_SCHEMAS[generated.name].safeParse(args).success, false, `the generator made valid ${generated.name} arguments: ${JSON.stringify(args)}`);
          if (generated.name === 'create_sandbox') noteId(args);
          const result = (await client.callTool({ name: generated.name, arguments: args })) as CallToolResult;
          assert.equal(result.isError, true, JSON.stringify(result));
          const document = result.structuredContent as { error?: { code?: string; message?: string; hint?: string } } | undefined;
          assert.equal(document?.error?.code, 'INVALID_INPUT', `${generated.name} ${JSON.stringify(args)} → ${JSON.stringify(result.content)}`);
          assert.ok((document?.error?.message ?? '').length > 0 && (document?.error?.hint ?? '').length > 0);
          const text = result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
          assert.deepEqual(JSON.parse(text), document, 'the text is the same document');
        }),
        { numRuns: RUNS.mcp },
      );
    } finally {
      await client.close();
    }
    assert.deepEqual(
      protocolErrors.map((error) => error.message),
      [],
    );
  });

  test('afterwards: the READY sandbox is unchanged, the gated one still waits, and nothing else exists anywhere', async () => {
    assert.deepEqual(lasting(await worker.sandboxes.status(readyId)), lasting(readyBefore));
    assert.equal(worker.store.sandboxes.state(readyId), 'READY');
    assert.equal((await worker.sandboxes.status(gatedId)).state, 'AWAITING_APPROVAL');
    assert.equal(worker.store.sandboxes.state(gatedId), 'AWAITING_APPROVAL');
    assert.deepEqual(worker.memory.liveSandboxIds(), [readyId]);
    const rows = worker.store.db.prepare('SELECT id FROM sandboxes ORDER BY id').all() as { id: string }[];
    assert.deepEqual(
      rows.map((row) => row.id),
      [gatedId, readyId].sort(),
    );
    for (const id of refusedIds) await noTrace(id);

    const open = async () => {
      const ids: string[] = [];
      for await (const execution of worker.client.workflow.list({ query: `TaskQueue = '${worker.config.taskQueue}' AND ExecutionStatus = 'Running'` })) ids.push(execution.workflowId);
      return ids.sort();
    };
    const expected = [workflowIdFor(gatedId), workflowIdFor(readyId)].sort();
    let running = await open();
    for (let attempt = 0; attempt < 20 && JSON.stringify(running) !== JSON.stringify(expected); attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      running = await open();
    }
    assert.deepEqual(running, expected, 'no workflow is left running but the two sandboxes');
    await worker.sandboxes.destroy(gatedId);
    await worker.sandboxes.destroy(readyId);
  });
});
