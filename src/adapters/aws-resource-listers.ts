import { withAwsSpans } from '../telemetry/aws-spans';
import { DynamoDBClient, paginateListTables } from '@aws-sdk/client-dynamodb';
import { ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';
import { paginateListQueues, SQSClient } from '@aws-sdk/client-sqs';
import type { ClientConfig } from '../domain/client-config';
import type { ResourceListing, UnlistedService } from '../domain/resources';
import type { ServiceCatalog } from '../domain/service-catalog';
import type { ResourceRef } from './cloud-emulator-adapter';

type Lister = (config: ClientConfig) => Promise<ResourceRef[]>;

/** Services whose resources we can enumerate through their own AWS API. */
const LISTERS: Readonly<Record<string, Lister>> = {
  s3: async (config) => {
    const client = withAwsSpans(new S3Client({ ...config, maxAttempts: 2 }));
    try {
      const { Buckets = [] } = await client.send(new ListBucketsCommand({}));
      return Buckets.map((bucket) => ({ service: 's3', type: 'bucket', id: bucket.Name ?? '' }));
    } finally {
      client.destroy();
    }
  },
  dynamodb: async (config) => {
    const client = withAwsSpans(new DynamoDBClient({ ...config, maxAttempts: 2 }));
    try {
      const tables: ResourceRef[] = [];
      for await (const page of paginateListTables({ client }, {})) {
        for (const name of page.TableNames ?? []) tables.push({ service: 'dynamodb', type: 'table', id: name });
      }
      return tables;
    } finally {
      client.destroy();
    }
  },
  sqs: async (config) => {
    const client = withAwsSpans(new SQSClient({ ...config, maxAttempts: 2 }));
    try {
      const queues: ResourceRef[] = [];
      for await (const page of paginateListQueues({ client }, {})) {
        for (const url of page.QueueUrls ?? []) queues.push({ service: 'sqs', type: 'queue', id: url.slice(url.lastIndexOf('/') + 1) });
      }
      return queues;
    } finally {
      client.destroy();
    }
  },
};

export const LISTABLE_SERVICES: readonly string[] = Object.freeze(Object.keys(LISTERS));

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
