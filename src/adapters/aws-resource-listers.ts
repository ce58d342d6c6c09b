import type { ClientConfig } from '../domain/client-config';
import type { ResourceListing, UnlistedService } from '../domain/resources';
import type { ServiceCatalog } from '../domain/service-catalog';
import { AWS_SERVICES } from './aws-services';
import type { ResourceRef } from './cloud-emulator-adapter';

type Lister = (config: ClientConfig) => Promise<ResourceRef[]>;

/** Services whose resources we can enumerate through their own AWS API: those the one service table can list. */
const LISTERS: Readonly<Record<string, Lister>> = Object.fromEntries(
  Object.values(AWS_SERVICES).flatMap((entry) =>
    entry.lists === undefined ? [] : [[entry.lists.service, (config: ClientConfig) => (entry.lists as NonNullable<typeof entry.lists>).all(config)] as const],
  ),
);

export const LISTABLE_SERVICES: readonly string[] = Object.freeze(Object.keys(LISTERS).sort());

type ServiceOutcome = { listed: ResourceRef[] } | { unlisted: UnlistedService };

async function listOne(config: ClientConfig, catalog: ServiceCatalog, service: string): Promise<ServiceOutcome> {
  const entry = Object.prototype.hasOwnProperty.call(catalog, service) ? catalog[service] : undefined;
  // Not asked at all: its API needs what the sandbox lacks, so an answer would not be its inventory.
  if (entry?.fidelity === 'UNAVAILABLE') return { unlisted: { service, kind: 'unavailable', reason: `${service} is UNAVAILABLE here: ${entry.note}` } };
  const lister = LISTERS[service];
  if (lister === undefined) {
    return { unlisted: { service, kind: 'not_listable', reason: `no way to enumerate ${service} yet (listable: ${LISTABLE_SERVICES.join(', ')})` } };
  }
  try {
    return { listed: await lister(config) };
  } catch (err) {
    return { unlisted: { service, kind: 'failed', reason: `listing ${service} at ${config.endpoint} failed: ${(err as Error).message}` } };
  }
}

/**
 * Lists the resources of `services` through the emulator's AWS APIs, service by
 * service and all at once: what could be listed is returned, and each service that
 * could not be is named with its reason, so an empty list always means "observed empty".
 */
export async function listThroughAwsApis(config: ClientConfig, catalog: ServiceCatalog, services: readonly string[]): Promise<ResourceListing> {
  const outcomes = await Promise.all(services.map((service) => listOne(config, catalog, service)));
  return {
    resources: outcomes.flatMap((outcome) => ('listed' in outcome ? outcome.listed : [])),
    unlisted: outcomes.flatMap((outcome) => ('unlisted' in outcome ? [outcome.unlisted] : [])),
  };
}
