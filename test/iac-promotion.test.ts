/**
 * Promotion (issue 26, DESIGN §14 "Promote"): a long-lived moto started by this test plays
 * the staging (and production) account, with IAM credentials of its own in an AWS profile
 * the worker reads through the SDK's credential chain. Only a template APPLIED in a
 * sandbox of the same principal goes there (PROOF_MISSING otherwise, and nothing changes
 * there), always through people (two different ones for production, behind its flag), and
 * the profile's secret appears nowhere in history, SQLite or the worker's log.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { payloadCodecFor } from '../src/codec/codec-settings';
import type { ClientConfig, SandboxCredentials } from '../src/domain/client-config';
import { PLANE_LABEL } from '../src/domain/docker-labels';
import type { IacStatus } from '../src/domain/iac/iac-run';
import { DockerContainerBroker } from '../src/docker';
import { createLogger } from '../src/logging/logger';
import { enrolApprover, type TestAuthenticator } from './helpers/approvers';
import { awsCliEnv } from './helpers/aws-cli';
import { runCli } from './harness/cli';
import { textsOf } from './helpers/history-texts';
import { cliFailure, cliOutput } from './helpers/cli-json';
import { eventually } from './harness/eventually';
import { createTestNamespace } from './helpers/test-namespace';
import { testTemporalAddress } from './harness/test-temporal';
import { startTestWorker, type TestWorker } from './harness/test-worker';
import { assertReplays, fetchHistories } from './helpers/replay-histories';

const run = promisify(execFile);
const motoImage = process.env.SANDBOXPLANE_MOTO_IMAGE;
const skip = motoImage === undefined && 'needs the moto image and the Docker engine (SANDBOXPLANE_MOTO_IMAGE, set by the test runner)';
/** Labels the staging account's container, so the clean-up finds it whatever happened. */
const STAGING_LABEL = 'io.sandboxplane.test=iac-promotion-staging';
const PROFILE = 'staging-deployer';

const TEMPLATE = JSON.stringify({
  Resources: {
    Queue: { Type: 'AWS::SQS::Queue', Properties: { QueueName: 'promoted-queue' } },
    Bucket: { Type: 'AWS::S3::Bucket', Properties: { BucketName: 'promoted-bucket' } },
  },
});
const NEVER_TRIED = JSON.stringify({ Resources: { Queue: { Type: 'AWS::SQS::Queue', Properties: { QueueName: 'never-tried' } } } });
const PRODUCTION = JSON.stringify({ Resources: { Queue: { Type: 'AWS::SQS::Queue', Properties: { QueueName: 'production-queue' } } } });

/**
 * A deployer in the staging account: an IAM user allowed everything (as a deployment role
 * is), its key minted through moto's window of unchecked calls; every later call is checked.
 */
async function mintDeployer(endpoint: string): Promise<SandboxCredentials> {
  const post = async (path: string, body: string, headers: Record<string, string>) => {
    const response = await fetch(`${endpoint}${path}`, { method: 'POST', body, headers, signal: AbortSignal.timeout(5_000) });
    const text = await response.text();
    assert.equal(response.status, 200, `${path}: ${text}`);
    return text;
  };
  await post('/moto-api/reset-auth', '3', { 'content-type': 'text/plain' });
  // moto routes an unchecked call by its credential scope alone: nothing secret signs these.
  const iam = (params: Record<string, string>) =>
    post('/', new URLSearchParams({ Version: '2010-05-08', ...params }).toString(), {
      authorization: 'AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/iam/aws4_request, SignedHeaders=host, Signature=none',
      'content-type': 'application/x-www-form-urlencoded',
    });
  await iam({ Action: 'CreateUser', UserName: PROFILE });
  const policy = JSON.stringify({ Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }] });
  await iam({ Action: 'PutUserPolicy', UserName: PROFILE, PolicyName: 'deployer', PolicyDocument: policy });
  const created = await iam({ Action: 'CreateAccessKey', UserName: PROFILE });
  const accessKeyId = /<AccessKeyId>([^<]+)</.exec(created)?.[1];
  const secretAccessKey = /<SecretAccessKey>([^<]+)</.exec(created)?.[1];
  assert.ok(accessKeyId !== undefined && secretAccessKey !== undefined, created);
  return { accessKeyId, secretAccessKey };
}

describe('promotion to staging and production targets (real dev server, engine, moto as the accounts, AWS CLI)', { skip }, () => {
  const broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-promotion-'));
  const file = (name: string, text: string) => {
    const at = path.join(dir, name);
    fs.writeFileSync(at, text);
    return at;
  };
  const logLines: string[] = [];
  let address: string;
  let namespace: string;
  let worker: TestWorker;
  let plane: string;
  let staging: ClientConfig;
  let alice: TestAuthenticator;
  let bob: TestAuthenticator;
  let selfApprover: TestAuthenticator;
  const savedAwsEnv = { credentials: process.env.AWS_SHARED_CREDENTIALS_FILE, config: process.env.AWS_CONFIG_FILE };
  const planeEnv: Record<string, string> = {};
  const asAgent = (...args: string[]) => runCli([...args, '--json'], { ...worker.env, SANDBOXPLANE_PRINCIPAL: 'agent-promo' });
  const asOperator = (...args: string[]) => runCli([...args, '--json'], worker.env);
  const startWorker = async (env: Record<string, string>) =>
    startTestWorker(address, {
      env: { TEMPORAL_NAMESPACE: namespace, SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1', SANDBOXPLANE_MOTO_IMAGE: motoImage as string, ...planeEnv, ...env },
      logger: createLogger('debug', { write: (line: string) => void logLines.push(line) }),
    });

  /** `aws <args>` against the staging account with its own key. */
  const awsStaging = async (args: string[]) => (await run('aws', ['--endpoint-url', staging.endpoint, '--output', 'json', ...args], { env: awsCliEnv(staging), timeout: 60_000 })).stdout;

  before(async () => {
    // The staging account: a moto of its own, IAM on, with a deployer's key minted in it.
    const { stdout } = await run('docker', ['run', '-d', '--label', STAGING_LABEL, '-e', 'INITIAL_NO_AUTH_ACTION_COUNT=0', '-p', '127.0.0.1::5000', motoImage as string]);
    const containerId = stdout.trim();
    const port = (await run('docker', ['port', containerId, '5000/tcp'])).stdout.trim().split(':').pop() as string;
    const endpoint = `http://127.0.0.1:${port}`;
    // fetch's timeout timer does not hold the event loop open, and nothing else runs yet: this does, while moto starts.
    const keepAlive = setInterval(() => undefined, 1_000);
    const credentials = await eventually('the staging moto to mint a key', () => mintDeployer(endpoint).catch(() => undefined)).finally(() => clearInterval(keepAlive));
    staging = { endpoint, region: 'us-east-1', credentials, forcePathStyle: true };
    // The worker's credential chain reads the profile; nothing else of the key is given to the plane.
    process.env.AWS_SHARED_CREDENTIALS_FILE = file('credentials', `[${PROFILE}]\naws_access_key_id = ${credentials.accessKeyId}\naws_secret_access_key = ${credentials.secretAccessKey}\n`);
    process.env.AWS_CONFIG_FILE = file('config', `[profile ${PROFILE}]\nregion = us-east-1\n`);

    address = await testTemporalAddress();
    namespace = await createTestNamespace(address, 'promotion');
    // One store across the worker restart below: the targets, approvers and proofs stay.
    planeEnv.SANDBOXPLANE_TASK_QUEUE = `promotion-${path.basename(dir)}`;
    planeEnv.SANDBOXPLANE_DEPLOYMENT = planeEnv.SANDBOXPLANE_TASK_QUEUE;
    planeEnv.SANDBOXPLANE_DB = path.join(dir, 'plane.sqlite');
    worker = await startWorker({ SANDBOXPLANE_FLAG_STAGING_APPLY: '1' });
    plane = worker.plane.planeId;
    for (const capability of ['cloud.sandbox', 'cloud.iac.local', 'cloud.staging.apply', 'cloud.production.apply'] as const) {
      worker.store.policies.add({ principalPattern: 'agent-promo', capability, effect: 'allow' });
    }
    [alice, bob, selfApprover] = await Promise.all([enrolApprover(worker, 'alice'), enrolApprover(worker, 'bob'), enrolApprover(worker, 'agent-promo')]);
    cliOutput(await asOperator('targets', 'add', 'staging', '--environment', 'staging', '--region', 'us-east-1', '--endpoint', endpoint, '--profile', PROFILE));
    cliOutput(await asOperator('targets', 'add', 'prod', '--environment', 'production', '--region', 'us-east-1', '--endpoint', endpoint, '--profile', PROFILE));
    await worker.sandboxes.create({ id: 'promo-sbx', principal: 'agent-promo', adapter: 'moto', services: ['s3', 'sqs'] }, { wait: 'ready' });
  });

  after(async () => {
    await worker?.stop();
    for (const container of await broker.list({ [PLANE_LABEL]: plane })) await broker.remove(container.id, { force: true });
    const { stdout } = await run('docker', ['ps', '-aq', '--filter', `label=${STAGING_LABEL}`]).catch(() => ({ stdout: '' }));
    for (const id of stdout.split('\n').filter(Boolean)) await run('docker', ['rm', '-f', id]).catch(() => undefined);
    if (savedAwsEnv.credentials === undefined) delete process.env.AWS_SHARED_CREDENTIALS_FILE;
    else process.env.AWS_SHARED_CREDENTIALS_FILE = savedAwsEnv.credentials;
    if (savedAwsEnv.config === undefined) delete process.env.AWS_CONFIG_FILE;
    else process.env.AWS_CONFIG_FILE = savedAwsEnv.config;
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a template never applied in a sandbox is refused for staging with PROOF_MISSING, and nothing changes there', async () => {
    cliFailure(await asAgent('iac', 'apply', '--target', 'staging', '--template', file('never.json', NEVER_TRIED), '--wait'), 3, 'PROOF_MISSING');
    // A plan alone would read the target's stack and make a change set there: only an apply goes that far.
    cliFailure(await asAgent('iac', 'plan', '--target', 'staging', '--template', file('never.json', NEVER_TRIED)), 2, 'INVALID_INPUT');
    assert.deepEqual(JSON.parse(await awsStaging(['cloudformation', 'list-stacks'])).StackSummaries, []);
    assert.deepEqual(JSON.parse((await awsStaging(['sqs', 'list-queues'])) || '{}').QueueUrls ?? [], []);
  });

  test('once APPLIED in a sandbox, the staging run waits for people under an allow policy, shows the proof, and a valid approval applies it there', async () => {
    const template = file('app.json', TEMPLATE);
    const tried = cliOutput<IacStatus>(await asAgent('iac', 'apply', 'promo-sbx', '--template', template, '--stack', 'app', '--wait'));
    assert.equal(tried.state, 'APPLIED', tried.waitingFor);

    const waiting = cliOutput<IacStatus>(await asAgent('iac', 'apply', '--target', 'staging', '--template', template, '--stack', 'app'));
    assert.equal(waiting.state, 'AWAITING_APPROVAL', 'approval is required for a target whatever the policy row says');
    assert.equal(waiting.target, 'staging');
    assert.deepEqual([waiting.proof?.sandboxId, waiting.proof?.iacRunId], ['promo-sbx', tried.runId], 'the proof is the sandbox run');
    // The agent learns nothing of the target before a person acts (issue 39): its view holds the digest, no change drawn from staging's stack.
    assert.deepEqual(waiting.plan?.changes, [], JSON.stringify(waiting.plan));
    assert.deepEqual(
      waiting.plan?.warnings.map((warning) => warning.code),
      ['TARGET_PLAN_WITHHELD'],
    );
    const reviewed = cliOutput<IacStatus>(await asOperator('iac', 'status', waiting.runId));
    assert.equal(reviewed.plan?.digest, waiting.plan?.digest);
    assert.deepEqual(
      reviewed.plan?.changes.map((change) => [change.action, change.logicalId]),
      [
        ['Add', 'Bucket'],
        ['Add', 'Queue'],
      ],
      'planned against staging itself, shown to its reviewers',
    );
    assert.deepEqual(reviewed.plan?.unsupported, [], 'a target is a real account: nothing is named unsupported');

    // The requester decides nothing: its own bound client is refused outright, and its name as an approver too.
    cliFailure(await asAgent('iac', 'approve', waiting.runId, '--approver', 'alice', '--code', await alice.code()), 3, 'PRINCIPAL_MISMATCH');
    cliFailure(await asOperator('iac', 'approve', waiting.runId, '--approver', 'agent-promo', '--code', await selfApprover.code()), 3, 'APPROVER_NOT_ALLOWED');
    cliOutput(await asOperator('iac', 'approve', waiting.runId, '--approver', 'alice', '--code', await alice.code()));
    const applied = await eventually('the staging run to end', async () => {
      const status = cliOutput<IacStatus>(await asOperator('iac', 'status', waiting.runId));
      return status.state === 'AWAITING_APPROVAL' || status.state === 'APPLYING' ? undefined : status;
    });
    assert.equal(applied.state, 'APPLIED', applied.waitingFor);
    assert.deepEqual(
      applied.resources.map((row) => [row.logicalId, row.status]),
      [
        ['Bucket', 'VERIFIED'],
        ['Queue', 'VERIFIED'],
      ],
    );
    assert.match(await awsStaging(['sqs', 'get-queue-url', '--queue-name', 'promoted-queue']), /promoted-queue/);
    assert.ok(JSON.parse(await awsStaging(['s3api', 'list-buckets'])).Buckets.some((bucket: { Name: string }) => bucket.Name === 'promoted-bucket'));
    const trail = cliOutput<{ operations: { action: string }[] }>(await asOperator('targets', 'audit', 'staging')).operations.map((row) => row.action);
    for (const action of ['iac_requested', 'iac_proof_found', 'iac_planned', 'iac_awaiting_approval', 'iac_approved', 'iac_applied'])
      assert.ok(trail.includes(action), `${action} in ${trail.join(', ')}`);
  });

  test("the profile's secret appears nowhere in history, SQLite or the worker's log", async () => {
    const secret = staging.credentials.secretAccessKey;
    const codec = payloadCodecFor(worker.config.codec);
    const texts: string[] = [];
    const runs = await worker.sandboxes.iac.list({ target: 'staging' });
    assert.ok(runs.length >= 2);
    for (const summary of runs) texts.push(...(await textsOf(await worker.client.workflow.getHandle(summary.workflowId).fetchHistory(), codec)));
    assert.ok(
      texts.some((text) => text.includes('promoted-queue')),
      'the reading works: the template is in the decoded history',
    );
    assert.ok(!texts.some((text) => text.includes(secret)), 'the history holds the secret');
    assert.ok(
      !fs
        .readFileSync(planeEnv.SANDBOXPLANE_DB as string)
        .toString('latin1')
        .includes(secret),
      'the SQLite file holds the secret',
    );
    assert.ok(logLines.length > 0 && !logLines.join('\n').includes(secret), "the worker's log holds the secret");
  });

  test('production refuses while its flag is off; with it on, one approver is not enough and a second, different one applies it', async () => {
    const template = file('prod.json', PRODUCTION);
    cliOutput<IacStatus>(await asAgent('iac', 'apply', 'promo-sbx', '--template', template, '--stack', 'prod', '--wait'));
    cliFailure(await asAgent('iac', 'apply', '--target', 'prod', '--template', template, '--stack', 'prod', '--wait'), 3, 'FLAG_DISABLED');

    await worker.stop();
    worker = await startWorker({ SANDBOXPLANE_FLAG_STAGING_APPLY: '1', SANDBOXPLANE_FLAG_PRODUCTION_APPLY: '1' });
    const waiting = cliOutput<IacStatus>(await asAgent('iac', 'apply', '--target', 'prod', '--template', template, '--stack', 'prod'));
    assert.equal(waiting.state, 'AWAITING_APPROVAL');
    assert.equal(waiting.approvalsNeeded, 2);
    const first = cliOutput<IacStatus>(await asOperator('iac', 'approve', waiting.runId, '--approver', 'alice', '--code', await alice.code()));
    assert.equal(first.state, 'AWAITING_APPROVAL', 'one approver is not enough for production');
    cliFailure(await asOperator('iac', 'approve', waiting.runId, '--approver', 'alice', '--code', await alice.code()), 3, 'APPROVER_NOT_ALLOWED');
    cliOutput(await asOperator('iac', 'approve', waiting.runId, '--approver', 'bob', '--code', await bob.code()));
    const applied = await eventually('the production run to end', async () => {
      const status = cliOutput<IacStatus>(await asOperator('iac', 'status', waiting.runId));
      return status.state === 'AWAITING_APPROVAL' || status.state === 'APPLYING' ? undefined : status;
    });
    assert.equal(applied.state, 'APPLIED', applied.waitingFor);
    assert.deepEqual(
      applied.approvals.map((approval) => approval.approver),
      ['alice', 'bob'],
    );
    assert.match(await awsStaging(['sqs', 'get-queue-url', '--queue-name', 'production-queue']), /production-queue/);
  });

  test("every run's history (IaC runs, and the workflows that kept their stack turns) replays on this build's workflow code", async () => {
    const ids = [...(await worker.sandboxes.iac.list()).map((run) => run.workflowId), 'sandbox-promo-sbx', 'iac-turns-staging', 'iac-turns-prod'];
    const histories = await fetchHistories(worker.client, ids);
    assert.ok(histories.length >= 5, `collected ${histories.length} histories`);
    await assertReplays(histories);
  });
});
