import { z } from 'zod';
import { SandboxPlaneError, type ErrorDetails } from './errors';

/** One thing a sandbox holds, as its emulator reports it (a bucket, a table, a queue). */
export interface ResourceRef {
  readonly service: string;
  readonly type: string;
  readonly id: string;
  /** The CloudFormation stack that holds it, and its logical id there (DESIGN §14: inventory from IaC state). */
  readonly stack?: string;
  readonly logicalId?: string;
}

/** A stack's resource, as the emulator's CloudFormation lists it. */
export interface StackResourceRow {
  readonly stack: string;
  readonly logicalId: string;
  readonly type: string;
  readonly physicalId: string | null;
}

/** `AWS::SQS::Queue` → `{service: 'sqs', type: 'queue'}`: a stack resource in the listing's own terms. */
function refTypeOf(type: string): { service: string; type: string } {
  const [, service = '', thing = ''] = type.split('::');
  return { service: service.toLowerCase(), type: thing.toLowerCase() };
}

/** Whether a listed resource is a stack resource: the same service and type, and its id is the physical id (or its last part: a queue's URL, a topic's ARN). */
function sameResource(ref: ResourceRef, row: StackResourceRow): boolean {
  const kind = refTypeOf(row.type);
  if (row.physicalId === null || ref.service !== kind.service || ref.type !== kind.type) return false;
  return ref.id === row.physicalId || row.physicalId.endsWith(`/${ref.id}`) || row.physicalId.endsWith(`:${ref.id}`);
}

/**
 * The emulator's listing with each stack resource named by its stack and logical id;
 * a stack resource of a service the listing did not cover is added as a row of its own.
 */
export function withStackResources(resources: readonly ResourceRef[], rows: readonly StackResourceRow[]): ResourceRef[] {
  const annotated = resources.map((ref) => {
    const row = rows.find((candidate) => sameResource(ref, candidate));
    return row === undefined ? ref : { ...ref, stack: row.stack, logicalId: row.logicalId };
  });
  for (const row of rows) {
    if (annotated.some((ref) => ref.stack === row.stack && ref.logicalId === row.logicalId)) continue;
    const kind = refTypeOf(row.type);
    if (resources.some((ref) => ref.service === kind.service)) continue;
    annotated.push({ ...kind, id: row.physicalId ?? row.logicalId, stack: row.stack, logicalId: row.logicalId });
  }
  return annotated;
}

/**
 * Why a service was not listed: `unavailable` (its fidelity is UNAVAILABLE here),
 * `not_listable` (no way to enumerate it), `failed` (its API call failed; a retry may help).
 */
export type UnlistedKind = 'unavailable' | 'not_listable' | 'failed';

/** A requested service whose resources could not be listed, and why: unknown, not empty. */
export interface UnlistedService {
  readonly service: string;
  readonly kind: UnlistedKind;
  readonly reason: string;
}

/**
 * What a sandbox holds, service by service: `resources` of the services that were
 * listed, and each service that could not be in `unlisted`. A service absent from both
 * was not asked for.
 */
export interface ResourceListing {
  readonly resources: readonly ResourceRef[];
  readonly unlisted: readonly UnlistedService[];
}

const resourceListingSchema = z.object({
  resources: z.array(z.object({ service: z.string(), type: z.string(), id: z.string(), stack: z.string().optional(), logicalId: z.string().optional() })),
  unlisted: z.array(z.object({ service: z.string(), kind: z.enum(['unavailable', 'not_listable', 'failed']), reason: z.string() })),
});

/**
 * The answer of the `listResources` update, whose result stays a plain list: a complete
 * listing is that list; a partial one is an error carrying the listing in its details —
 * RESOURCES_PARTIAL when nothing a retry could change is missing, RESOURCE_DISCOVERY_FAILED
 * (retried) when an API call failed. So no caller ever takes a partial list for the whole.
 */
export function completeResources(listing: ResourceListing): ResourceRef[] {
  if (listing.unlisted.length === 0) return [...listing.resources];
  const code = listing.unlisted.some((unlisted) => unlisted.kind === 'failed') ? 'RESOURCE_DISCOVERY_FAILED' : 'RESOURCES_PARTIAL';
  const missing = listing.unlisted.map((unlisted) => `${unlisted.service} (${unlisted.reason})`).join('; ');
  throw new SandboxPlaneError(code, `could not list ${missing}; ${listing.resources.length} resource(s) of the other services were listed`, {
    details: { listing },
  });
}

/** The partial listing an error from {@link completeResources} carries, if it carries one. */
export function listingFromDetails(details: ErrorDetails): ResourceListing | undefined {
  const parsed = resourceListingSchema.safeParse(details.listing);
  return parsed.success ? parsed.data : undefined;
}
