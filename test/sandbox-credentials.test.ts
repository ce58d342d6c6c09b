/**
 * Per-sandbox credentials (issue 16, DESIGN §12) on a real dev server, a real engine and
 * real moto: each sandbox's emulator verifies its own access key and allows only the
 * granted services; another sandbox's key, an ungranted service, an unsigned request and
 * the old fake credentials are refused; a warm-pooled sandbox gets its own scoped key; the
 * secret reaches the agent in clientConfig only, never the audit trail, the SQLite file
 * or the worker's logs.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { CreateBucketCommand, ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';
import { CreateQueueCommand, ListQueuesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { StoreClient } from '../src/client/store-client';
import { clientConfigFor, type ClientConfig } from '../src/domain/client-config';
import { PLANE_LABEL } from '../src/domain/docker-labels';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import { DockerContainerBroker } from '../src/docker';
import { createLogger } from '../src/logging/logger';
import { locateTemporalCli } from '../src/temporal-dev/temporal-cli';
import { eventually } from './harness/eventually';
import { awsCliEnv } from './helpers/aws-cli';
import { createTestNamespace } from './helpers/test-namespace';
import { testTemporalAddress } from './harness/test-temporal';
import { startTestWorker, type TestWorker } from './harness/test-worker';

const motoImage = process.env.SANDBOXPLANE_MOTO_IMAGE;
const skip = motoImage === undefined && 'needs the moto image and the Docker engine (SANDBOXPLANE_MOTO_IMAGE, set by the test runner)';

/**
 * The error code moto answered with. moto answers an SQS request it refuses in XML while
 * the SDK speaks JSON to SQS, so the SDK's error is a parse failure: the raw body is kept here.
 */
function sqsClient(config: ClientConfig, bodies: string[]): SQSClient {
  const client = new SQSClient({ ...config, maxAttempts: 1 });
  client.middlewareStack.add(
    (next) => async (args) => {
      const result = await next(args);
      const response = result.response as { statusCode: number; body: AsyncIterable<Uint8Array> & { pipe?: unknown } };
      if (response.statusCode >= 400) {
        const chunks: Buffer[] = [];
        for await (const chunk of response.body) chunks.push(Buffer.from(chunk));
        const text = Buffer.concat(chunks).toString('utf8');
        bodies.push(text);
        response.body = (async function* () {
          yield Buffer.from(text);
        })() as typeof response.body;
      }
      return result;
    },
    { step: 'deserialize', priority: 'low', name: 'keepRefusalBody' },
  );
  return client;
}

async function sqsRefusal(config: ClientConfig, command: CreateQueueCommand | ListQueuesCommand): Promise<string> {
  const bodies: string[] = [];
  const client = sqsClient(config, bodies);
  try {
    await assert.rejects(client.send(command as CreateQueueCommand), (err: { $metadata?: { httpStatusCode?: number } }) => err.$metadata?.httpStatusCode === 403);
  } finally {
    client.destroy();
  }
  return /<Code>([^<]+)<\/Code>/.exec(bodies.join('\n'))?.[1] ?? `no code in ${bodies.join('\n')}`;
}

async function s3Refusal(config: ClientConfig): Promise<string> {
  const client = new S3Client({ ...config, maxAttempts: 1 });
  try {
    await client.send(new ListBucketsCommand({}));
  } catch (err) {
    return (err as Error).name;
  } finally {
    client.destroy();
  }
  return 'accepted';
}

/** The AWS CLI (awscli 1.x or 2.x), when this machine has one: the client the checks name. */
function findAwsCli(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, 'aws');
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

/**
 * The error code of `aws <args>` run with `config`'s keys and endpoint, or `accepted`.
 * The CLI prints `An error occurred (Code) …`; for SQS it speaks JSON and moto answers in
 * XML (as with the SDK above), so the code is then in the XML body the CLI prints.
 */
async function awsCliRefusal(aws: string, config: ClientConfig, args: string[]): Promise<string> {
  try {
    await promisify(execFile)(aws, ['--endpoint-url', config.endpoint, ...args], { env: awsCliEnv(config), timeout: 60_000 });
    return 'accepted';
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? String(err);
    return /<Code>([^<]+)<\/Code>/.exec(stderr)?.[1] ?? /An error occurred \((\w+)\)/.exec(stderr)?.[1] ?? `no code in ${stderr}`;
  }
}

describe('per-sandbox credentials (real dev server, engine and moto)', { skip }, () => {
  const broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
  const logLines: string[] = [];
  let worker: TestWorker;
  let plane: string;
  let a: SandboxStatus;
  let b: SandboxStatus;

  before(async () => {
    const address = await testTemporalAddress();
    // A namespace of its own is a plane of its own: its warm pool is this file's alone.
    const namespace = await createTestNamespace(address, 'creds');
    worker = await startTestWorker(address, {
      env: {
        TEMPORAL_NAMESPACE: namespace,
        SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1',
        SANDBOXPLANE_MOTO_IMAGE: motoImage as string,
        SANDBOXPLANE_HEALTH_INTERVAL: '2s',
        SANDBOXPLANE_WARM_POOL: 'moto=1',
      },
      warmPoolCheckMs: 1_000,
      logger: createLogger('debug', { write: (line: string) => void logLines.push(line) }),
    });
    plane = worker.plane.planeId;
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
    const store = new StoreClient({ client: worker.client, taskQueue: worker.config.taskQueue });
    await eventually('one idle pool container', async () => ((await store.warmPools()).pools[0]?.ready === 1 ? true : undefined));
    [a, b] = await Promise.all([
      worker.sandboxes.create({ id: 'cred-a', principal: 'agent-a', adapter: 'moto', services: ['s3'] }, { wait: 'ready' }),
      worker.sandboxes.create({ id: 'cred-b', principal: 'agent-b', adapter: 'moto', services: ['s3', 'sqs'] }, { wait: 'ready' }),
    ]);
  });

  after(async () => {
    await worker?.stop();
    for (const container of await broker.list({ [PLANE_LABEL]: plane })) await broker.remove(container.id, { force: true });
  });

  const configOf = (status: SandboxStatus): ClientConfig => {
    assert.ok(status.clientConfig !== null, `${status.id} has client settings`);
    return status.clientConfig;
  };
  const pooled = (id: string) => /warm pool/.test(worker.store.sandboxes.audit(id).find((op) => op.action === 'ready')?.reason ?? '');

  test('each sandbox has credentials of its own, not the fake ones, and at least one came from the warm pool', () => {
    const fake = clientConfigFor('moto', 'http://x', 'us-east-1').credentials;
    assert.notEqual(configOf(a).credentials.accessKeyId, fake.accessKeyId);
    assert.notEqual(configOf(a).credentials.accessKeyId, configOf(b).credentials.accessKeyId);
    assert.notEqual(configOf(a).credentials.secretAccessKey, configOf(b).credentials.secretAccessKey);
    // Usually one claims the pool's container and the other starts cold; a fast refill can serve both.
    assert.ok(pooled('cred-a') || pooled('cred-b'), 'one claimed the pool container');
  });

  test("A's credentials: s3 works; sqs CreateQueue is AccessDenied", async () => {
    const s3 = new S3Client(configOf(a));
    try {
      await s3.send(new CreateBucketCommand({ Bucket: 'bucket-of-a' }));
      assert.deepEqual(
        (await s3.send(new ListBucketsCommand({}))).Buckets?.map((bucket) => bucket.Name),
        ['bucket-of-a'],
      );
    } finally {
      s3.destroy();
    }
    assert.equal(await sqsRefusal(configOf(a), new CreateQueueCommand({ QueueName: 'not-granted' })), 'AccessDenied');
  });

  test("B's credentials on B: sqs and s3 work", async () => {
    const sqs = new SQSClient(configOf(b));
    try {
      const created = await sqs.send(new CreateQueueCommand({ QueueName: 'queue-of-b' }));
      assert.match(created.QueueUrl ?? '', /queue-of-b$/);
    } finally {
      sqs.destroy();
    }
    const s3 = new S3Client(configOf(b));
    try {
      assert.deepEqual((await s3.send(new ListBucketsCommand({}))).Buckets ?? [], [], "B does not see A's bucket");
    } finally {
      s3.destroy();
    }
  });

  test("A's credentials on B's endpoint (and B's on A's) are unknown there: InvalidAccessKeyId (s3), InvalidClientTokenId (sqs)", async () => {
    const aOnB = { ...configOf(a), endpoint: configOf(b).endpoint };
    const bOnA = { ...configOf(b), endpoint: configOf(a).endpoint };
    assert.equal(await s3Refusal(aOnB), 'InvalidAccessKeyId');
    assert.equal(await sqsRefusal(aOnB, new ListQueuesCommand({})), 'InvalidClientTokenId');
    assert.equal(await s3Refusal(bOnA), 'InvalidAccessKeyId');
  });

  const awsCli = findAwsCli();
  test(
    "the AWS CLI, as an agent runs it: sqs create-queue on the s3-only sandbox is AccessDenied; A's keys on B are refused",
    { skip: awsCli === undefined && 'needs the AWS CLI (aws) on PATH' },
    async () => {
      const aws = awsCli as string;
      assert.equal(await awsCliRefusal(aws, configOf(a), ['sqs', 'create-queue', '--queue-name', 'cli-not-granted']), 'AccessDenied');
      const aOnB = { ...configOf(a), endpoint: configOf(b).endpoint };
      assert.equal(await awsCliRefusal(aws, aOnB, ['s3api', 'list-buckets']), 'InvalidAccessKeyId');
      assert.equal(await awsCliRefusal(aws, aOnB, ['sqs', 'list-queues']), 'InvalidClientTokenId');
      assert.equal(await awsCliRefusal(aws, configOf(b), ['sqs', 'list-queues']), 'accepted', "B's own keys work through the same CLI");
    },
  );

  test('the old fake credentials, a wrong secret and unsigned requests are refused', async () => {
    const fake = clientConfigFor('moto', configOf(a).endpoint, 'us-east-1');
    assert.equal(await s3Refusal(fake), 'InvalidAccessKeyId');
    const wrongSecret = { ...configOf(a), credentials: { ...configOf(a).credentials, secretAccessKey: 'not-the-secret' } };
    assert.equal(await s3Refusal(wrongSecret), 'SignatureDoesNotMatch');
    const unsigned = await fetch(`${configOf(a).endpoint}/unsigned-bucket`, { method: 'PUT' });
    await unsigned.arrayBuffer();
    assert.notEqual(unsigned.status, 200, 'an unsigned create is refused');
    const s3 = new S3Client(configOf(a));
    try {
      assert.deepEqual(
        (await s3.send(new ListBucketsCommand({}))).Buckets?.map((bucket) => bucket.Name),
        ['bucket-of-a'],
        'no unsigned bucket',
      );
    } finally {
      s3.destroy();
    }
  });

  test("moto's own API is closed to whoever reaches the port: no reset-auth, no reset, no data.json (which lists secrets)", async () => {
    const { endpoint } = configOf(a);
    const tries = [
      fetch(`${endpoint}/moto-api/reset-auth`, { method: 'POST', body: 'inf', headers: { 'content-type': 'text/plain' } }),
      fetch(`${endpoint}/moto-api/reset`, { method: 'POST' }),
      fetch(`${endpoint}/moto-api/data.json`),
      fetch(`${endpoint}/MOTO-API/data.json`),
      fetch(`${endpoint}/moto%2Dapi/data.json`),
      fetch(`${endpoint}/_sandboxplane/guess/moto-api/data.json`),
    ];
    for (const answer of await Promise.all(tries)) {
      const text = await answer.text();
      assert.equal(answer.status, 403, `${answer.url}: ${text}`);
      assert.ok(!text.includes(configOf(a).credentials.secretAccessKey));
    }
    assert.equal(await sqsRefusal(configOf(a), new CreateQueueCommand({ QueueName: 'still-not-granted' })), 'AccessDenied', 'authentication is still on');
    const s3 = new S3Client(configOf(a));
    try {
      assert.deepEqual(
        (await s3.send(new ListBucketsCommand({}))).Buckets?.map((bucket) => bucket.Name),
        ['bucket-of-a'],
        'nothing was reset',
      );
    } finally {
      s3.destroy();
    }
  });

  test('resource listing and the health watch still work with auth on and the API closed', async () => {
    assert.deepEqual(
      (await worker.sandboxes.resources('cred-a')).map((ref) => `${ref.service}/${ref.id}`),
      ['s3/bucket-of-a'],
    );
    assert.deepEqual((await worker.sandboxes.resources('cred-b')).map((ref) => `${ref.service}/${ref.id}`).sort(), ['sqs/queue-of-b']);
    const watched = await eventually('a health look at cred-a', async () => {
      const status = await worker.sandboxes.status('cred-a');
      return status.health.checkedAt !== null ? status : undefined;
    });
    assert.equal(watched.health.status, 'ok', 'the health probe reaches moto through the operator endpoint');
    assert.equal(watched.health.restarts, 0);
  });

  test('the ready audit row names the access key id; no secret is in the audit trail, the SQLite file or the logs', () => {
    for (const status of [a, b]) {
      const { accessKeyId, secretAccessKey } = configOf(status).credentials;
      const ready = worker.store.sandboxes.audit(status.id).find((op) => op.action === 'ready');
      assert.equal(ready?.summary.accessKeyId, accessKeyId);
      assert.ok(!JSON.stringify(worker.store.sandboxes.audit(status.id)).includes(secretAccessKey), `${status.id}'s audit rows hold its secret`);
    }
    const database = Buffer.concat([worker.config.storePath, `${worker.config.storePath}-wal`].filter((file) => fs.existsSync(file)).map((file) => fs.readFileSync(file))).toString('latin1');
    const logs = logLines.join('\n');
    assert.ok(database.includes('cred-a') && logs.includes('cred-a'), 'the projection and the logs did record the sandboxes');
    for (const status of [a, b]) {
      const { secretAccessKey } = configOf(status).credentials;
      assert.ok(!database.includes(secretAccessKey), `the SQLite file holds ${status.id}'s secret`);
      assert.ok(!logs.includes(secretAccessKey), `the logs hold ${status.id}'s secret`);
    }
  });

  test('the raw history (temporal workflow show) holds the secret only encrypted, by the payload codec', async () => {
    const { stdout } = await promisify(execFile)(
      locateTemporalCli(process.env.SANDBOXPLANE_TEMPORAL_CLI),
      ['workflow', 'show', '--workflow-id', a.workflowId, '--address', worker.config.temporalAddress, '--namespace', worker.config.temporalNamespace, '--output', 'json'],
      { maxBuffer: 64 * 1024 * 1024 },
    );
    // Payload bytes are base64 in the JSON: every string is read as itself and as base64.
    const texts: string[] = [];
    const walk = (value: unknown): void => {
      if (typeof value === 'string') texts.push(value, Buffer.from(value, 'base64').toString('latin1'));
      else if (value !== null && typeof value === 'object') Object.values(value).forEach(walk);
    };
    walk(JSON.parse(stdout));
    assert.ok(texts.includes('binary/encrypted'), 'payloads are encrypted');
    assert.ok(
      texts.some((text) => text.includes(a.id)),
      'the reading works: the sandbox id is in clear in the search attributes or ids',
    );
    const { accessKeyId, secretAccessKey } = configOf(a).credentials;
    assert.ok(!texts.some((text) => text.includes(secretAccessKey)), 'the raw history holds the secret');
    assert.ok(!texts.some((text) => text.includes(accessKeyId)), 'the raw history holds the key id');
  });

  test('destroyed: the credentials stop working with the container', async () => {
    const endpoint = configOf(a).endpoint;
    await Promise.all([worker.sandboxes.destroy('cred-a'), worker.sandboxes.destroy('cred-b')]);
    const status = await worker.sandboxes.status('cred-a');
    assert.equal(status.clientConfig, null);
    assert.notEqual(await s3Refusal({ ...configOf(a), endpoint }), 'accepted');
  });
});
