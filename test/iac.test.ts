/**
 * Infrastructure as code in a sandbox (issue 25, DESIGN §14) on a real dev server, a real
 * engine and real moto, through the CLI, and checked with the AWS CLI against the
 * sandbox's endpoint and its own credentials: an honest plan (the subscription moto
 * skips named unsupported, an untouched topic not called Modify), nothing made by a plan,
 * an apply checked through the services' own APIs, a failing apply that ends FAILED with
 * what is really there and puts the sandbox back as it was before, approvals bound to the plan's digest, one run per stack at a
 * time, a CDK app, and refusals for another principal and bad input.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ClientConfig } from '../src/domain/client-config';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { PLANE_LABEL } from '../src/domain/docker-labels';
import type { IacStatus } from '../src/domain/iac/iac-run';
import { DockerContainerBroker } from '../src/docker';
import { enrolApprover, type TestAuthenticator } from './helpers/approvers';
import { awsCli } from './helpers/aws-cli';
import { REPO_ROOT, runCli } from './harness/cli';
import { cliFailure, cliOutput, type CliError } from './helpers/cli-json';
import { eventually } from './harness/eventually';
import { mcpServerTransport } from './helpers/mcp-transport';
import { createTestNamespace } from './helpers/test-namespace';
import { testTemporalAddress } from './harness/test-temporal';
import { startTestWorker, type TestWorker } from './harness/test-worker';
import { assertReplays, fetchHistories } from './helpers/replay-histories';

const motoImage = process.env.SANDBOXPLANE_MOTO_IMAGE;
const skip = motoImage === undefined && 'needs the moto image and the Docker engine (SANDBOXPLANE_MOTO_IMAGE, set by the test runner)';

const FIRST = `
AWSTemplateFormatVersion: 2010-09-09
Description: a bucket, a queue, a table, a topic and a subscription
Resources:
  Bucket:
    Type: AWS::S3::Bucket
    Properties:
      BucketName: iac-test-bucket
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: iac-test-queue
      VisibilityTimeout: 30
  Table:
    Type: AWS::DynamoDB::Table
    Properties:
      TableName: iac-test-table
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions: [{ AttributeName: pk, AttributeType: S }]
      KeySchema: [{ AttributeName: pk, KeyType: HASH }]
  Topic:
    Type: AWS::SNS::Topic
    Properties:
      TopicName: iac-test-topic
  Subscription:
    Type: AWS::SNS::Subscription
    Properties:
      TopicArn: !Ref Topic
      Protocol: sqs
      Endpoint: !GetAtt Queue.Arn
`;

const SECOND = FIRST.replace('VisibilityTimeout: 30', 'VisibilityTimeout: 60').replace(/ {2}Subscription:[\s\S]*$/, '');

const TAKEN = `
Resources:
  Early:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: iac-made-before-the-failure
  Clash:
    Type: AWS::S3::Bucket
    Properties:
      BucketName: iac-test-bucket
`;

const QUEUE_ONLY = (name: string) => `{"Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "${name}"}}}}`;

/** `aws <args>` with the sandbox's own key and endpoint. */
const aws = awsCli;

describe('infrastructure as code in a moto sandbox (real dev server, engine, moto and AWS CLI)', { skip }, () => {
  const broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-iac-'));
  const file = (name: string, text: string) => {
    const at = path.join(dir, name);
    fs.writeFileSync(at, text);
    return at;
  };
  let worker: TestWorker;
  let plane: string;
  let config: ClientConfig;
  let alice: TestAuthenticator;
  const sandboxId = 'iac-main';
  const asAgent = (...args: string[]) => runCli([...args, '--json'], { ...worker.env, SANDBOXPLANE_PRINCIPAL: 'agent-iac' });

  before(async () => {
    const address = await testTemporalAddress();
    const namespace = await createTestNamespace(address, 'iac');
    worker = await startTestWorker(address, { env: { TEMPORAL_NAMESPACE: namespace, SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1', SANDBOXPLANE_MOTO_IMAGE: motoImage as string } });
    plane = worker.plane.planeId;
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
    worker.store.policies.add({ principalPattern: 'agent-iac', capability: 'cloud.iac.local', effect: 'allow' });
    worker.store.policies.add({ principalPattern: 'agent-reviewed', capability: 'cloud.iac.local', effect: 'require_approval' });
    alice = await enrolApprover(worker, 'alice');
    const services = ['s3', 'sqs', 'dynamodb', 'sns', 'cloudformation'];
    const [sandbox] = await Promise.all([
      worker.sandboxes.create({ id: sandboxId, principal: 'agent-iac', adapter: 'moto', services }, { wait: 'ready' }),
      worker.sandboxes.create({ id: 'iac-reviewed', principal: 'agent-reviewed', adapter: 'moto', services }, { wait: 'ready' }),
    ]);
    assert.ok(sandbox.clientConfig !== null);
    config = sandbox.clientConfig;
  });

  after(async () => {
    await worker?.stop();
    for (const container of await broker.list({ [PLANE_LABEL]: plane })) await broker.remove(container.id, { force: true });
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a plan names five Adds and the subscription moto skips as unsupported, and makes nothing', async () => {
    const planned = cliOutput<IacStatus>(await asAgent('iac', 'plan', sandboxId, '--template', file('first.yaml', FIRST), '--stack', 'app'));
    assert.equal(planned.state, 'PLANNED');
    assert.equal(planned.stack, 'app');
    assert.ok(planned.plan !== null);
    assert.deepEqual(
      planned.plan.changes.map((change) => [change.action, change.logicalId]),
      [
        ['Add', 'Bucket'],
        ['Add', 'Queue'],
        ['Add', 'Subscription'],
        ['Add', 'Table'],
        ['Add', 'Topic'],
      ],
    );
    assert.deepEqual(planned.plan.unsupported, [{ logicalId: 'Subscription', type: 'AWS::SNS::Subscription' }]);
    assert.match(planned.plan.digest, /^[0-9a-f]{64}$/);
    assert.deepEqual(JSON.parse(await aws(config, ['s3api', 'list-buckets'])).Buckets, []);
    assert.deepEqual(JSON.parse((await aws(config, ['sqs', 'list-queues'])) || '{}').QueueUrls ?? [], []);
    // The plan's change set made a REVIEW_IN_PROGRESS stack, which the plan deleted again: only a deleted one is listed.
    const stacks = JSON.parse(await aws(config, ['cloudformation', 'list-stacks'])).StackSummaries as { StackStatus: string }[];
    assert.deepEqual(
      stacks.map((stack) => stack.StackStatus),
      ['DELETE_COMPLETE'],
    );
  });

  test('apply makes the bucket, queue and table (seen by the AWS CLI) and does not report the subscription created', async () => {
    const applied = cliOutput<IacStatus>(await asAgent('iac', 'apply', sandboxId, '--template', file('first.yaml', FIRST), '--stack', 'app', '--wait'));
    assert.equal(applied.state, 'APPLIED', applied.waitingFor);
    const status = Object.fromEntries(applied.resources.map((row) => [row.logicalId, row.status]));
    assert.deepEqual(status, { Bucket: 'VERIFIED', Queue: 'VERIFIED', Table: 'VERIFIED', Topic: 'VERIFIED', Subscription: 'NOT_CREATED' });
    assert.deepEqual(
      JSON.parse(await aws(config, ['s3api', 'list-buckets'])).Buckets.map((bucket: { Name: string }) => bucket.Name),
      ['iac-test-bucket'],
    );
    assert.match(await aws(config, ['sqs', 'get-queue-url', '--queue-name', 'iac-test-queue']), /iac-test-queue/);
    assert.equal(JSON.parse(await aws(config, ['dynamodb', 'describe-table', '--table-name', 'iac-test-table'])).Table.TableStatus, 'ACTIVE');
    const trail = worker.store.sandboxes.audit(sandboxId).filter((row) => row.summary.iacRunId === applied.runId);
    assert.deepEqual(
      trail.map((row) => row.action),
      ['iac_requested', 'iac_planned', 'iac_checkpoint', 'iac_applied'],
      "the run's steps are in the sandbox's audit trail, the checkpoint before the apply among them",
    );
  });

  test('a changed VisibilityTimeout and a dropped subscription plan exactly that, and apply', async () => {
    const template = file('second.yaml', SECOND);
    const planned = cliOutput<IacStatus>(await asAgent('iac', 'plan', sandboxId, '--template', template, '--stack', 'app'));
    assert.deepEqual(planned.plan?.changes, [
      {
        action: 'Modify',
        logicalId: 'Queue',
        type: 'AWS::SQS::Queue',
        properties: [{ path: 'Properties.VisibilityTimeout', before: 30, after: 60, requiresRecreation: 'Never' }],
        replacement: 'False',
        dataLoss: false,
        retained: false,
      },
      planned.plan?.changes.find((change) => change.logicalId === 'Subscription'),
    ]);
    assert.equal(planned.plan?.changes[1]?.action, 'Remove');
    const applied = cliOutput<IacStatus>(await asAgent('iac', 'apply', sandboxId, '--template', template, '--stack', 'app', '--wait'));
    assert.equal(applied.state, 'APPLIED', applied.waitingFor);
    const url = JSON.parse(await aws(config, ['sqs', 'get-queue-url', '--queue-name', 'iac-test-queue'])).QueueUrl as string;
    const attributes = JSON.parse(await aws(config, ['sqs', 'get-queue-attributes', '--queue-url', url, '--attribute-names', 'VisibilityTimeout'])).Attributes;
    assert.equal(attributes.VisibilityTimeout, '60');
  });

  test('resources lists the stack resources beside what the emulator lists', async () => {
    const listing = cliOutput<{ resources: { service: string; id: string; stack?: string; logicalId?: string }[] }>(await asAgent('resources', sandboxId));
    const bucket = listing.resources.find((row) => row.service === 's3' && row.id === 'iac-test-bucket');
    assert.deepEqual([bucket?.stack, bucket?.logicalId], ['app', 'Bucket']);
    const queue = listing.resources.find((row) => row.service === 'sqs' && row.id === 'iac-test-queue');
    assert.deepEqual([queue?.stack, queue?.logicalId], ['app', 'Queue']);
  });

  test('a bucket name that is taken ends FAILED within seconds, listing what is really there', async () => {
    const started = Date.now();
    const { message, runId } = cliFailure(
      await asAgent('iac', 'apply', sandboxId, '--template', file('taken.json', TAKEN), '--stack', 'clash', '--wait'),
      1,
      'IAC_APPLY_FAILED',
    ) as CliError & { runId?: string };
    assert.ok(Date.now() - started < 60_000, `took ${Date.now() - started} ms`);
    assert.match(message, /BucketAlreadyExists/);
    const runs = cliOutput<{ runs: { runId: string; state: string }[] }>(await asAgent('iac', 'list', '--sandbox', sandboxId));
    const failed = runs.runs.find((run) => run.state === 'FAILED');
    assert.ok(failed !== undefined, JSON.stringify(runs));
    assert.equal(runId, failed.runId, 'the error names its run as a field of its own');
    const status = cliOutput<IacStatus>(await asAgent('iac', 'status', failed.runId));
    const rows = Object.fromEntries(status.resources.map((row) => [row.logicalId, row.status]));
    assert.equal(rows.Early, 'ORPHANED', 'the queue made before the failure is listed as there');
    const clash = status.resources.find((row) => row.logicalId === 'Clash');
    assert.equal(clash?.status, 'TAKEN', 'the bucket of that name was there before, not made by this apply');
    assert.match(clash?.detail ?? '', /stack app holds it \(Bucket\)/);
    // The sandbox was checkpointed before the apply and put back after it failed: nothing it made remains, the earlier stack does.
    assert.match(status.waitingFor, /put back as it was before the apply/);
    await assert.rejects(aws(config, ['sqs', 'get-queue-url', '--queue-name', 'iac-made-before-the-failure']), /NonExistentQueue|does not exist/);
    const stacks = JSON.parse(await aws(config, ['cloudformation', 'list-stacks'])).StackSummaries as { StackName: string; StackStatus: string }[];
    assert.deepEqual(
      stacks.filter((stack) => stack.StackName === 'clash').map((stack) => stack.StackStatus),
      ['DELETE_COMPLETE'],
      "the failed stack is gone: only its plan's shell, deleted by the plan, is listed",
    );
    assert.match(await aws(config, ['sqs', 'get-queue-url', '--queue-name', 'iac-test-queue']), /iac-test-queue/, 'what the earlier apply made is there, as it was');
    assert.deepEqual(
      worker.store.sandboxes
        .audit(sandboxId)
        .filter((row) => row.summary.iacRunId === failed.runId)
        .map((row) => row.action),
      ['iac_requested', 'iac_planned', 'iac_checkpoint', 'iac_failed', 'iac_rolled_back'],
    );
  });

  test('under require_approval the run waits; a wrong code and a stale digest are refused; the right code for the shown digest applies', async () => {
    const asReviewed = (...args: string[]) => runCli([...args, '--json'], { ...worker.env, SANDBOXPLANE_PRINCIPAL: 'agent-reviewed' });
    const waiting = cliOutput<IacStatus>(await asReviewed('iac', 'apply', 'iac-reviewed', '--template', file('reviewed.json', QUEUE_ONLY('reviewed-queue'))));
    assert.equal(waiting.state, 'AWAITING_APPROVAL');
    const digest = waiting.plan?.digest as string;
    const operator = (...args: string[]) => runCli([...args, '--json'], worker.env);
    cliFailure(await operator('iac', 'approve', waiting.runId, '--approver', 'alice', '--code', '000000', '--plan-digest', digest), 3, 'APPROVAL_UNVERIFIED');
    cliFailure(await operator('iac', 'approve', waiting.runId, '--approver', 'alice', '--code', await alice.code(), '--plan-digest', 'f'.repeat(64)), 3, 'PLAN_STALE');
    const approved = cliOutput<IacStatus>(await operator('iac', 'approve', waiting.runId, '--approver', 'alice', '--code', await alice.code(), '--plan-digest', digest));
    assert.deepEqual(
      approved.approvals.map((approval) => approval.approver),
      ['alice'],
    );
    const done = await eventually('the approved run applied', async () => {
      const status = cliOutput<IacStatus>(await operator('iac', 'status', waiting.runId));
      return status.state === 'APPLIED' || status.state === 'FAILED' ? status : undefined;
    });
    assert.equal(done.state, 'APPLIED', done.waitingFor);
  });

  test('one run at a time changes a stack: the next waits its turn and goes on once the first ends', async () => {
    const asReviewed = (...args: string[]) => runCli([...args, '--json'], { ...worker.env, SANDBOXPLANE_PRINCIPAL: 'agent-reviewed' });
    const first = cliOutput<IacStatus>(await asReviewed('iac', 'apply', 'iac-reviewed', '--template', file('turn-1.json', QUEUE_ONLY('turn-1')), '--stack', 'turns'));
    assert.equal(first.state, 'AWAITING_APPROVAL');
    const second = await asReviewed('iac', 'plan', 'iac-reviewed', '--template', file('turn-2.json', QUEUE_ONLY('turn-2')), '--stack', 'turns', '--timeout', '3s');
    cliFailure(second, 1, 'WAIT_TIMEOUT');
    const waited = JSON.parse(second.stderr) as { error: { message: string } };
    assert.match(waited.error.message, /Waiting for stack turns: run .* changes it now/);
    cliOutput<IacStatus>(await runCli(['iac', 'deny', first.runId, '--approver', 'alice', '--code', await alice.code(), '--json'], worker.env));
    const runId = /IaC run (\S+) is still/.exec(waited.error.message)?.[1] as string;
    const planned = await eventually('the waiting plan ran', async () => {
      const status = cliOutput<IacStatus>(await asReviewed('iac', 'status', runId));
      return status.state === 'PLANNED' ? status : undefined;
    });
    assert.deepEqual(
      planned.plan?.changes.map((change) => change.logicalId),
      ['Q'],
    );
  });

  test('a run cancelled while it waits for approval ends FAILED and gives its stack to the next run at once', async () => {
    const asReviewed = (...args: string[]) => runCli([...args, '--json'], { ...worker.env, SANDBOXPLANE_PRINCIPAL: 'agent-reviewed' });
    const waiting = cliOutput<IacStatus>(await asReviewed('iac', 'apply', 'iac-reviewed', '--template', file('cancel-1.json', QUEUE_ONLY('cancel-1')), '--stack', 'cancelled'));
    assert.equal(waiting.state, 'AWAITING_APPROVAL');
    await worker.client.workflow.getHandle(waiting.workflowId).cancel();
    const ended = await eventually('the cancelled run ended', async () => {
      const status = cliOutput<IacStatus>(await asReviewed('iac', 'status', waiting.runId));
      return status.state === 'AWAITING_APPROVAL' ? undefined : status;
    });
    assert.equal(ended.state, 'FAILED');
    assert.match(ended.error?.message ?? '', /cancelled before anything was applied/);
    const next = cliOutput<IacStatus>(
      await asReviewed('iac', 'plan', 'iac-reviewed', '--template', file('cancel-2.json', QUEUE_ONLY('cancel-2')), '--stack', 'cancelled', '--timeout', '60s'),
    );
    assert.equal(next.state, 'PLANNED', 'the next run did not wait for a lease');
  });

  test('a run waiting for approval ends FAILED when its sandbox is destroyed, nothing applied', async () => {
    await worker.sandboxes.create({ id: 'iac-doomed', principal: 'agent-reviewed', adapter: 'moto', services: ['sqs'] }, { wait: 'ready' });
    const asReviewed = (...args: string[]) => runCli([...args, '--json'], { ...worker.env, SANDBOXPLANE_PRINCIPAL: 'agent-reviewed' });
    const waiting = cliOutput<IacStatus>(await asReviewed('iac', 'apply', 'iac-doomed', '--template', file('doomed.json', QUEUE_ONLY('doomed'))));
    assert.equal(waiting.state, 'AWAITING_APPROVAL');
    await worker.sandboxes.destroy('iac-doomed');
    const ended = await eventually('the run to end', async () => {
      const status = cliOutput<IacStatus>(await asReviewed('iac', 'status', waiting.runId));
      return status.state === 'AWAITING_APPROVAL' ? undefined : status;
    });
    assert.equal(ended.state, 'FAILED');
    assert.equal(ended.error?.code, 'INVALID_STATE');
    assert.match(ended.error?.message ?? '', /sandbox iac-doomed is (DESTROYING|DESTROYED)/);
  });

  test("the sandbox's own key reads stacks but cannot change them: CloudFormation would make resources past its grants and past review", async () => {
    assert.ok(JSON.parse(await aws(config, ['cloudformation', 'describe-stacks', '--stack-name', 'app'])).Stacks.length === 1);
    const refused = await aws(config, ['cloudformation', 'create-stack', '--stack-name', 'sneaky', '--template-body', QUEUE_ONLY('sneaky')]).then(
      () => 'accepted',
      (err: { stderr?: string }) => /An error occurred \((\w+)\)/.exec(err.stderr ?? '')?.[1] ?? String(err.stderr),
    );
    assert.equal(refused, 'AccessDenied');
  });

  test('a template that touches a service the sandbox was not granted is refused (the plane applies as itself)', async () => {
    await worker.sandboxes.create({ id: 'iac-narrow', principal: 'agent-iac', adapter: 'moto', services: ['sqs'] }, { wait: 'ready' });
    const { message } = cliFailure(await asAgent('iac', 'plan', 'iac-narrow', '--template', file('first.yaml', FIRST)), 3, 'SERVICE_NOT_ALLOWED');
    assert.match(message, /touches dynamodb, s3, sns, which sandbox iac-narrow was not granted/);
    await worker.sandboxes.destroy('iac-narrow');
  });

  test("another principal's caller cannot plan against the sandbox: it reads like a sandbox that never existed, and nothing reaches it", async () => {
    const asOther = (id: string) => runCli(['iac', 'plan', id, '--template', file('other.json', QUEUE_ONLY('other')), '--json'], { ...worker.env, SANDBOXPLANE_PRINCIPAL: 'agent-reviewed' });
    const trail = () => worker.store.sandboxes.audit(sandboxId).length;
    const historyLength = async () => (await worker.client.workflow.getHandle(`sandbox-${sandboxId}`).fetchHistory()).events?.length ?? 0;
    const [rowsBefore, eventsBefore] = [trail(), await historyLength()];
    const theirs = cliFailure(await asOther(sandboxId), 4, 'NOT_FOUND');
    const nobodys = cliFailure(await asOther('iac-never-was'), 4, 'NOT_FOUND');
    assert.deepEqual(
      { ...theirs, message: theirs.message.replace(sandboxId, 'ID') },
      { ...nobodys, message: nobodys.message.replace('iac-never-was', 'ID') },
      'the same code, message and hint as a sandbox that does not exist',
    );
    assert.equal(trail(), rowsBefore, "no audit row in the other principal's trail");
    assert.equal(await historyLength(), eventsBefore, 'no signal or update in its history');
  });

  test("the MCP tools plan, apply and show a run as the server's principal; another principal's sandbox is NOT_FOUND", async () => {
    const connect = async (principal: string) => {
      const client = new McpClient({ name: `iac-test-${principal}`, version: '1.0.0' });
      await client.connect(mcpServerTransport(worker.env, principal, 'warn'));
      return client;
    };
    const [own, other] = await Promise.all([connect('agent-iac'), connect('agent-reviewed')]);
    try {
      const call = async (client: McpClient, name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as CallToolResult;
      const template = QUEUE_ONLY('from-mcp');
      const planned = (await call(own, 'plan_iac', { sandboxId, template, templateName: 'mcp.json' })).structuredContent as unknown as IacStatus;
      assert.equal(planned.state, 'PLANNED');
      assert.equal(planned.stack, 'mcp');
      const applied = (await call(own, 'apply_iac', { sandboxId, template, templateName: 'mcp.json', wait: 'ended' })).structuredContent as unknown as IacStatus;
      assert.equal(applied.state, 'APPLIED', applied.waitingFor);
      const shown = (await call(own, 'iac_status', { runId: applied.runId })).structuredContent as unknown as IacStatus;
      assert.deepEqual(
        shown.resources.map((row) => row.status),
        ['VERIFIED'],
      );
      const refused = await call(other, 'plan_iac', { sandboxId, template, templateName: 'mcp.json' });
      assert.equal(refused.isError, true);
      assert.equal((refused.structuredContent as { error: { code: string } }).error.code, 'NOT_FOUND');
      const hidden = await call(other, 'iac_status', { runId: applied.runId });
      assert.equal((hidden.structuredContent as { error: { code: string } }).error.code, 'NOT_FOUND', "another principal's run is not shown");

      // A CDK app runs its code when synthesized: the stdio server, which holds the plane's keys, never does (issue 39).
      const app = fs.mkdtempSync(path.join(dir, 'steal-'));
      const marker = path.join(dir, 'stolen');
      fs.writeFileSync(path.join(app, 'cdk.json'), JSON.stringify({ app: 'node steal.js' }));
      fs.writeFileSync(path.join(app, 'steal.js'), `require('fs').writeFileSync(${JSON.stringify(marker)}, JSON.stringify(process.env));\n`);
      for (const tool of ['plan_iac', 'apply_iac']) {
        const stolen = await call(own, tool, { sandboxId, cdkApp: app });
        assert.equal(stolen.isError, true);
        const error = (stolen.structuredContent as { error: { code: string; message: string } }).error;
        assert.equal(error.code, 'INVALID_INPUT');
        assert.match(error.message, /cdkApp\) is refused by every MCP server/);
        assert.ok(!JSON.stringify(stolen).includes(worker.env.TEMPORAL_ADDRESS ?? '127.0.0.1:'), "nothing of the server's environment in the answer");
      }
      assert.equal(fs.existsSync(marker), false, "the app's code never ran");
    } finally {
      await Promise.all([own.close(), other.close()]);
    }
  });

  test('bad input is INVALID_INPUT before anything starts', async () => {
    const before = cliOutput<{ runs: unknown[] }>(await asAgent('iac', 'list')).runs.length;
    cliFailure(await asAgent('iac', 'plan', sandboxId, '--template', file('broken.yaml', 'Resources:\n  A: [unclosed\n')), 2, 'INVALID_INPUT');
    cliFailure(
      await asAgent('iac', 'plan', sandboxId, '--template', file('bogus.json', '{"Resources": {"A": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": {"Fn::Bogus": "x"}}}}}')),
      2,
      'INVALID_INPUT',
    );
    cliFailure(await asAgent('iac', 'plan', sandboxId, '--template', file('q.json', QUEUE_ONLY('q')), '--parameter', 'Nope=1'), 2, 'INVALID_INPUT');
    cliFailure(await asAgent('iac', 'plan', sandboxId, '--template', file('q.json', QUEUE_ONLY('q')), '--stack', '1-not-a-stack'), 2, 'INVALID_INPUT');
    cliFailure(await asAgent('iac', 'plan', sandboxId, '--template', file('huge.json', `{"Resources": {}, "Description": "${'x'.repeat(1_100_000)}"}`)), 2, 'INVALID_INPUT');
    // iac-turns-staging is the keeper of staging's stack turns: no run may take its id.
    const reserved = cliFailure(await asAgent('iac', 'plan', sandboxId, '--template', file('q.json', QUEUE_ONLY('q')), '--run-id', 'turns-staging'), 2, 'INVALID_INPUT');
    assert.match(reserved.message, /must not begin 'turns-'/);
    assert.equal(cliOutput<{ runs: unknown[] }>(await asAgent('iac', 'list')).runs.length, before, 'no run was started');
    assert.equal(
      cliOutput<IacStatus>(await asAgent('iac', 'plan', sandboxId, '--template', file('q.json', QUEUE_ONLY('q')), '--run-id', 'ok-run-1')).state,
      'PLANNED',
      'an ordinary run id plans',
    );
  });

  test('a CDK app made with aws-cdk-lib (a bucket and a queue) applies', async () => {
    const applied = cliOutput<IacStatus>(await asAgent('iac', 'apply', sandboxId, '--cdk-app', path.join(REPO_ROOT, 'test', 'fixtures', 'cdk-app'), '--wait'));
    assert.equal(applied.state, 'APPLIED', applied.waitingFor);
    const types = applied.resources.filter((row) => row.status === 'VERIFIED').map((row) => row.type);
    assert.deepEqual(types.sort(), ['AWS::S3::Bucket', 'AWS::SQS::Queue']);
    const buckets = JSON.parse(await aws(config, ['s3api', 'list-buckets'])).Buckets.map((bucket: { Name: string }) => bucket.Name);
    const bucket = applied.resources.find((row) => row.type === 'AWS::S3::Bucket')?.physicalId;
    assert.ok(bucket !== null && bucket !== undefined && buckets.includes(bucket), `${bucket} in ${buckets.join(', ')}`);
  });

  test("every run's history (IaC runs, and the workflows that kept their stack turns) replays on this build's workflow code", async () => {
    const ids = [...(await worker.sandboxes.iac.list()).map((run) => run.workflowId), 'sandbox-iac-main', 'sandbox-iac-reviewed'];
    const histories = await fetchHistories(worker.client, ids);
    assert.ok(histories.length >= 10, `collected ${histories.length} histories`);
    await assertReplays(histories);
  });
});
