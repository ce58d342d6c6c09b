import { inSpan, markFailed } from '../telemetry/spans';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { toSandboxError } from '../client/client-errors';
import type { SandboxClient } from '../client/sandbox-client';
import type { ErrorCode } from '../domain/error-codes';
import { destroyPayloadSchema, extendPayloadSchema, type SandboxStatus } from '../domain/lifecycle-messages';
import { sandboxIdSchema, sandboxRequestSchema } from '../domain/sandbox-request';
import { SANDBOX_STATES } from '../domain/sandbox-states';
import { parseOrThrow } from '../domain/validation';

/** Adds a description to the fields named in `descriptions`; the schemas themselves stay the SDK's. */
function described<T extends z.ZodRawShape>(shape: T, descriptions: Partial<Record<keyof T, string>>): T {
  return Object.fromEntries(
    Object.entries(shape).map(([key, schema]) => {
      const description = descriptions[key as keyof T];
      return [key, description === undefined ? schema : schema.describe(description)];
    }),
  ) as T;
}

const ID_DESCRIPTION = 'The sandbox id (the `id` field of a create_sandbox or list_sandboxes result).';

/**
 * Below the 60 s an MCP client usually waits for one tool call, so a long approval
 * ends in WAIT_TIMEOUT (the sandbox goes on) instead of a client-side timeout.
 */
export const DEFAULT_WAIT_SECONDS = 50;

/** create_sandbox: the SDK's request schema, plus how long to wait. */
/** Who asks is the server's principal (DESIGN §12), never an argument: a principal field is refused as unknown. */
const agentRequestSchema = sandboxRequestSchema.omit({ principal: true });

export const createSandboxInput = agentRequestSchema.extend({
  ...described(agentRequestSchema.shape, {
    id: 'Optional sandbox id, also the idempotency key: repeating the same request with the same id returns the same sandbox. Omit it for a fresh sbx-… id.',
    capability: 'What for: cloud.sandbox (a local AWS emulator, the default) or cloud.iac.local; staging and production always need a human.',
    adapter: 'Which emulator: moto or floci (containers with real AWS APIs), memory (tests only). Default memory.',
    services: 'AWS services to enable, lowercase, e.g. ["s3", "dynamodb", "sqs"].',
    ttlSeconds: 'How long the sandbox lives once READY, in seconds (default: the worker default, 30 min; capped by policy).',
    purpose: 'Why you need it, for the human reviewer and the audit trail.',
    labels: 'Free-form key/value labels for the sandbox.',
    fromSnapshot: 'Optional snapshot id (from snapshot_sandbox) to start from: a fork with its own credentials; fork_sandbox fills the adapter and services in for you.',
  }),
  wait: z
    .enum(['accepted', 'ready'])
    .default('accepted')
    .describe("'accepted' (default): return once the request is screened (state PROVISIONING, AWAITING_APPROVAL or READY). 'ready': return once READY, with endpoint and clientConfig."),
  timeoutSeconds: z
    .number()
    .int('must be whole seconds')
    .positive('must be positive')
    .max(3600, 'must be at most 3600')
    .optional()
    .describe(
      `Stop waiting after this many seconds (default ${DEFAULT_WAIT_SECONDS}) with WAIT_TIMEOUT; the sandbox itself goes on: call create_sandbox again with the same id and request to keep waiting.`,
    ),
});

export const getSandboxInput = z.object({ id: sandboxIdSchema.describe(ID_DESCRIPTION) }).strict();

export const listSandboxesInput = z
  .object({
    state: z.enum(SANDBOX_STATES).optional().describe('Only sandboxes in this state, e.g. READY or AWAITING_APPROVAL.'),
    limit: z.number().int('must be a whole number').min(1).max(1000).optional().describe('At most this many rows, newest first (default 100).'),
  })
  .strict();

const extendPayload = extendPayloadSchema.omit({ actor: true });
export const extendSandboxInput = z
  .object({
    id: sandboxIdSchema.describe(ID_DESCRIPTION),
    ...described(extendPayload.shape, {
      ttlSeconds: 'Seconds to add to the current expiry. Refused past now + the max TTL, or past the maximum lifetime.',
      reason: 'Why, for the audit trail.',
    }),
  })
  .strict();

const destroyPayload = destroyPayloadSchema.removeDefault().omit({ actor: true });
export const destroySandboxInput = z
  .object({
    id: sandboxIdSchema.describe(ID_DESCRIPTION),
    ...described(destroyPayload.shape, { reason: 'Why, for the audit trail.' }),
  })
  .strict();

const STATUS_FIELDS =
  'The result is the sandbox status: id, state, endpoint, clientConfig (AWS SDK v3 client settings: endpoint, region, credentials, forcePathStyle), ' +
  'fidelity (per service: HIGH, PARTIAL or UNAVAILABLE), expiresAt, timeLeftSeconds, waitingFor (what happens next, in words) and decision (the policy effect and reasons).';

export const ERRORS =
  'On a refusal or failure the result has isError true and {"error": {"code", "message", "hint"}}: the code is stable (POLICY_DENIED, TTL_EXCEEDS_CEILING, NOT_FOUND, ...), the hint says what to do.';

const DESCRIPTIONS = {
  create: [
    'Ask for a throw-away, AWS-shaped sandbox: a local emulator (moto or Floci) with the services you name, screened by policy and expired after its TTL.',
    'When READY, pass `clientConfig` as-is to an AWS SDK v3 client constructor (e.g. `new S3Client(clientConfig)`); the credentials work only against this endpoint (a moto sandbox has credentials of its own that allow only the services you asked for: any other service is AccessDenied).',
    "If policy requires approval the state is AWAITING_APPROVAL: a human approves in the Temporal UI; to wait for READY, call create_sandbox again with the same id, the same request and wait 'ready' (it waits inside the workflow and never provisions twice).",
    STATUS_FIELDS,
    ERRORS,
    'Destroy the sandbox with destroy_sandbox when you are done.',
  ].join(' '),
  get: ['The current status of one sandbox.', STATUS_FIELDS, ERRORS].join(' '),
  list: [
    'Your sandboxes, newest first, as {"sandboxes": [{id, state, principal, capability, expiresAt, startedAt, workflowStatus}]}.',
    'Lags about a second behind; call get_sandbox for the endpoint and clientConfig of one.',
    ERRORS,
  ].join(' '),
  extend: [
    "Move a READY sandbox's expiry later by ttlSeconds. Refused with TTL_EXCEEDS_CEILING past the policy's max TTL or the maximum lifetime, INVALID_STATE unless READY.",
    'Returns the new status (expiresAt, timeLeftSeconds).',
    ERRORS,
  ].join(' '),
  destroy: [
    'Tear a sandbox down now (its emulator and everything in it is gone) and return its status once DESTROYED.',
    'Destroying a sandbox that already ended returns its final status; destroying one AWAITING_APPROVAL withdraws the request.',
    ERRORS,
  ].join(' '),
} as const;

/** Where the taxonomy's hint names a CLI command, the tool an agent would call instead. */
const TOOL_HINTS: Partial<Record<ErrorCode, string>> = {
  WAIT_TIMEOUT: 'The sandbox is still working and goes on: call get_sandbox until it is READY, or create again with the same id and a longer timeoutSeconds.',
  NOT_FOUND: 'Check the id; list_sandboxes shows the known ones.',
  INVALID_STATE: 'The sandbox is not in a state that allows this; get_sandbox shows its state.',
};

/** A structured result with the same document as text, as the MCP spec asks for older clients. */
export function structured(document: Record<string, unknown>, isError = false): CallToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(document, null, 2) }],
    structuredContent: document,
    ...(isError ? { isError: true } : {}),
  };
}

function statusResult(status: SandboxStatus): CallToolResult {
  return structured({ ...status });
}

/**
 * Every failure becomes a tool result the agent can read, never a protocol error:
 * the taxonomy code, message and hint, and the sandbox's status when the error has it.
 */
export function errorResult(err: unknown, subject: string): CallToolResult {
  const planeError = toSandboxError(err, subject);
  const status = planeError.details.status;
  const hint = TOOL_HINTS[planeError.code] ?? planeError.hint;
  return structured({ error: { ...planeError.toJSON(), hint }, ...(status !== undefined ? { status } : {}) }, true);
}

/**
 * The schema as tools/list publishes it, but taking any arguments when the MCP SDK checks
 * a call: the tool parses them itself ({@link registerTool}), so a bad argument is refused
 * with our INVALID_INPUT document (code, message naming the field, hint) like every other
 * refusal, instead of the SDK's bare "MCP error -32602" text without a code.
 */
function publishedOnly<S extends z.AnyZodObject>(schema: S): S {
  const published = Object.create(schema) as S;
  published.safeParse = (data: unknown) => ({ success: true, data: data as z.output<S> });
  published.safeParseAsync = async (data: unknown) => ({ success: true, data: data as z.output<S> });
  return published;
}

/** What tools/list shows of a tool besides its name and input schema. */
type ToolInfo = { readonly title: string; readonly description: string; readonly annotations: ToolAnnotations };

/**
 * Registers a tool that publishes `schema`, parses a call's arguments with it, then runs
 * `work`; every failure is a tool error result.
 */
export function registerTool<S extends z.AnyZodObject>(
  server: McpServer,
  name: string,
  info: ToolInfo,
  schema: S,
  subjectOf: (args: z.output<S>) => string,
  work: (args: z.output<S>) => Promise<CallToolResult>,
): void {
  // Each call one trace (DESIGN §17) when tracing is on: `mcp <tool>` over the SDK's spans.
  server.registerTool(name, { ...info, inputSchema: publishedOnly<z.AnyZodObject>(schema) }, (raw: unknown) =>
    inSpan(`mcp ${name}`, { 'mcp.tool': name }, async (span) => {
      let subject = '(unnamed)';
      try {
        const args = parseOrThrow(schema, raw, `${name} arguments`);
        subject = subjectOf(args);
        return await work(args);
      } catch (err) {
        // The call answers with an error document; the span says which code.
        markFailed(span, err);
        return errorResult(err, subject);
      }
    }),
  );
}

export interface SandboxToolsOptions {
  /** The SDK client; called per tool call, so a Temporal that comes up later is found then. */
  readonly sandboxes: () => Promise<SandboxClient>;
  /** Who the audit trail names for extend and destroy (`mcp:<client name>`). */
  readonly actor: () => string;
}

/**
 * Registers create_sandbox, get_sandbox, list_sandboxes, extend_sandbox and
 * destroy_sandbox. Their input schemas are the SDK's zod schemas, so the MCP server
 * refuses what the SDK would refuse (INVALID_INPUT, as a tool error result), before any
 * call to Temporal.
 *
 * No output schema: an MCP client checks structuredContent against it even on an
 * error result, and a refusal's `{"error": ...}` document is not a status.
 */
export function registerSandboxTools(server: McpServer, options: SandboxToolsOptions): void {
  const { sandboxes, actor } = options;

  registerTool(
    server,
    'create_sandbox',
    {
      title: 'Create a sandbox',
      description: DESCRIPTIONS.create,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    createSandboxInput,
    (args) => args.id ?? '(new)',
    async (args) => {
      const { wait, timeoutSeconds, ...request } = args;
      const client = await sandboxes();
      const status = await client.create(request, { wait, timeoutMs: (timeoutSeconds ?? DEFAULT_WAIT_SECONDS) * 1000 });
      return statusResult(status);
    },
  );

  registerTool(
    server,
    'get_sandbox',
    { title: 'Get a sandbox', description: DESCRIPTIONS.get, annotations: { readOnlyHint: true, openWorldHint: false } },
    getSandboxInput,
    (args) => args.id,
    async (args) => statusResult(await (await sandboxes()).status(args.id)),
  );

  registerTool(
    server,
    'list_sandboxes',
    { title: 'List sandboxes', description: DESCRIPTIONS.list, annotations: { readOnlyHint: true, openWorldHint: false } },
    listSandboxesInput,
    () => '(list)',
    async (args) => structured({ sandboxes: await (await sandboxes()).list(args) }),
  );

  registerTool(
    server,
    'extend_sandbox',
    {
      title: 'Extend a sandbox',
      description: DESCRIPTIONS.extend,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    extendSandboxInput,
    (args) => args.id,
    async ({ id, ...change }) => statusResult(await (await sandboxes()).extend(id, { ...change, actor: actor() })),
  );

  registerTool(
    server,
    'destroy_sandbox',
    {
      title: 'Destroy a sandbox',
      description: DESCRIPTIONS.destroy,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    destroySandboxInput,
    (args) => args.id,
    async ({ id, ...options }) => statusResult(await (await sandboxes()).destroy(id, { ...options, actor: actor() })),
  );
}
