import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { asActivityFailure } from '../../src/activities/activity-failure';
import { listThroughAwsApis } from '../../src/adapters/aws-resource-listers';
import { FLOCI_SERVICE_PRESENCE } from '../../src/adapters/floci-health';
import { MemoryAdapter } from '../../src/adapters/memory-adapter';
import { toSandboxError } from '../../src/client/client-errors';
import { clientConfigFor } from '../../src/domain/client-config';
import { SandboxPlaneError } from '../../src/domain/errors';
import { completeResources, listingFromDetails, type ResourceListing } from '../../src/domain/resources';
import { SERVICE_CATALOGS } from '../../src/domain/service-catalog';

describe('resource listing, service by service', () => {
  // Answers S3 ListBuckets (the one GET) with one bucket, and every other call (SQS's POSTs) with a 500.
  const server = http.createServer((request, response) => {
    if (request.method === 'GET') {
      response.writeHead(200, { 'content-type': 'application/xml' });
      response.end(
        '<ListAllMyBucketsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Owner><ID>x</ID></Owner>' +
          '<Buckets><Bucket><Name>agent-bucket</Name><CreationDate>2026-01-01T00:00:00.000Z</CreationDate></Bucket></Buckets></ListAllMyBucketsResult>',
      );
      return;
    }
    response.writeHead(500, { 'content-type': 'application/json' }).end('{"__type":"InternalFailure","message":"boom"}');
  });
  let endpoint: string;
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('what can be listed is returned; UNAVAILABLE, unlistable and failing services are each named with a reason', async () => {
    const started = Date.now();
    const listing = await listThroughAwsApis(clientConfigFor('floci', endpoint, 'us-east-1'), SERVICE_CATALOGS.floci, ['s3', 'lambda', 'kms', 'sqs']);
    assert.deepEqual(listing.resources, [{ service: 's3', type: 'bucket', id: 'agent-bucket' }]);
    assert.deepEqual(
      listing.unlisted.map(({ service, kind }) => [service, kind]),
      [
        ['lambda', 'unavailable'],
        ['kms', 'not_listable'],
        ['sqs', 'failed'],
      ],
    );
    assert.match(listing.unlisted[0]?.reason ?? '', /lambda is UNAVAILABLE here: .*Docker engine/);
    assert.match(listing.unlisted[1]?.reason ?? '', /no way to enumerate kms yet \(listable: dynamodb, s3, sqs\)/);
    assert.match(listing.unlisted[2]?.reason ?? '', /listing sqs at http:\/\/127\.0\.0\.1:\d+ failed/);
    assert.ok(Date.now() - started < 10_000, 'in seconds');
  });

  test('a complete listing is the plain list, even when empty', () => {
    assert.deepEqual(completeResources({ resources: [], unlisted: [] }), []);
  });

  test('a partial listing is RESOURCES_PARTIAL (not retried) or, when an API call failed, RESOURCE_DISCOVERY_FAILED (retried); both carry the listing', () => {
    const partial: ResourceListing = {
      resources: [{ service: 's3', type: 'bucket', id: 'b' }],
      unlisted: [{ service: 'lambda', kind: 'unavailable', reason: 'lambda is UNAVAILABLE here' }],
    };
    assert.throws(
      () => completeResources(partial),
      (err: unknown) => {
        assert.ok(err instanceof SandboxPlaneError);
        assert.equal(err.code, 'RESOURCES_PARTIAL');
        assert.equal(err.retryable, false);
        assert.match(err.message, /could not list lambda \(lambda is UNAVAILABLE here\); 1 resource\(s\) of the other services were listed/);
        assert.deepEqual(listingFromDetails(err.details), partial);
        return true;
      },
    );
    const failed: ResourceListing = { ...partial, unlisted: [...partial.unlisted, { service: 'sqs', kind: 'failed', reason: 'timeout' }] };
    assert.throws(
      () => completeResources(failed),
      (err: unknown) => err instanceof SandboxPlaneError && err.code === 'RESOURCE_DISCOVERY_FAILED' && err.retryable,
    );
  });

  test('the listing survives the trip through a Temporal failure to the client', () => {
    const partial: ResourceListing = { resources: [], unlisted: [{ service: 'lambda', kind: 'unavailable', reason: 'no engine' }] };
    let failure: unknown;
    try {
      completeResources(partial);
    } catch (err) {
      failure = asActivityFailure(err);
    }
    assert.ok(failure instanceof ApplicationFailure);
    assert.equal(failure.nonRetryable, true);
    const mapped = toSandboxError(failure, 'sb-1');
    assert.equal(mapped.code, 'RESOURCES_PARTIAL');
    assert.equal(mapped.details.sandboxId, 'sb-1');
    assert.deepEqual(listingFromDetails(mapped.details), partial);
    assert.equal(listingFromDetails({ listing: { resources: 'nope' } }), undefined);
  });

  test('the memory adapter names UNAVAILABLE services the same way', async () => {
    const memory = new MemoryAdapter();
    const plan = memory.launchPlan({ sandboxId: 'mem-1', services: ['s3', 'lambda'], labels: {} });
    await memory.provision(plan);
    const listing = await memory.listResources('mem-1', ['s3', 'lambda']);
    assert.deepEqual(listing.resources, []);
    assert.deepEqual(
      listing.unlisted.map(({ service, kind }) => [service, kind]),
      [['lambda', 'unavailable']],
    );
  });
});

describe('Floci health keys', () => {
  test('every service of the Floci catalog says where Floci shows it, and nothing else does', () => {
    assert.deepEqual(Object.keys(FLOCI_SERVICE_PRESENCE).sort(), Object.keys(SERVICE_CATALOGS.floci).sort());
  });

  test("Floci's own names are used, and sts (which its health map lacks) is probed", () => {
    const keyOf = (service: string) => {
      const presence = FLOCI_SERVICE_PRESENCE[service];
      return presence !== undefined && 'healthKey' in presence ? presence.healthKey : 'probe';
    };
    assert.deepEqual(['stepfunctions', 'cloudwatch', 'ses', 'opensearch', 'sts', 's3'].map(keyOf), ['states', 'monitoring', 'email', 'es', 'probe', 's3']);
  });
});
