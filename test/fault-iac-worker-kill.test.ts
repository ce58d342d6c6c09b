import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CloudFormationClient, ListChangeSetsCommand, ListStacksCommand } from '@aws-sdk/client-cloudformation';
import { GetQueueUrlCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { ClientConfig } from '../src/domain/client-config';
import type { IacStatus } from '../src/domain/iac/iac-run';
import { ChildProcessPlane } from './helpers/child-process-plane';
import { eventually } from './harness/eventually';
import type { WorkerProcess } from './harness/worker-process';

const TEMPLATE = JSON.stringify({
  Resources: {
    First: { Type: 'AWS::SQS::Queue', Properties: { QueueName: 'killed-first' } },
    Second: { Type: 'AWS::SQS::Queue', Properties: { QueueName: 'killed-second' } },
    Bucket: { Type: 'AWS::S3::Bucket', Properties: { BucketName: 'killed-bucket' } },
  },
});

/**
 * Fault campaign for IaC (issue 25): `sandboxctl worker` is a real child process,
 * SIGKILLed the moment an approved run starts its apply, and again once its history shows
 * the change set's execution started; a fresh worker is started each time. The run must
 * still end with a verdict, having executed its change set once: one stack, every
 * resource there, nothing twice.
 */
describe('fault campaign: SIGKILL of the worker during an IaC apply', () => {
  let plane: ChildProcessPlane;
  let worker: WorkerProcess;
  let config: ClientConfig;
  let run: IacStatus;

  before(async () => {
    plane = await ChildProcessPlane.start({
      namespace: 'fault-iac',
      env: { SANDBOXPLANE_FLAG_IAC_LOCAL: '1' },
      seed: [
        ['policy', 'add', '--principal', 'gated-*', '--capability', 'cloud.sandbox', '--effect', 'allow'],
        ['policy', 'add', '--principal', 'gated-*', '--capability', 'cloud.iac.local', '--effect', 'require_approval'],
        ['approvers', 'add', 'alice'],
      ],
    });
  });

  after(async () => {
    if (run !== undefined) {
      await plane.client.workflow
        .getHandle(run.workflowId)
        .terminate('fault test clean-up')
        .catch(() => undefined);
    }
    await plane?.dispose();
  });

  /** The activities of the run whose start reached the history. */
  const startedActivities = async (): Promise<string[]> => {
    const { events } = await plane.client.workflow.getHandle(run.workflowId).fetchHistory();
    const names = new Map(
      (events ?? []).flatMap((event) => (event.activityTaskScheduledEventAttributes ? [[String(event.eventId), event.activityTaskScheduledEventAttributes.activityType?.name ?? '']] : [])),
    );
    return (events ?? []).flatMap((event) => (event.activityTaskStartedEventAttributes ? [names.get(String(event.activityTaskStartedEventAttributes.scheduledEventId)) ?? ''] : []));
  };

  test('killed as the approved apply starts and as its change set executes: the run ends APPLIED, its change set executed once', async () => {
    worker = await plane.startWorker();
    const id = plane.id('iac');
    const sandbox = await plane.sandboxes.create({ id, principal: 'gated-1', adapter: 'moto', services: ['s3', 'sqs', 'cloudformation'] }, { wait: 'ready' });
    assert.ok(sandbox.clientConfig !== null);
    config = sandbox.clientConfig;
    run = await plane.sandboxes.iac.apply({ sandboxId: id, principal: 'gated-1', template: TEMPLATE, templateName: 'killed.json', stack: 'killed' });
    assert.equal(run.state, 'AWAITING_APPROVAL');

    // The approval's answer is the hook: the run goes on to apply the moment it is judged.
    await plane.sandboxes.iac.approve(run.runId, { approver: 'alice', code: await plane.authenticator('alice').code() });
    await worker.kill();
    worker = await plane.startWorker();

    await eventually(
      'the execution to start in the history',
      async () => ((await startedActivities()).some((name) => name === 'executeIacChange' || name === 'settleIacChange') ? true : undefined),
      90_000,
    );
    await worker.kill();
    worker = await plane.startWorker();

    const ended = await eventually(
      'the run to end',
      async () => {
        const status = await plane.sandboxes.iac.status(run.runId);
        return status.state === 'APPLYING' ? undefined : status;
      },
      120_000,
    );
    assert.equal(ended.state, 'APPLIED', `${ended.waitingFor}\n${worker.output()}`);
    assert.deepEqual(
      ended.resources.map((row) => [row.logicalId, row.status]),
      [
        ['Bucket', 'VERIFIED'],
        ['First', 'VERIFIED'],
        ['Second', 'VERIFIED'],
      ],
    );

    const cloudFormation = new CloudFormationClient({ ...config, maxAttempts: 1 });
    const sqs = new SQSClient({ ...config, maxAttempts: 1 });
    try {
      const stacks = (await cloudFormation.send(new ListStacksCommand({}))).StackSummaries ?? [];
      assert.deepEqual(
        stacks.filter((stack) => stack.StackStatus !== 'DELETE_COMPLETE').map((stack) => [stack.StackName, stack.StackStatus]),
        [['killed', 'CREATE_COMPLETE']],
        'one stack, created once',
      );
      const changeSets = (await cloudFormation.send(new ListChangeSetsCommand({ StackName: 'killed' }))).Summaries ?? [];
      assert.deepEqual(
        changeSets.map((changeSet) => [changeSet.ChangeSetName, changeSet.ExecutionStatus]),
        [[`sandboxplane-${run.runId}`, 'EXECUTE_COMPLETE']],
        "the run's one change set, executed",
      );
      for (const name of ['killed-first', 'killed-second']) assert.match((await sqs.send(new GetQueueUrlCommand({ QueueName: name }))).QueueUrl ?? '', new RegExp(name));
    } finally {
      cloudFormation.destroy();
      sqs.destroy();
    }
  });
});
