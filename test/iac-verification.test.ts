/**
 * An apply is checked by reading back what the plan set (issue 38, DESIGN §14) on a real
 * dev server, a real engine and real moto, with the AWS CLI as the witness: an update
 * moto drops (a bucket's versioning) is MISMATCHED, the apply FAILED and the sandbox put
 * back as it was; an update moto does apply (a queue's visibility timeout) is VERIFIED;
 * IAM roles and their inline policies, log groups, KMS keys and events rules are checked
 * through their own services, not taken on the stack's word. One sandbox, one worker.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ClientConfig } from '../src/domain/client-config';
import { PLANE_LABEL } from '../src/domain/docker-labels';
import type { IacResourceRow, IacStatus } from '../src/domain/iac/iac-run';
import { DockerContainerBroker } from '../src/docker';
import { awsCli } from './helpers/aws-cli';
import { createTestNamespace } from './helpers/test-namespace';
import { testTemporalAddress } from './harness/test-temporal';
import { startTestWorker, type TestWorker } from './harness/test-worker';

const motoImage = process.env.SANDBOXPLANE_MOTO_IMAGE;
const skip = motoImage === undefined && 'needs the moto image and the Docker engine (SANDBOXPLANE_MOTO_IMAGE, set by the test runner)';

const PRINCIPAL = 'agent-verify';
const SANDBOX = 'iac-verify';

const bucketAndQueue = (options: { versioning: boolean; visibilityTimeout: number }) => ({
  Resources: {
    Bucket: {
      Type: 'AWS::S3::Bucket',
      Properties: { BucketName: 'verify-bucket', ...(options.versioning ? { VersioningConfiguration: { Status: 'Enabled' } } : {}) },
    },
    Queue: { Type: 'AWS::SQS::Queue', Properties: { QueueName: 'verify-queue', VisibilityTimeout: options.visibilityTimeout } },
  },
});

const TRUST = { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' }] };

// As text, which CloudFormation takes too: moto 5.2.5 keeps an object KeyPolicy as it is and then fails (HTTP 500) on every call about the key.
const KEY_POLICY = { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Principal: { AWS: '*' }, Action: 'kms:*', Resource: '*' }] };

const IDENTITY_AND_OPERATIONS = `
Resources:
  Role:
    Type: AWS::IAM::Role
    Properties:
      RoleName: verify-role
      Path: /app/
      Description: runs the app
      MaxSessionDuration: 7200
      AssumeRolePolicyDocument: ${JSON.stringify(TRUST)}
  Policy:
    Type: AWS::IAM::Policy
    Properties:
      PolicyName: read-queues
      Roles: [!Ref Role]
      PolicyDocument:
        Version: "2012-10-17"
        Statement:
          - Effect: Allow
            Action: ["sqs:ReceiveMessage", "sqs:GetQueueAttributes"]
            Resource: "*"
  Logs:
    Type: AWS::Logs::LogGroup
    Properties:
      LogGroupName: /verify/app
      RetentionInDays: 14
  Key:
    Type: AWS::KMS::Key
    Properties:
      Description: the app's data key
      Enabled: true
      KeyPolicy: '${JSON.stringify(KEY_POLICY)}'
  Uploads:
    Type: AWS::Events::Rule
    Properties:
      Name: verify-uploads
      Description: objects landing in the bucket
      State: ENABLED
      EventPattern:
        source: [aws.s3]
        detail-type: [Object Created]
  Nightly:
    Type: AWS::Events::Rule
    Properties:
      Name: verify-nightly
      ScheduleExpression: cron(0 3 * * ? *)
      State: DISABLED
`;

/** `aws <args>` with the sandbox's own key and endpoint. */
const aws = awsCli;

const byLogicalId = (rows: readonly IacResourceRow[]) => Object.fromEntries(rows.map((row) => [row.logicalId, row]));

describe('an apply reads back what the plan set (real dev server, engine, moto and AWS CLI)', { skip }, () => {
  const broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
  let worker: TestWorker;
  let plane: string;
  let config: ClientConfig;
  let runs = 0;

  /** Applies `template` to `stack` as the agent and waits for the end: the run's status, FAILED too. */
  const apply = async (stack: string, template: string | Record<string, unknown>): Promise<IacStatus> => {
    const runId = `verify-${++runs}`;
    try {
      return await worker.sandboxes.iac.apply({ sandboxId: SANDBOX, principal: PRINCIPAL, stack, template, templateName: `${stack}.yaml`, runId }, { wait: 'ended' });
    } catch {
      return worker.sandboxes.iac.status(runId);
    }
  };

  before(async () => {
    const address = await testTemporalAddress();
    const namespace = await createTestNamespace(address, 'iac-verify');
    worker = await startTestWorker(address, { env: { TEMPORAL_NAMESPACE: namespace, SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1', SANDBOXPLANE_MOTO_IMAGE: motoImage as string } });
    plane = worker.plane.planeId;
    worker.store.policies.add({ principalPattern: PRINCIPAL, capability: 'cloud.sandbox', effect: 'allow' });
    worker.store.policies.add({ principalPattern: PRINCIPAL, capability: 'cloud.iac.local', effect: 'allow' });
    const services = ['s3', 'sqs', 'iam', 'logs', 'kms', 'events', 'cloudformation'];
    const sandbox = await worker.sandboxes.create({ id: SANDBOX, principal: PRINCIPAL, adapter: 'moto', services }, { wait: 'ready' });
    assert.ok(sandbox.clientConfig !== null);
    config = sandbox.clientConfig;
  });

  after(async () => {
    await worker?.stop();
    for (const container of await broker.list({ [PLANE_LABEL]: plane })) await broker.remove(container.id, { force: true });
  });

  test('versioning added to a bucket, which moto drops, is MISMATCHED: the apply FAILED and the sandbox is put back', async () => {
    const first = await apply('storage', bucketAndQueue({ versioning: false, visibilityTimeout: 30 }));
    assert.equal(first.state, 'APPLIED', first.waitingFor);
    assert.deepEqual(
      first.resources.map((row) => [row.logicalId, row.status]),
      [
        ['Bucket', 'VERIFIED'],
        ['Queue', 'VERIFIED'],
      ],
    );

    const updated = await apply('storage', bucketAndQueue({ versioning: true, visibilityTimeout: 30 }));
    assert.equal(updated.state, 'FAILED', updated.waitingFor);
    const bucket = byLogicalId(updated.resources).Bucket;
    assert.equal(bucket?.status, 'MISMATCHED', JSON.stringify(updated.resources));
    assert.deepEqual(bucket.mismatches, [{ path: 'Properties.VersioningConfiguration.Status', planned: 'Enabled', observed: null }]);
    assert.match(bucket.detail ?? '', /moto did not apply Properties\.VersioningConfiguration\.Status: planned Enabled, reads unset/);
    assert.equal(byLogicalId(updated.resources).Queue?.status, 'VERIFIED', 'what did not change still reads as planned');
    assert.match(updated.error?.message ?? '', /Bucket \(AWS::S3::Bucket\) is MISMATCHED/);
    // The AWS CLI agrees: the bucket is not versioned (an empty answer, no Status).
    const versioning = (await aws(config, ['s3api', 'get-bucket-versioning', '--bucket', 'verify-bucket'])).trim();
    assert.equal(versioning === '' ? undefined : (JSON.parse(versioning) as { Status?: string }).Status, undefined);
    // The checkpoint taken before the apply was put back: the stack holds the first template again.
    assert.match(updated.waitingFor, /put back as it was before the apply/);
    const held = JSON.parse(await aws(config, ['cloudformation', 'get-template', '--stack-name', 'storage'])).TemplateBody as unknown;
    assert.doesNotMatch(typeof held === 'string' ? held : JSON.stringify(held), /VersioningConfiguration/);
    assert.deepEqual(
      worker.store.sandboxes
        .audit(SANDBOX)
        .filter((row) => row.summary.iacRunId === updated.runId)
        .map((row) => row.action),
      ['iac_requested', 'iac_planned', 'iac_checkpoint', 'iac_failed', 'iac_rolled_back'],
    );
  });

  test("an update moto does apply (a queue's VisibilityTimeout 30 → 60) is VERIFIED, and the CLI reads 60", async () => {
    const applied = await apply('storage', bucketAndQueue({ versioning: false, visibilityTimeout: 60 }));
    assert.equal(applied.state, 'APPLIED', applied.waitingFor);
    assert.deepEqual(
      applied.resources.map((row) => [row.logicalId, row.status]),
      [
        ['Bucket', 'VERIFIED'],
        ['Queue', 'VERIFIED'],
      ],
    );
    const url = JSON.parse(await aws(config, ['sqs', 'get-queue-url', '--queue-name', 'verify-queue'])).QueueUrl as string;
    const attributes = JSON.parse(await aws(config, ['sqs', 'get-queue-attributes', '--queue-url', url, '--attribute-names', 'VisibilityTimeout'])).Attributes;
    assert.equal(attributes.VisibilityTimeout, '60');
  });

  test('a role with an inline policy, a log group, a KMS key and events rules are each checked through their own service: all VERIFIED', async () => {
    const applied = await apply('operations', IDENTITY_AND_OPERATIONS);
    assert.equal(applied.state, 'APPLIED', `${applied.waitingFor} ${JSON.stringify(applied.resources)}`);
    assert.deepEqual(
      applied.resources.map((row) => [row.logicalId, row.type, row.status]),
      [
        ['Key', 'AWS::KMS::Key', 'VERIFIED'],
        ['Logs', 'AWS::Logs::LogGroup', 'VERIFIED'],
        ['Nightly', 'AWS::Events::Rule', 'VERIFIED'],
        ['Policy', 'AWS::IAM::Policy', 'VERIFIED'],
        ['Role', 'AWS::IAM::Role', 'VERIFIED'],
        ['Uploads', 'AWS::Events::Rule', 'VERIFIED'],
      ],
      JSON.stringify(applied.resources),
    );
    const rows = byLogicalId(applied.resources);
    assert.equal(rows.Role?.physicalId, 'verify-role');
    assert.equal(rows.Logs?.physicalId, '/verify/app');
    // The witnesses: what the checker read is what the AWS CLI reads.
    const role = JSON.parse(await aws(config, ['iam', 'get-role', '--role-name', 'verify-role'])).Role as { Path: string; MaxSessionDuration: number };
    assert.deepEqual([role.Path, role.MaxSessionDuration], ['/app/', 7200]);
    const inline = JSON.parse(await aws(config, ['iam', 'get-role-policy', '--role-name', 'verify-role', '--policy-name', 'read-queues'])) as { PolicyName: string };
    assert.equal(inline.PolicyName, 'read-queues');
    const groups = JSON.parse(await aws(config, ['logs', 'describe-log-groups', '--log-group-name-prefix', '/verify/app'])).logGroups as { retentionInDays?: number }[];
    assert.equal(groups[0]?.retentionInDays, 14);
    const key = JSON.parse(await aws(config, ['kms', 'describe-key', '--key-id', rows.Key?.physicalId as string])).KeyMetadata as { Description: string };
    assert.equal(key.Description, "the app's data key");
    const nightly = JSON.parse(await aws(config, ['events', 'describe-rule', '--name', 'verify-nightly'])) as { State: string };
    assert.equal(nightly.State, 'DISABLED');
  });
  test('a bucket removed with DeletionPolicy Retain: the plan says retained, not data loss; moto deletes it all the same, which is MISMATCHED, never a proof', async () => {
    const kept = { Resources: { Kept: { Type: 'AWS::S3::Bucket', DeletionPolicy: 'Retain', Properties: { BucketName: 'verify-kept' } }, Q: { Type: 'AWS::SQS::Queue' } } };
    assert.equal((await apply('retained', kept)).state, 'APPLIED');
    const removed = await apply('retained', { Resources: { Q: { Type: 'AWS::SQS::Queue' } } });
    const change = removed.plan?.changes.find((one) => one.logicalId === 'Kept');
    assert.deepEqual([change?.action, change?.retained, change?.dataLoss], ['Remove', true, false]);
    // moto 5.2.5 deletes a resource its update removes from the stack, whatever its DeletionPolicy.
    const row = byLogicalId(removed.resources).Kept;
    assert.equal(row?.status, 'MISMATCHED', JSON.stringify(row));
    assert.deepEqual(row?.mismatches, [{ path: 'DeletionPolicy', planned: 'Retain', observed: 'deleted' }]);
    assert.equal(removed.state, 'FAILED');
    assert.match(removed.waitingFor, /put back as it was before the apply/);
    assert.match(await aws(config, ['s3api', 'list-buckets']), /verify-kept/, 'the checkpoint put the kept bucket back');
  });
});
