import { zodToJsonSchema } from 'zod-to-json-schema';
import { ERROR_CODES } from '../domain/error-codes';
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
    const parameters = [...route.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({ name, in: 'path', required: true, schema: { type: 'string' } }));
    const body =
      route.body === undefined
        ? {}
        : { requestBody: { required: route.method !== 'DELETE', content: { 'application/json': { schema: zodToJsonSchema(route.body, { target: 'openApi3', $refStrategy: 'none' }) } } } };
    (paths[route.path] ??= {})[route.method.toLowerCase()] = {
      operationId: route.operationId,
      summary: route.summary,
      ...(parameters.length > 0 ? { parameters } : {}),
      ...body,
      responses: { [String(route.successStatus)]: { description: 'OK', content: { 'application/json': { schema: { type: 'object' } } } }, ...ERROR_RESPONSES },
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
    components: { securitySchemes: { apiKey: { type: 'http', scheme: 'bearer' } }, schemas: { Error: ERROR_SCHEMA } },
    security: [{ apiKey: [] }],
    paths,
  };
}
