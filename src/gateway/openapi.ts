import { z } from 'zod';
import { zodToJsonSchema } from 'zod-to-json-schema';
import { ERROR_CODES } from '../domain/error-codes';
import { EVENT_KINDS, EVENT_REASONS } from '../domain/events';
import { ROUTES } from './http-routes';

const ERROR_SCHEMA = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message', 'hint'],
      properties: {
        code: { type: 'string', enum: Object.keys(ERROR_CODES) },
        message: { type: 'string' },
        hint: { type: 'string', description: 'What to do about it.' },
      },
    },
    status: { type: 'object', description: "The sandbox's status, when the error is about one (e.g. WAIT_TIMEOUT)." },
  },
} as const;

const nullableString = { type: ['string', 'null'] } as const;

/** One event (DESIGN §11 "Events"), as `sandboxctl events --json` prints it. */
const EVENT_SCHEMA = {
  type: 'object',
  required: ['eventId', 'time', 'kind', 'sandboxId', 'runId', 'principal', 'actor', 'reason', 'from', 'to', 'detail'],
  properties: {
    eventId: { type: 'string', description: 'Stable however often the change is recorded (a webhook delivery carries it as webhook-id).' },
    time: { type: 'string', format: 'date-time' },
    kind: { type: 'string', enum: [...EVENT_KINDS] },
    sandboxId: { ...nullableString, description: 'null for an IaC run against a target.' },
    runId: { ...nullableString, description: 'The IaC run, for iac.* events and approvals of one.' },
    principal: { type: 'string' },
    actor: { type: 'string', description: 'Who acted: agent:<name> for a key or bound client, timer for the TTL, an operator, the sweep.' },
    reason: { type: 'string', enum: [...EVENT_REASONS] },
    from: { ...nullableString, description: "The sandbox's state before the change." },
    to: { ...nullableString, description: "The sandbox's state after it." },
    detail: { type: 'object', description: 'Small facts of the kind (expiresAt, snapshotId, code, why).' },
  },
} as const;

const EVENT_PAGE_SCHEMA = {
  type: 'object',
  required: ['events', 'next'],
  properties: {
    events: { type: 'array', items: { $ref: '#/components/schemas/Event' } },
    next: { type: 'string', description: 'An opaque cursor: pass it as ?after= to read what comes next. It moves past every event this answer saw.' },
  },
} as const;

const ERROR_RESPONSES = Object.fromEntries(
  [
    ['400', 'INVALID_INPUT: the message names the field to fix'],
    ['401', 'UNAUTHENTICATED: no valid, unrevoked API key'],
    ['403', 'refused (POLICY_DENIED, PRINCIPAL_MISMATCH, QUOTA_EXCEEDED, ...)'],
    ['404', "NOT_FOUND (another principal's sandboxes and runs are not found either)"],
    ['429', "RATE_LIMITED: the key's requests per minute are used up; Retry-After says when to try again"],
  ].map(([status, description]) => [status, { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } }]),
);

/**
 * The OpenAPI 3.1 document the gateway serves at /v1/openapi.json: made from the routes
 * and their zod schemas, so it cannot drift from what the gateway accepts.
 */
export function openApiDocument(version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of ROUTES) {
    const parameters = [
      ...[...route.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
      ...Object.entries(route.query?.shape ?? {}).map(([name, schema]) => ({
        name,
        in: 'query',
        required: false,
        description: (schema as z.ZodTypeAny).description,
        schema: zodToJsonSchema(schema instanceof z.ZodOptional ? (schema.unwrap() as z.ZodTypeAny) : (schema as z.ZodTypeAny), { target: 'openApi3', $refStrategy: 'none' }),
      })),
    ];
    const body =
      route.body === undefined
        ? {}
        : { requestBody: { required: route.method !== 'DELETE', content: { 'application/json': { schema: zodToJsonSchema(route.body, { target: 'openApi3', $refStrategy: 'none' }) } } } };
    (paths[route.path] ??= {})[route.method.toLowerCase()] = {
      operationId: route.operationId,
      summary: route.summary,
      ...(parameters.length > 0 ? { parameters } : {}),
      ...body,
      responses: { [String(route.successStatus)]: { description: 'OK', content: { 'application/json': { schema: route.response ?? { type: 'object' } } } }, ...ERROR_RESPONSES },
    };
  }
  paths['/mcp'] = {
    post: {
      operationId: 'mcp',
      summary: "MCP over Streamable HTTP (stateless): the tools of `sandboxctl mcp`, as the key's principal.",
      responses: { '200': { description: 'A JSON-RPC response' }, ...ERROR_RESPONSES },
    },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'Cloud Sandbox Plane gateway',
      version,
      description:
        "Throw-away, AWS-shaped sandboxes for agents. Every route but this document needs `Authorization: Bearer KEY` (`sandboxctl keys add PRINCIPAL`); the key's principal is the caller.",
    },
    components: { securitySchemes: { apiKey: { type: 'http', scheme: 'bearer' } }, schemas: { Error: ERROR_SCHEMA, Event: EVENT_SCHEMA, EventPage: EVENT_PAGE_SCHEMA } },
    security: [{ apiKey: [] }],
    paths,
  };
}
