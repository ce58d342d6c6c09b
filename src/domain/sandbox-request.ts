import { z } from 'zod';
import { CAPABILITIES } from './capabilities';
import { cleanDisplayText } from './display-text';
import { sandboxIdSchema } from './sandbox-id';
import { snapshotIdSchema } from './snapshots';
import { ADAPTER_NAMES } from './service-catalog';
import { sha256Hex } from './sha256';

// The SDK, CLI and MCP tools take every request rule, the id's included, from this module.
export { sandboxIdSchema } from './sandbox-id';

export const principalSchema = z
  .string()
  .min(1, 'must not be empty')
  .max(200, 'must be at most 200 characters')
  .regex(/^[A-Za-z0-9._@:/+-]+$/, 'may contain letters, digits and . _ @ : / + - only');

const serviceSchema = z
  .string()
  .transform((name) => name.trim().toLowerCase())
  .pipe(z.string().regex(/^[a-z0-9][a-z0-9-]{0,39}$/, 'must be a service name such as s3 or dynamodb'));

const labelKeySchema = z.string().regex(/^[a-z0-9][a-z0-9._-]{0,62}$/, 'label keys are lowercase letters, digits, . _ -');

/** Adapter a request gets when it names none. */
export const DEFAULT_ADAPTER = 'memory';

/** What an agent sends to create a sandbox (DESIGN §2). */
export const sandboxRequestSchema = z
  .object({
    id: sandboxIdSchema.optional(),
    principal: principalSchema,
    capability: z.enum(CAPABILITIES).default('cloud.sandbox'),
    adapter: z.enum(ADAPTER_NAMES).default(DEFAULT_ADAPTER),
    services: z
      .array(serviceSchema)
      .min(1, 'name at least one service')
      .max(32, 'at most 32 services')
      .transform((services) => [...new Set(services)].sort()),
    ttlSeconds: z.number().int('must be whole seconds').positive('must be positive').max(31_536_000).optional(),
    // Read by reviewers before they approve: control characters never reach them (DESIGN §12).
    purpose: z.string().transform(cleanDisplayText).pipe(z.string().trim().max(500, 'must be at most 500 characters')).optional(),
    labels: z
      .record(labelKeySchema, z.string().max(256, 'label values are at most 256 characters').transform(cleanDisplayText))
      .refine((labels) => Object.keys(labels).length <= 32, 'at most 32 labels')
      .default({}),
    /** A fork (DESIGN §15): the sandbox starts with this snapshot's state, in its own container with its own credentials. */
    fromSnapshot: snapshotIdSchema.optional(),
  })
  .strict();

export type SandboxRequestInput = z.input<typeof sandboxRequestSchema>;
export type SandboxRequest = z.output<typeof sandboxRequestSchema>;

/** A request with its id settled: what the lifecycle workflow receives. */
export type IdentifiedRequest = SandboxRequest & { readonly id: string };

/**
 * The request without its id, with keys sorted at every level: two requests with the
 * same meaning have the same text, so the same digest.
 */
export function canonicalRequestText(request: SandboxRequest): string {
  const { id: _id, ...rest } = request;
  return JSON.stringify(sortKeys(rest));
}

/**
 * `sha256:<hex>` of the canonical request text: a repeated id must repeat the same
 * request. The workflow computes it from its own input, so a caller cannot claim one.
 */
export function requestDigestOf(request: SandboxRequest): string {
  return `sha256:${sha256Hex(canonicalRequestText(request))}`;
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value as Record<string, unknown>)
        .sort()
        .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
        .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
    );
  }
  return value;
}
