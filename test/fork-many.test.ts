/**
 * Fork many and trees (issue 41, DESIGN §15) on a real dev server, a real engine and real
 * moto, through the CLI, checked with the AWS CLI against each fork's endpoint and its own
 * key: five forks of one snapshot are READY with the source's object and queue, distinct
 * keys and endpoints, and a write in one is not in the others; `tree` lists the family for
 * its owner and is NOT_FOUND for another principal, who cannot fork the snapshot either;
 * past SANDBOXPLANE_FORK_MAX nothing is made; a fork's TTL is clamped to its root's, by a
 * fork and by an extension; `extend --tree` and `destroy --tree` act on the family and
 * leave no container; a deleted snapshot cannot be forked; a snapshot whose state is
 * 20 MiB (its content kept out of workflow history) forks with every byte.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import type { SandboxTree, ForkResult } from '../src/client/sandbox-family';
import type { ClientConfig } from '../src/domain/client-config';
import { workflowIdFor } from '../src/domain/contract-names';
import { PLANE_LABEL, SANDBOX_ID_LABEL } from '../src/domain/docker-labels';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import type { SnapshotSummary } from '../src/domain/snapshots';
import { DockerContainerBroker } from '../src/docker';
import { awsCliEnv } from './helpers/aws-cli';
import { runCli } from './harness/cli';
import { cliFailure, cliOutput } from './helpers/cli-json';
import { createTestNamespace } from './helpers/test-namespace';
import { testTemporalAddress } from './harness/test-temporal';
import { startTestWorker, type TestWorker } from './harness/test-worker';
import { assertReplays, fetchHistories } from './helpers/replay-histories';

const motoImage = process.env.SANDBOXPLANE_MOTO_IMAGE;
const skip = motoImage === undefined && 'needs the moto image and the Docker engine (SANDBOXPLANE_MOTO_IMAGE, set by the test runner)';

const run = promisify(execFile);

async function aws(config: ClientConfig, args: string[]): Promise<string> {
  const { stdout } = await run('aws', ['--endpoint-url', config.endpoint, '--output', 'json', ...args], { env: awsCliEnv(config), timeout: 120_000, maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

const statusesOf = (outcomes: ForkResult['sandboxes']): SandboxStatus[] =>
  outcomes.map((outcome) => {
    assert.ok('state' in outcome, `${outcome.id} did not start: ${JSON.stringify(outcome)}`);
    return outcome;
  });

describe('fork many and trees (real dev server, engine, moto and AWS CLI)', { skip }, () => {
  const broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-fork-many-'));
  let worker: TestWorker;
  let plane: string;
  let source: SandboxStatus;
  let snapshot: SnapshotSummary;
  let forks: SandboxStatus[];
  const asAgent = (...args: string[]) => runCli([...args, '--json'], { ...worker.env, SANDBOXPLANE_PRINCIPAL: 'agent-fork' });
  const asOther = (...args: string[]) => runCli([...args, '--json'], { ...worker.env, SANDBOXPLANE_PRINCIPAL: 'agent-other' });
  const sandboxRows = () => (worker.store.db.prepare('SELECT COUNT(*) AS n FROM sandboxes').get() as { n: number }).n;
  // A workflow started by mistake would have written its row within a second or two: wait that long before counting.
  const settledSandboxRows = async () => {
    await new Promise((resolve) => setTimeout(resolve, 2000));
    return sandboxRows();
  };
  const containersOf = async (ids: readonly string[]) => (await broker.list({ [PLANE_LABEL]: plane })).filter((container) => ids.includes(container.labels[SANDBOX_ID_LABEL] ?? ''));

  before(async () => {
    const address = await testTemporalAddress();
    const namespace = await createTestNamespace(address, 'fork-many');
    worker = await startTestWorker(address, {
      env: { TEMPORAL_NAMESPACE: namespace, SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1', SANDBOXPLANE_MOTO_IMAGE: motoImage as string, SANDBOXPLANE_FORK_MAX: '5' },
    });
    plane = worker.plane.planeId;
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
    source = cliOutput<SandboxStatus>(await asAgent('create', '--id', 'fork-root', '--adapter', 'moto', '--services', 's3,sqs', '--ttl', '20m', '--wait'));
    const config = source.clientConfig as ClientConfig;
    const body = path.join(dir, 'hello.txt');
    fs.writeFileSync(body, 'in every fork\n');
    await aws(config, ['s3', 'mb', 's3://family']);
    await aws(config, ['s3api', 'put-object', '--bucket', 'family', '--key', 'hello.txt', '--body', body]);
    await aws(config, ['sqs', 'create-queue', '--queue-name', 'family-queue']);
    snapshot = cliOutput<SnapshotSummary>(await asAgent('snapshot', 'fork-root'));
  });

  after(async () => {
    await worker?.stop();
    for (const container of await broker.list({ [PLANE_LABEL]: plane })) await broker.remove(container.id, { force: true });
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test("five forks at once are READY with the source's object and queue, each with its own key and endpoint; a write in one is not in the others", async () => {
    const forked = cliOutput<ForkResult>(await asAgent('fork', snapshot.snapshotId, '--count', '5', '--ttl', '1h'));
    forks = statusesOf(forked.sandboxes);
    assert.equal(forks.length, 5);
    assert.deepEqual(
      forks.map((fork) => fork.state),
      Array(5).fill('READY'),
    );
    const configs = forks.map((fork) => fork.clientConfig as ClientConfig);
    assert.equal(new Set(forks.map((fork) => fork.id)).size, 5);
    assert.equal(new Set([source.clientConfig?.endpoint, ...configs.map((config) => config.endpoint)]).size, 6, 'six endpoints');
    assert.equal(new Set([source.clientConfig?.credentials.accessKeyId, ...configs.map((config) => config.credentials.accessKeyId)]).size, 6, 'six keys');
    for (const fork of forks) {
      assert.equal(fork.parent, 'fork-root');
      assert.equal(fork.root, 'fork-root');
    }
    for (const config of configs) {
      const target = path.join(dir, `read-${config.credentials.accessKeyId}`);
      await aws(config, ['s3api', 'get-object', '--bucket', 'family', '--key', 'hello.txt', target]);
      assert.equal(fs.readFileSync(target, 'utf8'), 'in every fork\n');
      assert.match(await aws(config, ['sqs', 'get-queue-url', '--queue-name', 'family-queue']), /family-queue/);
    }
    const [first, ...others] = configs as [ClientConfig, ...ClientConfig[]];
    await aws(first, ['s3api', 'put-object', '--bucket', 'family', '--key', 'only-in-the-first.txt', '--body', path.join(dir, 'hello.txt')]);
    for (const config of others) {
      const listed = JSON.parse(await aws(config, ['s3api', 'list-objects-v2', '--bucket', 'family'])) as { Contents: { Key: string }[] };
      assert.deepEqual(
        listed.Contents.map((object) => object.Key),
        ['hello.txt'],
      );
    }
  });

  test("a fork's TTL is clamped to its root's, at the fork and at each extension; extend --tree moves the family", async () => {
    const rootExpiry = Date.parse(source.expiresAt as string);
    for (const fork of forks) assert.equal(Date.parse(fork.expiresAt as string), rootExpiry, `${fork.id} asked for 1h and got the root's expiry`);
    assert.match(forks[0]?.waitingFor ?? '', /A fork of fork-root: its expiry never passes its root's/);
    const extended = cliOutput<SandboxStatus>(await asAgent('extend', forks[0]?.id as string, '--ttl', '30m'));
    assert.equal(Date.parse(extended.expiresAt as string), rootExpiry, 'an extension of a fork stops at the root');
    assert.ok(
      worker.store.sandboxes.audit(forks[0]?.id as string).some((row) => row.action === 'extended' && row.summary.clampedToRoot === 'fork-root'),
      'the audit trail says it was clamped',
    );

    const tree = cliOutput<SandboxTree>(await asAgent('extend', forks[1]?.id as string, '--tree', '--ttl', '5m'));
    assert.equal(tree.root, 'fork-root');
    const moved = statusesOf(tree.sandboxes);
    assert.equal(moved[0]?.id, 'fork-root', 'the root first');
    const newRootExpiry = Date.parse(moved[0]?.expiresAt as string);
    assert.equal(newRootExpiry, rootExpiry + 5 * 60_000);
    for (const fork of moved.slice(1)) assert.equal(Date.parse(fork.expiresAt as string), newRootExpiry, `${fork.id} follows its root`);
  });

  test('tree lists the family for its owner; to another principal it is NOT_FOUND, and so is forking the snapshot', async () => {
    const tree = cliOutput<SandboxTree>(await asAgent('tree', forks[2]?.id as string));
    assert.equal(tree.root, 'fork-root');
    assert.equal(tree.sandboxes[0]?.id, 'fork-root', 'the root first');
    assert.deepEqual(new Set(tree.sandboxes.map((member) => member.id)), new Set(['fork-root', ...forks.map((fork) => fork.id)]));
    cliFailure(await asOther('tree', 'fork-root'), 4, 'NOT_FOUND');
    cliFailure(await asOther('tree', forks[0]?.id as string), 4, 'NOT_FOUND');
    const before = sandboxRows();
    cliFailure(await asOther('fork', snapshot.snapshotId, '--count', '2'), 4, 'NOT_FOUND');
    assert.equal(await settledSandboxRows(), before, 'nothing started');
  });

  test("forks count against the principal's live sandboxes: past its policy's max, each fork over it is DENIED on its own and the others are READY", async () => {
    worker.store.policies.add({ principalPattern: 'capped-agent', capability: 'cloud.sandbox', effect: 'allow', maxConcurrent: 3 });
    const asCapped = (...args: string[]) => runCli([...args, '--json'], { ...worker.env, SANDBOXPLANE_PRINCIPAL: 'capped-agent' });
    cliOutput(await asCapped('create', '--id', 'capped-root', '--services', 's3', '--wait'));
    const taken = cliOutput<SnapshotSummary>(await asCapped('snapshot', 'capped-root'));
    const result = await asCapped('fork', taken.snapshotId, '--count', '4');
    const outcomes = (JSON.parse(result.stdout) as ForkResult).sandboxes;
    assert.deepEqual(
      statusesOf(outcomes)
        .map((fork) => (fork.state === 'READY' ? 'READY' : `${fork.state} ${fork.error?.code}`))
        .sort(),
      ['DENIED QUOTA_EXCEEDED', 'DENIED QUOTA_EXCEEDED', 'READY', 'READY'],
    );
    assert.equal(result.code, 3, "the exit code is the first failure's, after the document");
    assert.match(result.stderr, /2 of 4 forks failed/);
    cliOutput(await asCapped('destroy', 'capped-root', '--tree'));
  });

  test('past SANDBOXPLANE_FORK_MAX the fork is refused and nothing is made', async () => {
    const before = sandboxRows();
    const refused = cliFailure(await asAgent('fork', snapshot.snapshotId, '--count', '6'), 2, 'INVALID_INPUT');
    assert.match(refused.message, /count: must be at most 5 \(SANDBOXPLANE_FORK_MAX\)/);
    assert.equal(await settledSandboxRows(), before, 'nothing started');
  });

  test('destroy --tree ends the whole family and leaves no container', async () => {
    const ids = ['fork-root', ...forks.map((fork) => fork.id)];
    assert.equal((await containersOf(ids)).length, 6);
    const tree = cliOutput<SandboxTree>(await asAgent('destroy', forks[3]?.id as string, '--tree'));
    assert.deepEqual(
      statusesOf(tree.sandboxes).map((member) => member.state),
      Array(6).fill('DESTROYED'),
    );
    assert.deepEqual(await containersOf(ids), []);
  });

  test('a deleted snapshot cannot be forked', async () => {
    const other = cliOutput<SandboxStatus>(await asAgent('create', '--id', 'fork-short', '--adapter', 'moto', '--services', 's3', '--wait'));
    const taken = cliOutput<SnapshotSummary>(await asAgent('snapshot', other.id));
    cliOutput(await asAgent('snapshots', 'delete', taken.snapshotId));
    cliFailure(await asAgent('fork', taken.snapshotId, '--count', '2'), 4, 'NOT_FOUND');
    cliOutput(await asAgent('destroy', other.id));
  });

  test('a snapshot of a 20 MiB state (15 MiB compressed, out of workflow history) forks with every byte', async () => {
    const big = cliOutput<SandboxStatus>(await asAgent('create', '--id', 'fork-big', '--adapter', 'moto', '--services', 's3', '--wait'));
    const config = big.clientConfig as ClientConfig;
    const payload = path.join(dir, 'big.bin');
    const bytes = randomBytes(15 * 1024 * 1024);
    fs.writeFileSync(payload, bytes);
    await aws(config, ['s3', 'mb', 's3://big']);
    // One PUT (no multipart): its body is recorded as base64, 20 MiB.
    await aws(config, ['s3api', 'put-object', '--bucket', 'big', '--key', 'big.bin', '--body', payload]);
    const taken = cliOutput<SnapshotSummary>(await asAgent('snapshot', big.id));
    assert.ok(taken.bytes > 14 * 1024 * 1024, `${taken.bytes} bytes compressed`);
    const history = await fetchHistories(worker.client, [workflowIdFor(big.id)]);
    assert.ok(JSON.stringify(history).length < 1024 * 1024, 'the history carries the digest, not the content');

    const [fork] = statusesOf(cliOutput<ForkResult>(await asAgent('fork', taken.snapshotId, '--count', '1')).sandboxes);
    assert.equal(fork?.state, 'READY');
    const copy = path.join(dir, 'big-copy.bin');
    await aws(fork?.clientConfig as ClientConfig, ['s3api', 'get-object', '--bucket', 'big', '--key', 'big.bin', copy]);
    assert.equal(createHash('sha256').update(fs.readFileSync(copy)).digest('hex'), createHash('sha256').update(bytes).digest('hex'));
    cliOutput(await asAgent('destroy', big.id, '--tree'));
  });

  test("every lifecycle's history (forks, a clamped extension, a tree's teardown) replays on this build's workflow code", async () => {
    const histories = await fetchHistories(worker.client, [workflowIdFor('fork-root'), ...forks.map((fork) => fork.workflowId)]);
    await assertReplays(histories);
  });
});
