/**
 * Snapshots (issue 27, DESIGN §15) on a real dev server, a real engine and real moto,
 * through the CLI, checked with the AWS CLI against each sandbox's endpoint and its own
 * credentials: a bucket with an object and a queue survive delete-then-restore with the
 * same content; a fork has them, with credentials of its own (the source's are refused
 * there); a fork's own snapshot restores with its credentials intact; another principal
 * can neither list, fork nor restore a snapshot; a sandbox lacking one of the snapshot's
 * services is refused it; and pause removes the container and frees its host's place,
 * while resume brings the same resources back under the same key. A pause under load loses
 * no acknowledged request: from its capture until its container goes only the plane is
 * served, once the requests already admitted are.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import type { ClientConfig } from '../src/domain/client-config';
import { PLANE_LABEL } from '../src/domain/docker-labels';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import type { SnapshotSummary } from '../src/domain/snapshots';
import { DockerContainerBroker } from '../src/docker';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { mcpServerTransport } from './helpers/mcp-transport';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { CreateBucketCommand, paginateListObjectsV2, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { awsCliEnv } from './helpers/aws-cli';
import { runCli } from './harness/cli';
import { cliFailure, cliOutput } from './helpers/cli-json';
import { createTestNamespace } from './helpers/test-namespace';
import { testTemporalAddress } from './harness/test-temporal';
import { startTestWorker, type TestWorker } from './harness/test-worker';
import { eventually } from './harness/eventually';
import { assertReplays, fetchHistories } from './helpers/replay-histories';

const motoImage = process.env.SANDBOXPLANE_MOTO_IMAGE;
const skip = motoImage === undefined && 'needs the moto image and the Docker engine (SANDBOXPLANE_MOTO_IMAGE, set by the test runner)';

const run = promisify(execFile);

/** `aws <args>` with a sandbox's endpoint and the given key. */
async function aws(config: ClientConfig, args: string[]): Promise<string> {
  const { stdout } = await run('aws', ['--endpoint-url', config.endpoint, '--output', 'json', ...args], { env: awsCliEnv(config), timeout: 60_000 });
  return stdout;
}

/** The AWS CLI's refusal of a call, as its error text. */
async function awsRefusal(config: ClientConfig, args: string[]): Promise<string> {
  try {
    await aws(config, args);
  } catch (err) {
    return String((err as { stderr?: string }).stderr);
  }
  assert.fail(`aws ${args.join(' ')} succeeded`);
}

describe('snapshots of moto sandboxes (real dev server, engine, moto and AWS CLI)', { skip }, () => {
  const broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-snapshots-'));
  let worker: TestWorker;
  let plane: string;
  let source: ClientConfig;
  let snapshot: SnapshotSummary;
  let fork: SandboxStatus;
  let busy: ClientConfig;
  const asAgent = (...args: string[]) => runCli([...args, '--json'], { ...worker.env, SANDBOXPLANE_PRINCIPAL: 'agent-snap' });
  const asOther = (...args: string[]) => runCli([...args, '--json'], { ...worker.env, SANDBOXPLANE_PRINCIPAL: 'agent-other' });

  /** The bucket's object and the queue's message, as the AWS CLI reads them with `config`. */
  async function contents(config: ClientConfig): Promise<{ object: string; queueUrl: string; message: string | undefined }> {
    const target = path.join(dir, `read-${Date.now()}-${Math.random()}`);
    await aws(config, ['s3api', 'get-object', '--bucket', 'kept-bucket', '--key', 'notes/hello.txt', target]);
    const queueUrl = JSON.parse(await aws(config, ['sqs', 'get-queue-url', '--queue-name', 'kept-queue'])).QueueUrl as string;
    const received = JSON.parse((await aws(config, ['sqs', 'receive-message', '--queue-url', queueUrl, '--visibility-timeout', '0'])) || '{}');
    return { object: fs.readFileSync(target, 'utf8'), queueUrl, message: received.Messages?.[0]?.Body };
  }

  before(async () => {
    const address = await testTemporalAddress();
    const namespace = await createTestNamespace(address, 'snapshots');
    worker = await startTestWorker(address, { env: { TEMPORAL_NAMESPACE: namespace, SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1', SANDBOXPLANE_MOTO_IMAGE: motoImage as string } });
    plane = worker.plane.planeId;
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
    const created = cliOutput<SandboxStatus>(await asAgent('create', '--id', 'snap-source', '--adapter', 'moto', '--services', 's3,sqs', '--wait'));
    assert.ok(created.clientConfig !== null);
    source = created.clientConfig;
    const body = path.join(dir, 'hello.txt');
    fs.writeFileSync(body, 'kept across a restore\n');
    await aws(source, ['s3', 'mb', 's3://kept-bucket']);
    await aws(source, ['s3api', 'put-object', '--bucket', 'kept-bucket', '--key', 'notes/hello.txt', '--body', body]);
    const queueUrl = JSON.parse(await aws(source, ['sqs', 'create-queue', '--queue-name', 'kept-queue'])).QueueUrl as string;
    await aws(source, ['sqs', 'send-message', '--queue-url', queueUrl, '--message-body', 'a message to keep']);
  });

  after(async () => {
    await worker?.stop();
    for (const container of await broker.list({ [PLANE_LABEL]: plane })) await broker.remove(container.id, { force: true });
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a snapshot is kept, owned by its principal, and listed with its size and time', async () => {
    snapshot = cliOutput<SnapshotSummary>(await asAgent('snapshot', 'snap-source'));
    assert.match(snapshot.snapshotId, /^snap-[0-9a-f]{16}$/);
    assert.equal(snapshot.sandboxId, 'snap-source');
    assert.equal(snapshot.adapter, 'moto');
    assert.ok(snapshot.bytes > 0 && snapshot.bytes < 64 * 1024, `${snapshot.bytes} bytes`);
    assert.ok(Math.abs(Date.parse(snapshot.createdAt) - Date.now()) < 60_000);
    const { snapshots } = cliOutput<{ snapshots: SnapshotSummary[] }>(await asAgent('snapshots', '--sandbox', 'snap-source'));
    assert.deepEqual(snapshots, [snapshot]);
    assert.deepEqual(cliOutput<{ snapshots: SnapshotSummary[] }>(await asOther('snapshots')).snapshots, [], "another principal's listing does not show it");
    const trail = worker.store.sandboxes.audit('snap-source').filter((row) => row.action === 'snapshot_taken');
    assert.equal(trail.length, 1);
    assert.equal(trail[0]?.summary.snapshotId, snapshot.snapshotId);
  });

  test('a bucket with an object and a queue with a message survive delete-then-restore, and the key stays the same', async () => {
    const before = await contents(source);
    assert.deepEqual(before, { object: 'kept across a restore\n', queueUrl: before.queueUrl, message: 'a message to keep' });
    await aws(source, ['s3', 'rb', 's3://kept-bucket', '--force']);
    await aws(source, ['sqs', 'delete-queue', '--queue-url', before.queueUrl]);
    assert.match(await awsRefusal(source, ['s3api', 'head-bucket', '--bucket', 'kept-bucket']), /404|Not Found/);

    const restored = cliOutput<SandboxStatus>(await asAgent('restore', 'snap-source', '--snapshot', snapshot.snapshotId));
    assert.equal(restored.state, 'READY');
    assert.deepEqual(restored.clientConfig?.credentials, source.credentials, 'a restore into its own sandbox keeps the credentials');
    assert.match(restored.waitingFor, new RegExp(`Restored from snapshot ${snapshot.snapshotId}`));
    assert.deepEqual(await contents(source), before, 'the same object, the same queue URL, the same message');
    assert.ok(worker.store.sandboxes.audit('snap-source').some((row) => row.action === 'restored' && row.summary.snapshotId === snapshot.snapshotId));
  });

  test('a fork has the same resources in its own container, with its own key; the source key is refused there', async () => {
    fork = cliOutput<SandboxStatus>(await asAgent('create', '--id', 'snap-fork', '--from-snapshot', snapshot.snapshotId, '--wait'));
    assert.equal(fork.state, 'READY');
    assert.equal(fork.adapter, 'moto', 'the adapter defaults to the snapshot sandbox');
    assert.deepEqual(fork.services, ['s3', 'sqs'], 'the services default to the snapshot sandbox');
    const forked = fork.clientConfig;
    assert.ok(forked !== null);
    assert.notEqual(forked.endpoint, source.endpoint);
    assert.notEqual(forked.credentials.accessKeyId, source.credentials.accessKeyId);
    const seen = await contents(forked);
    assert.equal(seen.object, 'kept across a restore\n');
    assert.equal(seen.message, 'a message to keep');
    const onFork = { ...forked, credentials: source.credentials };
    assert.match(await awsRefusal(onFork, ['s3api', 'list-buckets']), /InvalidAccessKeyId|AccessDenied|403/);
  });

  test("a fork's own snapshot restores with the fork's key intact", async () => {
    const forked = fork.clientConfig as ClientConfig;
    const own = cliOutput<SnapshotSummary>(await asAgent('snapshot', 'snap-fork'));
    await aws(forked, ['s3', 'rb', 's3://kept-bucket', '--force']);
    const restored = cliOutput<SandboxStatus>(await asAgent('restore', 'snap-fork', '--snapshot', own.snapshotId));
    assert.deepEqual(restored.clientConfig?.credentials, forked.credentials);
    assert.equal((await contents(forked)).object, 'kept across a restore\n');
  });

  test('a fork keeps its state and its own key through two rounds of pause and resume (each replays its first replay)', async () => {
    const forked = fork.clientConfig as ClientConfig;
    let config = forked;
    for (let round = 1; round <= 2; round += 1) {
      assert.equal(cliOutput<SandboxStatus>(await asAgent('pause', 'snap-fork')).state, 'PAUSED');
      const resumed = cliOutput<SandboxStatus>(await asAgent('resume', 'snap-fork'));
      assert.equal(resumed.state, 'READY');
      config = resumed.clientConfig as ClientConfig;
      assert.deepEqual(config.credentials, forked.credentials, `round ${round}: the fork's own key`);
      assert.equal((await contents(config)).object, 'kept across a restore\n', `round ${round}: the fork's state`);
    }
    fork = { ...fork, clientConfig: config };
  });

  test('another principal can neither fork nor restore the snapshot: NOT_FOUND, nothing made', async () => {
    const refused = cliFailure(await asOther('create', '--id', 'snap-stolen', '--adapter', 'moto', '--services', 's3,sqs', '--from-snapshot', snapshot.snapshotId, '--wait'), 4, 'NOT_FOUND');
    assert.match(refused.message, /agent-other holds no snapshot/);
    assert.deepEqual(await broker.list({ [PLANE_LABEL]: plane, 'io.sandboxplane.sandbox-id': 'snap-stolen' }), []);
    const other = cliOutput<SandboxStatus>(await asOther('create', '--id', 'snap-other', '--adapter', 'moto', '--services', 's3,sqs', '--wait'));
    assert.equal(other.state, 'READY');
    cliFailure(await asOther('restore', 'snap-other', '--snapshot', snapshot.snapshotId), 4, 'NOT_FOUND');
    cliFailure(await asOther('restore', 'snap-source', '--snapshot', snapshot.snapshotId), 4, 'NOT_FOUND');
  });

  test("the MCP tools snapshot and fork as the server's principal; another principal's fork is NOT_FOUND", async () => {
    const connect = async (principal: string) => {
      const client = new McpClient({ name: `snapshot-test-${principal}`, version: '1.0.0' });
      await client.connect(mcpServerTransport(worker.env, principal, 'warn'));
      return client;
    };
    const [own, other] = await Promise.all([connect('agent-snap'), connect('agent-other')]);
    try {
      const call = async (client: McpClient, name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as CallToolResult;
      const taken = (await call(own, 'snapshot_sandbox', { id: 'snap-source' })).structuredContent as unknown as SnapshotSummary;
      assert.match(taken.snapshotId, /^snap-/);
      const forked = (await call(own, 'fork_sandbox', { snapshotId: taken.snapshotId, id: 'snap-mcp-fork' })).structuredContent as unknown as SandboxStatus;
      assert.equal(forked.state, 'READY');
      assert.equal((await contents(forked.clientConfig as ClientConfig)).object, 'kept across a restore\n');
      const refused = await call(other, 'fork_sandbox', { snapshotId: taken.snapshotId });
      assert.equal(refused.isError, true);
      assert.equal((refused.structuredContent as { error: { code: string } }).error.code, 'NOT_FOUND');
      const bad = await call(own, 'snapshot_sandbox', { id: 'snap-source', principal: 'agent-other' });
      assert.equal((bad.structuredContent as { error: { code: string } }).error.code, 'INVALID_INPUT', 'a principal argument is refused as unknown');
      await worker.sandboxes.destroy('snap-mcp-fork');
    } finally {
      await Promise.all([own.close(), other.close()]);
    }
  });

  test("a sandbox without one of the snapshot's services is refused it, and bad input is refused by name", async () => {
    cliOutput<SandboxStatus>(await asAgent('create', '--id', 'snap-narrow', '--adapter', 'moto', '--services', 's3', '--wait'));
    const narrow = cliFailure(await asAgent('restore', 'snap-narrow', '--snapshot', snapshot.snapshotId), 3, 'SERVICE_NOT_ALLOWED');
    assert.match(narrow.message, /holds state of sqs/);
    cliFailure(await asAgent('create', '--services', 's3', '--adapter', 'moto', '--from-snapshot', snapshot.snapshotId), 3, 'SERVICE_NOT_ALLOWED');
    cliFailure(await asAgent('create', '--services', 's3,sqs', '--adapter', 'memory', '--from-snapshot', snapshot.snapshotId), 2, 'INVALID_INPUT');
    cliFailure(await asAgent('restore', 'snap-source', '--snapshot', 'not-a-snapshot'), 2, 'INVALID_INPUT');
    cliFailure(await asAgent('restore', 'snap-source'), 2, 'INVALID_INPUT');
    cliFailure(await asAgent('create', '--adapter', 'moto'), 2, 'INVALID_INPUT');
  });

  test("pause removes the container and frees the host's place; the TTL runs on; resume brings the same resources back under the same key", async () => {
    const placed = () => worker.store.hosts.list().reduce((sum, host) => sum + host.liveSandboxes, 0);
    const containers = () => broker.list({ [PLANE_LABEL]: plane, 'io.sandboxplane.sandbox-id': 'snap-source' });
    const before = await contents(source);
    const placedBefore = placed();
    assert.equal((await containers()).length, 1);

    const pausedStatus = cliOutput<SandboxStatus>(await asAgent('pause', 'snap-source'));
    assert.equal(pausedStatus.state, 'PAUSED');
    assert.equal(pausedStatus.endpoint, null);
    assert.equal(pausedStatus.clientConfig, null);
    assert.deepEqual(pausedStatus.runtimeIds, []);
    assert.equal(pausedStatus.host, null);
    assert.match(pausedStatus.waitingFor, /Paused at .*snapshot snap-[0-9a-f]{16}/);
    assert.deepEqual(await containers(), [], 'the container is gone');
    assert.equal(placed(), placedBefore - 1, "the host's place is free");
    assert.equal(worker.store.sandboxes.state('snap-source'), 'PAUSED');

    const extended = cliOutput<SandboxStatus>(await asAgent('extend', 'snap-source', '--ttl', '10m'));
    assert.equal(extended.state, 'PAUSED');
    assert.ok(Date.parse(extended.expiresAt ?? '') > Date.parse(pausedStatus.expiresAt ?? ''), 'a paused sandbox can be extended');
    cliFailure(await asAgent('snapshot', 'snap-source'), 3, 'INVALID_STATE');
    cliFailure(await asAgent('pause', 'snap-source'), 3, 'INVALID_STATE');

    const resumed = cliOutput<SandboxStatus>(await asAgent('resume', 'snap-source'));
    assert.equal(resumed.state, 'READY');
    assert.equal(resumed.expiresAt, extended.expiresAt, 'the expiry is the one it had');
    assert.deepEqual(resumed.clientConfig?.credentials, source.credentials, 'the same key');
    assert.match(resumed.waitingFor, /Resumed from snapshot/);
    const shown = await runCli(['status', 'snap-source'], { ...worker.env, SANDBOXPLANE_PRINCIPAL: 'agent-snap' });
    assert.match(shown.stdout, /now +Ready at .* Resumed from snapshot snap-/, 'the CLI tells a person too');
    assert.equal((await containers()).length, 1);
    // The resumed sandbox answers where its status says now: the tests after this one use that.
    source = resumed.clientConfig as ClientConfig;
    const after = await contents(source);
    assert.equal(after.object, before.object);
    assert.equal(after.message, before.message);
    assert.equal(new URL(after.queueUrl).pathname, new URL(before.queueUrl).pathname);
    assert.deepEqual(
      worker.store.sandboxes
        .audit('snap-source')
        .map((row) => row.action)
        .filter((action) => ['paused', 'resuming', 'resumed'].includes(action)),
      ['paused', 'resuming', 'resumed'],
    );
    cliFailure(await asAgent('resume', 'snap-source'), 3, 'INVALID_STATE');
  });

  test('a paused sandbox that is destroyed ends DESTROYED with nothing to tear down, its snapshot kept', async () => {
    cliOutput<SandboxStatus>(await asAgent('pause', 'snap-narrow'));
    const destroyed = cliOutput<SandboxStatus>(await asAgent('destroy', 'snap-narrow'));
    assert.equal(destroyed.state, 'DESTROYED');
    assert.match(destroyed.waitingFor, /Destroyed while paused/);
    const kept = cliOutput<{ snapshots: SnapshotSummary[] }>(await asAgent('snapshots', '--sandbox', 'snap-narrow')).snapshots;
    assert.equal(kept.length, 1, 'the pause snapshot outlives the sandbox');
  });

  test('a pause under load loses no acknowledged PUT: from its capture until its container goes only the plane is served', async () => {
    busy = cliOutput<SandboxStatus>(await asAgent('create', '--id', 'snap-busy', '--adapter', 'moto', '--services', 's3', '--wait')).clientConfig as ClientConfig;
    const s3 = new S3Client({ ...busy, maxAttempts: 1 });
    await s3.send(new CreateBucketCommand({ Bucket: 'busy-bucket' }));
    const acknowledged: string[] = [];
    let refused = 0;
    let pausing = true;
    // Each lane PUTs distinct keys one after another, as an agent busy in its sandbox would, until the pause has answered.
    const lane = async (name: string) => {
      for (let i = 0; pausing; i += 1) {
        const Key = `${name}/put-${i}`;
        try {
          await s3.send(new PutObjectCommand({ Bucket: 'busy-bucket', Key, Body: Key }));
          acknowledged.push(Key);
        } catch {
          // 503 while the emulator is quiet, refused connections once its container is gone: not acknowledged, so not owed.
          refused += 1;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
    };
    const lanes = ['a', 'b', 'c'].map(lane);
    await eventually('the lanes to have PUTs acknowledged', () => (acknowledged.length >= 10 ? true : undefined), 30_000);
    let paused: SandboxStatus;
    try {
      paused = cliOutput<SandboxStatus>(await asAgent('pause', 'snap-busy'));
    } finally {
      pausing = false;
      await Promise.all(lanes);
    }
    s3.destroy();
    assert.equal(paused.state, 'PAUSED');
    assert.ok(refused > 0, 'some PUTs came while the pause held the emulator quiet or after its container went');

    const resumed = cliOutput<SandboxStatus>(await asAgent('resume', 'snap-busy'));
    assert.equal(resumed.state, 'READY');
    busy = resumed.clientConfig as ClientConfig;
    const reader = new S3Client({ ...busy, maxAttempts: 1 });
    const kept = new Set<string>();
    for await (const page of paginateListObjectsV2({ client: reader }, { Bucket: 'busy-bucket' })) for (const object of page.Contents ?? []) kept.add(object.Key ?? '');
    reader.destroy();
    const lost = acknowledged.filter((key) => !kept.has(key));
    assert.deepEqual(lost, [], `${lost.length} of ${acknowledged.length} acknowledged PUTs are not in the resumed sandbox`);
  });

  test('a quiet starts once the requests already admitted are served (they are in what a capture reads next); new ones get 503 meanwhile', async () => {
    const [container] = await broker.list({ [PLANE_LABEL]: plane, 'io.sandboxplane.sandbox-id': 'snap-busy' });
    const token = container?.labels['io.sandboxplane.operator-token'];
    assert.ok(token !== undefined);
    const quiesce = (body: string) => fetch(`${busy.endpoint}/_sandboxplane/sandboxplane/quiesce`, { method: 'POST', body, headers: { 'x-sandboxplane-operator': token } });
    const endpoint = new URL(busy.endpoint);
    // A PUT whose body comes in two halves: the emulator has it in hand until the second arrives.
    const socket = net.connect(Number(endpoint.port), endpoint.hostname);
    const answered = new Promise<string>((resolve, reject) => {
      let answer = '';
      socket.on('data', (chunk) => (answer += chunk.toString('latin1')));
      socket.on('end', () => resolve(answer));
      socket.on('error', reject);
    });
    socket.write(`PUT /busy-bucket/slow.txt HTTP/1.1\r\nHost: ${endpoint.host}\r\nContent-Length: 10\r\nConnection: close\r\n\r\nfirst`);
    await new Promise((resolve) => setTimeout(resolve, 500));
    let settled = false;
    const quiet = quiesce('30 lease-drain').then((response) => {
      settled = true;
      return response.status;
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 1500));
      assert.equal(settled, false, 'the quiet waits for the PUT in hand');
      assert.equal((await fetch(`${busy.endpoint}/busy-bucket`)).status, 503, 'a request that comes meanwhile is refused');
      socket.end('-last');
      assert.equal(await quiet, 200, 'and is taken once the PUT is served');
      assert.match(await answered, /^HTTP\/1\.1 \d{3} /, 'the PUT was answered');
      assert.equal((await fetch(`${busy.endpoint}/busy-bucket`)).status, 503);
    } finally {
      socket.destroy();
      assert.equal((await quiesce('0 lease-drain')).status, 200);
    }
    assert.notEqual((await fetch(`${busy.endpoint}/busy-bucket`)).status, 503, 'served again once the quiet ended');
    await worker.sandboxes.destroy('snap-busy');
  });

  test("while a restore runs only the plane is served, under its lease; a restore of a fork's fork state keeps its key", async () => {
    const [container] = await broker.list({ [PLANE_LABEL]: plane, 'io.sandboxplane.sandbox-id': 'snap-source' });
    const token = container?.labels['io.sandboxplane.operator-token'];
    assert.ok(token !== undefined);
    // The token goes in the header, never in the path: a URL that holds it is refused like any other.
    const quiesce = (body: string, headers: Record<string, string> = { 'x-sandboxplane-operator': token }, at = `${source.endpoint}/_sandboxplane`) =>
      fetch(`${at}/sandboxplane/quiesce`, { method: 'POST', body, headers });
    assert.equal((await quiesce('30 lease-a')).status, 200);
    try {
      assert.match(await awsRefusal(source, ['s3api', 'list-buckets']), /503|Service Unavailable|being restored/);
      assert.equal((await quiesce('0 lease-a', {})).status, 403, 'only the plane ends it');
      assert.equal((await quiesce('0 lease-a', {}, `${source.endpoint}/_sandboxplane/${token}`)).status, 403, 'the token in a path is no key');
      assert.equal((await quiesce('0 lease-a', { 'x-sandboxplane-operator': 'guess' })).status, 403);
      assert.equal((await quiesce('0 lease-b')).status, 200);
      assert.match(await awsRefusal(source, ['s3api', 'list-buckets']), /503|Service Unavailable|being restored/, 'another lease (a restore given up on) does not end it');
    } finally {
      assert.equal((await quiesce('0 lease-a')).status, 200);
    }
    assert.match(await aws(source, ['s3api', 'list-buckets']), /kept-bucket/);
  });

  test("an agent cannot mark its calls as the plane's: a refused call stays refused in a replay", async () => {
    const narrow = cliOutput<SandboxStatus>(await asAgent('create', '--id', 'snap-marked', '--adapter', 'moto', '--services', 's3', '--wait')).clientConfig as ClientConfig;
    // A well-signed sqs call of an s3-only key, carrying the marker the guard gives the plane's own calls.
    const sqs = new SQSClient({ ...narrow, maxAttempts: 1 });
    sqs.middlewareStack.add(
      (next) => async (args) => {
        (args.request as { headers: Record<string, string> }).headers['x-sandboxplane-recorded-as'] = 'operator';
        return next(args);
      },
      { step: 'build' },
    );
    // moto answers AccessDenied in IAM's XML, which the JSON protocol's client cannot read: the status says it.
    await assert.rejects(sqs.send(new CreateQueueCommand({ QueueName: 'forged' })), (err: { $response?: { statusCode?: number } }) => err.$response?.statusCode === 403);
    sqs.destroy();
    const [marked] = await broker.list({ [PLANE_LABEL]: plane, 'io.sandboxplane.sandbox-id': 'snap-marked' });
    const token = marked?.labels['io.sandboxplane.operator-token'] as string;
    const kept = cliOutput<SnapshotSummary>(await asAgent('snapshot', 'snap-marked'));
    const restored = cliOutput<SandboxStatus>(await asAgent('restore', 'snap-marked', '--snapshot', kept.snapshotId));
    assert.equal(restored.state, 'READY');
    const queues = await fetch(narrow.endpoint, {
      method: 'POST',
      headers: {
        'x-sandboxplane-operator': token,
        'content-type': 'application/x-www-form-urlencoded',
        authorization: 'AWS4-HMAC-SHA256 Credential=test-operator/20261205/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=none',
      },
      body: 'Action=ListQueues',
    });
    assert.equal(queues.status, 200);
    assert.doesNotMatch(await queues.text(), /forged/, "the replay did not lend the call the plane's rights");
    await worker.sandboxes.destroy('snap-marked');
  });

  test('past what one recording holds the sandbox goes on serving and a snapshot is SNAPSHOT_TOO_LARGE', async () => {
    const big = cliOutput<SandboxStatus>(await asAgent('create', '--id', 'snap-big', '--adapter', 'moto', '--services', 's3', '--wait')).clientConfig as ClientConfig;
    const file = path.join(dir, 'big.bin');
    fs.writeFileSync(file, Buffer.alloc(13 * 1024 * 1024, 7));
    await aws(big, ['s3', 'mb', 's3://big-bucket']);
    await aws(big, ['s3api', 'put-object', '--bucket', 'big-bucket', '--key', 'big.bin', '--body', file]);
    const head = JSON.parse(await aws(big, ['s3api', 'head-object', '--bucket', 'big-bucket', '--key', 'big.bin']));
    assert.equal(head.ContentLength, 13 * 1024 * 1024, 'the upload itself was served');
    const refused = cliFailure(await asAgent('snapshot', 'snap-big'), 3, 'SNAPSHOT_TOO_LARGE');
    assert.match(refused.message, /24 MiB/);
    assert.doesNotMatch(refused.message, /_sandboxplane\/[0-9a-f]/, 'no operator token in an error');
    cliFailure(await asAgent('pause', 'snap-big'), 3, 'SNAPSHOT_TOO_LARGE');
    assert.equal(worker.store.sandboxes.state('snap-big'), 'READY');
    await aws(big, ['s3api', 'put-object', '--bucket', 'big-bucket', '--key', 'after-the-pause.txt', '--body', path.join(dir, 'hello.txt')]);
    await worker.sandboxes.destroy('snap-big');
  });

  test('the recording counts what it writes: a body JSON escapes sixfold passes the limit, though its length is well under it', async () => {
    const escaped = cliOutput<SandboxStatus>(await asAgent('create', '--id', 'snap-escaped', '--adapter', 'moto', '--services', 's3', '--wait')).clientConfig as ClientConfig;
    const file = path.join(dir, 'controls.txt');
    // 5 MiB of U+0001: valid UTF-8, so recorded as JSON text, where each byte is six (\u0001).
    fs.writeFileSync(file, Buffer.alloc(5 * 1024 * 1024, 1));
    await aws(escaped, ['s3', 'mb', 's3://escaped-bucket']);
    await aws(escaped, ['s3api', 'put-object', '--bucket', 'escaped-bucket', '--key', 'controls.txt', '--body', file]);
    const head = JSON.parse(await aws(escaped, ['s3api', 'head-object', '--bucket', 'escaped-bucket', '--key', 'controls.txt']));
    assert.equal(head.ContentLength, 5 * 1024 * 1024, 'the upload itself was served');
    cliFailure(await asAgent('snapshot', 'snap-escaped'), 3, 'SNAPSHOT_TOO_LARGE');
    await worker.sandboxes.destroy('snap-escaped');
  });

  test('a header a replay could not send again is refused 400 when it comes, so the recording still restores', async () => {
    const odd = cliOutput<SandboxStatus>(await asAgent('create', '--id', 'snap-headers', '--adapter', 'moto', '--services', 's3', '--wait')).clientConfig as ClientConfig;
    await aws(odd, ['s3', 'mb', 's3://header-bucket']);
    const endpoint = new URL(odd.endpoint);
    // Node's own HTTP client refuses to send these, so they go over a bare socket, as any client could send them.
    const raw = (header: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect(Number(endpoint.port), endpoint.hostname);
        let answer = '';
        socket.on('data', (chunk) => (answer += chunk.toString('latin1')));
        socket.on('end', () => resolve(answer));
        socket.on('error', reject);
        socket.end(`GET /header-bucket HTTP/1.1\r\nHost: ${endpoint.host}\r\n${header}\r\nConnection: close\r\n\r\n`);
      });
    for (const header of ['X-A{b}: 1', 'X-Odd: a\u0001b']) {
      const answer = await raw(header);
      assert.match(answer, /^HTTP\/1\.1 400 /, `${header}: ${answer.slice(0, 200)}`);
      assert.match(answer, /could not be replayed from a snapshot/);
    }
    const kept = cliOutput<SnapshotSummary>(await asAgent('snapshot', 'snap-headers'));
    const restored = cliOutput<SandboxStatus>(await asAgent('restore', 'snap-headers', '--snapshot', kept.snapshotId));
    assert.equal(restored.state, 'READY');
    assert.match(await aws(odd, ['s3api', 'list-buckets']), /header-bucket/);
    await worker.sandboxes.destroy('snap-headers');
  });

  test("every lifecycle's history (snapshots, restores, a fork, a pause and a resume) replays on this build's workflow code", async () => {
    const ids = ['snap-source', 'snap-fork', 'snap-other', 'snap-narrow', 'snap-stolen', 'snap-marked', 'snap-big', 'snap-busy'].map((id) => `sandbox-${id}`);
    await assertReplays(await fetchHistories(worker.client, ids));
  });
});
