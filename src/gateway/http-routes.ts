/**
 * The gateway's HTTP API (DESIGN §11 "Gateway"): the SDK's methods as routes, each run by
 * a SandboxClient bound to the key's principal. Bodies are parsed with the same zod
 * schemas the MCP tools use; a principal in a body is the key's or PRINCIPAL_MISMATCH.
 */
import { z } from 'zod';
import type { SandboxClient } from '../client/sandbox-client';
import { iacRunIdSchema } from '../domain/iac/iac-run';
import { principalSchema, sandboxIdSchema } from '../domain/sandbox-request';
import { SandboxPlaneError } from '../domain/errors';
import { parseOrThrow } from '../domain/validation';
import { CDK_APP_REFUSED, changeInput } from '../mcp/iac-tools';
import { createSandboxInput, destroySandboxInput, extendSandboxInput, listSandboxesInput } from '../mcp/sandbox-tools';
import { forkSandboxInput } from '../mcp/snapshot-tools';
import { sandboxEventsInput } from '../mcp/event-tools';
import { snapshotIdSchema } from '../domain/snapshots';
import { usageQuerySchema } from '../domain/usage';

/** What a route gets: its path's parameters, the query, the parsed JSON body, the bound client and the audit trail's actor. */
export interface RouteContext {
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  readonly body: unknown;
  readonly sandboxes: SandboxClient;
  readonly actor: string;
}

export interface Route {
  readonly method: 'GET' | 'POST' | 'DELETE';
  /** OpenAPI's path template, e.g. `/v1/sandboxes/{id}`. */
  readonly path: string;
  readonly operationId: string;
  /** What a success answers: 201 for what makes something, else 200. */
  readonly successStatus: 200 | 201;
  readonly summary: string;
  /** The body's schema (for the OpenAPI document too); none for GET and an empty DELETE. */
  readonly body?: z.ZodTypeAny;
  /** The query's parameters, for the OpenAPI document (the route parses them itself). */
  readonly query?: z.AnyZodObject;
  /** The success body's JSON schema in the OpenAPI document; an object by default. */
  readonly response?: Readonly<Record<string, unknown>>;
  /** The answer's body, sent with {@link successStatus}. */
  readonly handle: (context: RouteContext) => Promise<unknown>;
}

/** An HTTP caller's wait may be longer than an MCP client's: up to the SDK's 10 minutes by default. */
const HTTP_DEFAULT_WAIT_SECONDS = 600;

export const createBody = createSandboxInput.extend({
  principal: principalSchema.optional().describe("Leave it out: the key's principal. Any other is refused with PRINCIPAL_MISMATCH."),
});
const extendBody = extendSandboxInput.omit({ id: true });
const destroyBody = destroySandboxInput.omit({ id: true });
export const iacBody = changeInput
  .omit({ sandboxId: true, target: true })
  .extend({
    mode: z.enum(['plan', 'apply']).describe("'plan': the plan only, nothing changes. 'apply': plan, approval if policy asks, apply, verify."),
    wait: z.enum(['planned', 'ended']).default('planned').describe("For an apply: 'planned' (default) returns once the plan is shown; 'ended' once APPLIED, FAILED, DENIED or EXPIRED."),
  })
  .strict(CDK_APP_REFUSED);

export const forksBody = forkSandboxInput
  .omit({ snapshotId: true, id: true })
  .extend({ count: forkSandboxInput.shape.count.unwrap().default(1).describe('How many sandboxes at once (default 1; at most SANDBOXPLANE_FORK_MAX, 20 by default).') })
  .strict();

/** `GET /v1/events`: sandbox_events' arguments, its numbers as query text. */
export const eventsQuery = sandboxEventsInput.extend({
  limit: z.coerce
    .number()
    .pipe(sandboxEventsInput.shape.limit.unwrap())
    .optional()
    .describe(sandboxEventsInput.shape.limit.description ?? ''),
  waitSeconds: z.coerce
    .number()
    .pipe(sandboxEventsInput.shape.waitSeconds.unwrap())
    .optional()
    .describe(`${sandboxEventsInput.shape.waitSeconds.description ?? ''} A waiting request holds one of the key's requests in flight.`),
});

const sandboxId = (context: RouteContext) => parseOrThrow(sandboxIdSchema, context.params.id, 'sandbox id (in the path)');

export const ROUTES: readonly Route[] = [
  {
    method: 'POST',
    path: '/v1/sandboxes',
    operationId: 'createSandbox',
    successStatus: 201,
    summary: "Create a sandbox as the key's principal; 201 with its status (READY with clientConfig when wait is 'ready').",
    body: createBody,
    handle: async ({ body, sandboxes }) => {
      const { wait, timeoutSeconds, ...request } = parseOrThrow(createBody, body, 'create request');
      return await sandboxes.create(request, { wait, timeoutMs: (timeoutSeconds ?? HTTP_DEFAULT_WAIT_SECONDS) * 1000 });
    },
  },
  {
    method: 'GET',
    path: '/v1/sandboxes',
    operationId: 'listSandboxes',
    successStatus: 200,
    summary: "The key's principal's sandboxes, newest first (?state=READY&limit=100).",
    handle: async ({ query, sandboxes }) => {
      const filter = parseOrThrow(
        listSandboxesInput,
        {
          ...(query.get('state') !== null ? { state: query.get('state') } : {}),
          ...(query.get('limit') !== null ? { limit: Number(query.get('limit')) } : {}),
        },
        'list query',
      );
      return { sandboxes: await sandboxes.list(filter) };
    },
  },
  {
    method: 'GET',
    path: '/v1/usage',
    operationId: 'getUsage',
    successStatus: 200,
    summary: "The key's principal's usage by UTC day, newest first (?since=YYYY-MM-DD): {rows: [{principal, day, sandboxes, sandboxSeconds, cpuSeconds, peakMemoryBytes, requests}]}.",
    handle: async ({ query, sandboxes }) => {
      const since = query.get('since');
      const filter = parseOrThrow(usageQuerySchema.pick({ since: true }), since === null ? {} : { since }, 'query');
      return { rows: await sandboxes.usage(filter) };
    },
  },
  {
    method: 'GET',
    path: '/v1/sandboxes/{id}',
    operationId: 'getSandbox',
    successStatus: 200,
    summary: "One sandbox's status; another principal's is 404.",
    handle: async (context) => await context.sandboxes.status(sandboxId(context)),
  },
  {
    method: 'POST',
    path: '/v1/sandboxes/{id}/extend',
    operationId: 'extendSandbox',
    successStatus: 200,
    summary: "Move a READY sandbox's expiry later by ttlSeconds.",
    body: extendBody,
    handle: async (context) => await context.sandboxes.extend(sandboxId(context), { ...parseOrThrow(extendBody, context.body, 'extend request'), actor: context.actor }),
  },
  {
    method: 'DELETE',
    path: '/v1/sandboxes/{id}',
    operationId: 'destroySandbox',
    successStatus: 200,
    summary: 'Tear a sandbox down now; its final status.',
    body: destroyBody,
    handle: async (context) => await context.sandboxes.destroy(sandboxId(context), { ...parseOrThrow(destroyBody, context.body ?? {}, 'destroy request'), actor: context.actor }),
  },
  {
    method: 'GET',
    path: '/v1/sandboxes/{id}/tree',
    operationId: 'getSandboxTree',
    successStatus: 200,
    summary: "A sandbox's family: {root, sandboxes}, the root first, then every fork in its tree, ended ones too.",
    handle: async (context) => await context.sandboxes.tree(sandboxId(context)),
  },
  {
    method: 'POST',
    path: '/v1/snapshots/{id}/forks',
    operationId: 'forkSnapshot',
    successStatus: 201,
    summary: "Fork one of the key's principal's snapshots into count sandboxes at once; 201 with {sandboxes}, each READY (when wait is 'ready') or its own error.",
    body: forksBody,
    handle: async (context) => {
      const snapshotId = parseOrThrow(snapshotIdSchema, context.params.id, 'snapshot id (in the path)');
      const { wait, timeoutSeconds, ...request } = parseOrThrow(forksBody, context.body ?? {}, 'fork request');
      return await context.sandboxes.fork(snapshotId, request, { wait, timeoutMs: (timeoutSeconds ?? HTTP_DEFAULT_WAIT_SECONDS) * 1000 });
    },
  },
  {
    method: 'POST',
    path: '/v1/sandboxes/{id}/iac',
    operationId: 'runIac',
    successStatus: 201,
    summary: "Plan (mode 'plan') or apply (mode 'apply') a CloudFormation template in the sandbox; 201 with the run.",
    body: iacBody,
    handle: async (context) => {
      const { mode, wait, timeoutSeconds, ...change } = parseOrThrow(iacBody, context.body, 'IaC request');
      const request = { ...change, sandboxId: sandboxId(context) };
      const timeoutMs = (timeoutSeconds ?? HTTP_DEFAULT_WAIT_SECONDS) * 1000;
      return mode === 'plan' ? await context.sandboxes.iac.plan(request, { timeoutMs }) : await context.sandboxes.iac.apply(request, { wait, timeoutMs });
    },
  },
  {
    method: 'GET',
    path: '/v1/iac/{runId}',
    operationId: 'getIacRun',
    successStatus: 200,
    summary: "One IaC run's status; another principal's is 404.",
    handle: async (context) => await context.sandboxes.iac.status(parseOrThrow(iacRunIdSchema, context.params.runId, 'run id (in the path)')),
  },
  {
    method: 'GET',
    path: '/v1/events',
    operationId: 'listEvents',
    successStatus: 200,
    summary:
      "The key's principal's events, oldest first: {events, next}. Read on (page, or follow) with ?after=<next>; with &waitSeconds=20 an answer with no events waits up to 20 s for the next one (long poll).",
    query: eventsQuery,
    response: { $ref: '#/components/schemas/EventPage' },
    handle: async ({ query, sandboxes }) => await sandboxes.events(parseOrThrow(eventsQuery, Object.fromEntries(query), 'events query')),
  },
];

/** A path segment as text; a malformed escape is the caller's mistake, not the gateway's. */
function decodedSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new SandboxPlaneError('INVALID_INPUT', `the path segment ${JSON.stringify(segment)} is not valid percent-encoding`, { hint: 'Encode ids with encodeURIComponent.' });
  }
}

/** The route and its path parameters for a method and path; the methods the path takes when only the method is wrong; `undefined` when no path matches. */
export function matchRoute(method: string, pathname: string): { route: Route; params: Record<string, string> } | { allowed: string[] } | undefined {
  const allowed: string[] = [];
  for (const route of ROUTES) {
    const names: string[] = [];
    const pattern = new RegExp(`^${route.path.replace(/\{(\w+)\}/g, (_, name: string) => (names.push(name), '([^/]+)'))}$`);
    const match = pattern.exec(pathname);
    if (match === null) continue;
    allowed.push(route.method);
    if (route.method !== method) continue;
    return { route, params: Object.fromEntries(names.map((name, i) => [name, decodedSegment(match[i + 1] as string)])) };
  }
  return allowed.length > 0 ? { allowed } : undefined;
}
