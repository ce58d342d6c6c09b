import { DynamoDBClient, paginateListTables } from '@aws-sdk/client-dynamodb';
import { ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';
import { paginateListQueues, SQSClient } from '@aws-sdk/client-sqs';
import type { ClientConfig } from '../domain/client-config';
import { SandboxPlaneError } from '../domain/errors';
import type { ResourceRef } from './cloud-emulator-adapter';

type Lister = (config: ClientConfig) => Promise<ResourceRef[]>;

/** Services whose resources we can enumerate through their own AWS API. */
const LISTERS: Readonly<Record<string, Lister>> = {
  s3: async (config) => {
    const client = new S3Client({ ...config, maxAttempts: 2 });
    try {
      const { Buckets = [] } = await client.send(new ListBucketsCommand({}));
      return Buckets.map((bucket) => ({ service: 's3', type: 'bucket', id: bucket.Name ?? '' }));
    } finally {
      client.destroy();
    }
  },
  dynamodb: async (config) => {
    const client = new DynamoDBClient({ ...config, maxAttempts: 2 });
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
    const client = new SQSClient({ ...config, maxAttempts: 2 });
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

/**
 * Lists the resources of `services` through the emulator's AWS APIs. A service we
 * cannot enumerate, or an API call that fails, is RESOURCE_DISCOVERY_FAILED: an empty
 * list must mean "observed empty", never "did not look".
 */
export async function listThroughAwsApis(config: ClientConfig, services: readonly string[]): Promise<ResourceRef[]> {
  const unlistable = services.filter((service) => LISTERS[service] === undefined);
  if (unlistable.length > 0) {
    throw new SandboxPlaneError(
      'RESOURCE_DISCOVERY_FAILED',
      `cannot enumerate ${unlistable.join(', ')} (listable: ${LISTABLE_SERVICES.join(', ')})`,
      { details: { unlistable } },
    );
  }
  const found: ResourceRef[] = [];
  for (const service of services) {
    try {
      found.push(...(await (LISTERS[service] as Lister)(config)));
    } catch (err) {
      throw new SandboxPlaneError('RESOURCE_DISCOVERY_FAILED', `listing ${service} at ${config.endpoint} failed: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }
  return found;
}
