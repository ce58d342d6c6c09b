import { z } from 'zod';
import { SandboxPlaneError, type ErrorDetails } from './errors';

/** One thing a sandbox holds, as its emulator reports it (a bucket, a table, a queue). */
export interface ResourceRef {
  readonly service: string;
  readonly type: string;
  readonly id: string;
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
  resources: z.array(z.object({ service: z.string(), type: z.string(), id: z.string() })),
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
