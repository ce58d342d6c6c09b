/**
 * A plan a reviewer can trust (issue 38, DESIGN §14 "What a plan must say") on a real dev
 * server, engine and moto, through the CLI, the MCP server and the AWS CLI as witness:
 * replacements and data loss named from the resource specification (and a person asked),
 * conditions, mappings and outputs evaluated, removals screened by their service, refusals
 * by name that leave the process up, and NoEcho values in no decoded history, CLI output
 * or SQLite file.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startCodecServer, type CodecServer } from '../src/codec/codec-server';
import { payloadCodecFor } from '../src/codec/codec-settings';
import type { ClientConfig } from '../src/domain/client-config';
import { PLANE_LABEL } from '../src/domain/docker-labels';
import { IAC_RUNS_IN_FLIGHT_PER_PRINCIPAL, type IacStatus } from '../src/domain/iac/iac-run';
import { iacWorkflowIdFor } from '../src/domain/contract-names';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { PlanChange } from '../src/domain/iac/plan';
import { locateTemporalCli } from '../src/temporal-dev/temporal-cli';
import { DockerContainerBroker } from '../src/docker';
import { enrolApprover, type TestAuthenticator } from './helpers/approvers';
import { awsCli } from './helpers/aws-cli';
import { runCli } from './harness/cli';
import { cliFailure, cliOutput } from './helpers/cli-json';
import { mcpServerTransport } from './helpers/mcp-transport';
import { createTestNamespace } from './helpers/test-namespace';
import { testTemporalAddress } from './harness/test-temporal';
import { startTestWorker, type TestWorker } from './harness/test-worker';

const motoImage = process.env.SANDBOXPLANE_MOTO_IMAGE;
const skip = motoImage === undefined && 'needs the moto image and the Docker engine (SANDBOXPLANE_MOTO_IMAGE, set by the test runner)';

const TABLE = (key: string) => `
Resources:
  Table:
    Type: AWS::DynamoDB::Table
    Properties:
      TableName: trust-table
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions: [{ AttributeName: ${key}, AttributeType: S }]
      KeySchema: [{ AttributeName: ${key}, KeyType: HASH }]
`;
const QUEUE = (timeout: number) => `{"Resources": {"Queue": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "trust-queue", "VisibilityTimeout": ${timeout}}}}}`;
const ENV = `
Parameters:
  Env: { Type: String, Default: dev, AllowedValues: [dev, prod] }
Conditions:
  IsProd: !Equals [!Ref Env, prod]
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: trust-env-queue
      VisibilityTimeout: !If [IsProd, 120, 30]
  Archive:
    Type: AWS::S3::Bucket
    Condition: IsProd
    Properties: { BucketName: trust-archive }
Outputs:
  QueueUrl: { Value: !Ref Queue }
  ArchiveName: { Condition: IsProd, Value: !Ref Archive }
`;
const MAPPED = (name: string) => `
Mappings:
  Names: { us-east-1: { queue: ${name} } }
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties: { QueueName: !FindInMap [Names, !Ref AWS::Region, queue] }
`;
const WITH_OUTPUT = (value: string) => `Resources:\n  Queue: { Type: AWS::SQS::Queue, Properties: { QueueName: trust-out } }\nOutputs:\n  Where: { Value: ${value} }\n`;
const SECRET = `
Parameters:
  Secret: { Type: String, NoEcho: true }
Resources:
  Param:
    Type: AWS::SSM::Parameter
    Properties: { Name: /trust/secret, Type: String, Value: !Ref Secret }
`;

/** `aws <args>` with the sandbox's own key and endpoint. */
const aws = awsCli;

/** Every string of a JSON document, and what it says read as base64 (payload bytes are base64 in it). */
function readableTexts(value: unknown): string[] {
  if (typeof value === 'string') return [value, Buffer.from(value, 'base64').toString('latin1')];
  if (Array.isArray(value)) return value.flatMap(readableTexts);
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([key, inner]) => [key, ...readableTexts(inner)]);
  return [];
}

const changeOf = (status: IacStatus, logicalId: string): PlanChange => {
  const found = status.plan?.changes.find((change) => change.logicalId === logicalId);
  assert.ok(found !== undefined, `${logicalId} in ${JSON.stringify(status.plan?.changes)}`);
  return found;
};

describe('a plan a reviewer can trust (real dev server, engine, moto and AWS CLI)', { skip }, () => {
  const broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-iac-trust-'));
  const file = (name: string, text: string) => {
    const at = path.join(dir, name);
    fs.writeFileSync(at, text);
    return at;
  };
  let worker: TestWorker;
  let config: ClientConfig;
  let alice: TestAuthenticator;
  let codecServer: CodecServer;
  const sandboxId = 'iac-trust';
  const agent = 'agent-trust';
  const outputs: string[] = [];
  const asAgent = async (...args: string[]) => {
    const result = await runCli([...args, '--json'], { ...worker.env, SANDBOXPLANE_PRINCIPAL: agent });
    outputs.push(result.stdout, result.stderr);
    return result;
  };
  const apply = async (stack: string, text: string, ...extra: string[]) =>
    cliOutput<IacStatus>(await asAgent('iac', 'apply', sandboxId, '--template', file(`${stack}.yaml`, text), '--stack', stack, '--wait', ...extra));
  const plan = async (stack: string, text: string, ...extra: string[]) =>
    cliOutput<IacStatus>(await asAgent('iac', 'plan', sandboxId, '--template', file(`${stack}-next.yaml`, text), '--stack', stack, ...extra));

  before(async () => {
    const address = await testTemporalAddress();
    const namespace = await createTestNamespace(address, 'iac-trust');
    worker = await startTestWorker(address, { env: { TEMPORAL_NAMESPACE: namespace, SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1', SANDBOXPLANE_MOTO_IMAGE: motoImage as string } });
    worker.store.policies.add({ principalPattern: agent, capability: 'cloud.sandbox', effect: 'allow' });
    worker.store.policies.add({ principalPattern: agent, capability: 'cloud.iac.local', effect: 'allow' });
    alice = await enrolApprover(worker, 'alice');
    const sandbox = await worker.sandboxes.create({ id: sandboxId, principal: agent, adapter: 'moto', services: ['s3', 'sqs', 'dynamodb', 'ssm', 'cloudformation'] }, { wait: 'ready' });
    assert.ok(sandbox.clientConfig !== null);
    config = sandbox.clientConfig;
    codecServer = await startCodecServer({ codec: payloadCodecFor(worker.config.codec), port: 0, origins: [] });
  });

  after(async () => {
    await codecServer?.close();
    await worker?.stop();
    for (const container of await broker.list({ [PLANE_LABEL]: worker.plane.planeId })) await broker.remove(container.id, { force: true });
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a DynamoDB key change is a replacement that loses data: under an allow row, a person is asked', async () => {
    assert.equal((await apply('table', TABLE('pk'))).state, 'APPLIED');
    const waiting = cliOutput<IacStatus>(await asAgent('iac', 'apply', sandboxId, '--template', file('table-2.yaml', TABLE('id')), '--stack', 'table'));
    assert.equal(waiting.state, 'AWAITING_APPROVAL', waiting.waitingFor);
    assert.equal(waiting.approvalsNeeded, 1);
    const table = changeOf(waiting, 'Table');
    assert.deepEqual([table.action, table.replacement, table.dataLoss, table.retained], ['Modify', 'True', true, false]);
    assert.equal(table.properties.find((property) => property.path.startsWith('Properties.KeySchema'))?.requiresRecreation, 'Always');
    assert.equal(waiting.decision?.effect, 'require_approval');
    assert.match(waiting.decision?.reasons.join(' ') ?? '', /loses data \(Table/);
    const denied = cliOutput<IacStatus>(await runCli(['iac', 'deny', waiting.runId, '--approver', 'alice', '--code', await alice.code(), '--json'], worker.env));
    assert.equal(denied.state, 'DENIED');
    assert.equal(JSON.parse(await aws(config, ['dynamodb', 'describe-table', '--table-name', 'trust-table'])).Table.KeySchema[0].AttributeName, 'pk', 'nothing was applied');
  });

  test('an SQS VisibilityTimeout change is an update in place, applied without a person', async () => {
    assert.equal((await apply('queue', QUEUE(30))).state, 'APPLIED');
    const applied = await apply('queue', QUEUE(60));
    assert.equal(applied.state, 'APPLIED', applied.waitingFor);
    const queue = changeOf(applied, 'Queue');
    assert.deepEqual([queue.replacement, queue.dataLoss], ['False', false]);
    assert.deepEqual(queue.properties, [{ path: 'Properties.VisibilityTimeout', before: 30, after: 60, requiresRecreation: 'Never' }]);
    assert.equal(applied.approvalsNeeded, 0);
  });

  test('conditions are evaluated: false skips, prod → dev removes and modifies, outputs follow', async () => {
    const dev = await plan('env', ENV, '--parameter', 'Env=dev');
    assert.deepEqual(
      dev.plan?.changes.map((change) => `${change.action} ${change.logicalId}`),
      ['Add Queue'],
    );
    assert.deepEqual(dev.plan?.skipped, [{ logicalId: 'Archive', condition: 'IsProd' }]);
    assert.deepEqual(dev.plan?.conditions, { IsProd: false });
    assert.equal((await apply('env', ENV, '--parameter', 'Env=prod')).state, 'APPLIED');
    assert.match(await aws(config, ['s3api', 'list-buckets']), /trust-archive/);
    const toDev = await plan('env', ENV, '--parameter', 'Env=dev');
    assert.deepEqual(
      toDev.plan?.changes.map((change) => `${change.action} ${change.logicalId}`),
      ['Remove Archive', 'Modify Queue'],
    );
    assert.deepEqual(changeOf(toDev, 'Queue').properties, [{ path: 'Properties.VisibilityTimeout', before: 120, after: 30, requiresRecreation: 'Never' }]);
    assert.equal(changeOf(toDev, 'Archive').dataLoss, true);
    assert.deepEqual(
      toDev.plan?.outputs.map((output) => `${output.action} ${output.name}`),
      ['Remove ArchiveName'],
    );
  });

  test('a Mappings change that renames a queue plans its replacement; an Outputs-only change is in the plan', async () => {
    assert.equal((await apply('mapped', MAPPED('trust-mapped-a'))).state, 'APPLIED');
    const renamed = changeOf(await plan('mapped', MAPPED('trust-mapped-b')), 'Queue');
    assert.deepEqual(renamed.properties, [{ path: 'Properties.QueueName', before: 'trust-mapped-a', after: 'trust-mapped-b', requiresRecreation: 'Always' }]);
    assert.equal(renamed.replacement, 'True');
    assert.equal((await apply('out', WITH_OUTPUT('a'))).state, 'APPLIED');
    const outputsOnly = await plan('out', WITH_OUTPUT('b'));
    assert.deepEqual(outputsOnly.plan?.changes, []);
    assert.deepEqual(outputsOnly.plan?.outputs, [{ name: 'Where', action: 'Modify', before: { Value: 'a' }, after: { Value: 'b' } }]);
  });

  test('what a change removes is screened by its service: a deny row for dynamodb refuses removing a table', async () => {
    const both = `${TABLE('pk').replace('trust-table', 'trust-screened')}  Queue: { Type: AWS::SQS::Queue }\n`;
    assert.equal((await apply('screened', both)).state, 'APPLIED');
    const row = worker.store.policies.add({ principalPattern: agent, capability: 'cloud.iac.local', effect: 'deny', services: ['dynamodb'] });
    try {
      const refused = cliFailure(
        await asAgent('iac', 'plan', sandboxId, '--template', file('screened-2.yaml', 'Resources:\n  Queue: { Type: AWS::SQS::Queue }\n'), '--stack', 'screened'),
        3,
        'POLICY_DENIED',
      );
      assert.match(refused.message, /dynamodb: policy row \d+ says deny.*screened with what the plan removes/);
    } finally {
      worker.store.policies.remove(row.id);
    }
  });

  test('refused by name with INVALID_INPUT (exit 2): a nested stack, Fn::Transform, a type change, an alias bomb; the MCP server stays up', async () => {
    const refused = async (name: string, text: string, pattern: RegExp, stack = 'refused') => {
      const error = cliFailure(await asAgent('iac', 'plan', sandboxId, '--template', file(name, text), '--stack', stack), 2, 'INVALID_INPUT');
      assert.match(error.message, pattern);
    };
    await refused(
      'nested.yaml',
      'Resources:\n  Inner: { Type: AWS::CloudFormation::Stack, Properties: { TemplateURL: "http://s3.localhost/b/inner.json" } }\n',
      /AWS::CloudFormation::Stack is refused: a nested stack/,
    );
    await refused(
      'transform.yaml',
      "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      Fn::Transform: { Name: AWS::Include, Parameters: { Location: 's3://b/k' } }\n",
      /Fn::Transform is refused/,
    );
    await refused('retyped.json', '{"Resources": {"Queue": {"Type": "AWS::S3::Bucket"}}}', /Resources\.Queue: its type changes from AWS::SQS::Queue to AWS::S3::Bucket/, 'queue');
    const bomb = `Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      A: &s "${'x'.repeat(512 * 1024)}"\n      B: [${Array.from({ length: 100_000 }, () => '*s').join(',')}]\n`;
    await refused('bomb.yaml', bomb, /expands \(aliases included\) to more than the 1048576 bytes/);

    const client = new McpClient({ name: 'trust-test', version: '1.0.0' });
    await client.connect(mcpServerTransport(worker.env, agent, 'warn'));
    try {
      const call = async (args: Record<string, unknown>) => (await client.callTool({ name: 'plan_iac', arguments: args })) as CallToolResult;
      const bombed = await call({ sandboxId, template: bomb, templateName: 'bomb.yaml' });
      assert.equal(bombed.isError, true);
      assert.match(JSON.stringify(bombed.structuredContent), /INVALID_INPUT/);
      const after = await call({ sandboxId, template: QUEUE(30), templateName: 'queue.json', stack: 'queue' });
      assert.equal((after.structuredContent as unknown as IacStatus).state, 'PLANNED', 'the same server plans the next template');
    } finally {
      await client.close();
    }
  });

  test('a NoEcho value reaches the emulator, and no decoded history, CLI output or SQLite file holds it', async () => {
    const secret = `s3cret-${randomUUID()}`;
    const applied = await apply('secret', SECRET, '--parameter', `Secret=${secret}`);
    assert.equal(applied.state, 'APPLIED', applied.waitingFor);
    assert.equal(JSON.parse(await aws(config, ['ssm', 'get-parameter', '--name', '/trust/secret'])).Parameter.Value, secret, 'the change set got the value itself');
    const again = await plan('secret', SECRET, '--parameter', `Secret=${secret}`);
    assert.deepEqual(again.plan?.changes, [], 'the same value sealed afresh is no change');
    const changed = await plan('secret', SECRET, '--parameter', `Secret=${secret}-2`);
    assert.deepEqual(
      changeOf(changed, 'Param').properties.map((property) => [property.before, property.after]),
      [['****', '**** (changed)']],
    );

    const { stdout } = await promisify(execFile)(
      locateTemporalCli(process.env.SANDBOXPLANE_TEMPORAL_CLI),
      [
        'workflow',
        'show',
        '--workflow-id',
        `iac-${applied.runId}`,
        '--address',
        worker.config.temporalAddress,
        '--namespace',
        worker.config.temporalNamespace,
        '--output',
        'json',
        '--codec-endpoint',
        codecServer.url,
      ],
      { maxBuffer: 64 * 1024 * 1024 },
    );
    const decoded = readableTexts(JSON.parse(stdout) as unknown);
    assert.ok(
      decoded.some((text) => text.includes('sandboxplane-sealed:v1:')),
      'the decoded history holds the sealed value',
    );
    assert.equal(decoded.filter((text) => text.includes(secret)).length, 0, 'and never the value');
    assert.equal(outputs.filter((text) => text.includes(secret)).length, 0, 'no CLI output holds it');
    const dbFiles = fs.readdirSync(path.dirname(worker.config.storePath)).filter((name) => name.startsWith(path.basename(worker.config.storePath)));
    for (const name of dbFiles) assert.equal(fs.readFileSync(path.join(path.dirname(worker.config.storePath), name)).includes(secret), false, `${name} holds it`);
  });

  test('a template policy refuses never reaches history; a principal holds at most 8 IaC runs open, and a repeated request joins its own', async () => {
    const row = worker.store.policies.add({ principalPattern: agent, capability: 'cloud.iac.local', effect: 'deny', services: ['sqs'] });
    try {
      const refused = cliFailure(await asAgent('iac', 'plan', sandboxId, '--template', file('denied.json', QUEUE(30)), '--stack', 'denied', '--run-id', 'denied-run'), 3, 'POLICY_DENIED');
      assert.match(refused.message, /refused before it started: sqs: policy row \d+ says deny/);
      await assert.rejects(worker.client.workflow.getHandle(iacWorkflowIdFor('denied-run')).describe(), WorkflowNotFoundError, 'no run, so no template in history');
    } finally {
      worker.store.policies.remove(row.id);
    }

    const asked = worker.store.policies.add({ principalPattern: agent, capability: 'cloud.iac.local', effect: 'require_approval' });
    const held = Array.from({ length: IAC_RUNS_IN_FLIGHT_PER_PRINCIPAL }, (_, index) => `held-${index}`);
    const queue = (name: string) => `{"Resources": {"Queue": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "trust-${name}"}}}}`;
    try {
      for (const name of held) {
        const waiting = cliOutput<IacStatus>(await asAgent('iac', 'apply', sandboxId, '--template', file(`${name}.json`, queue(name)), '--stack', name, '--run-id', name));
        assert.equal(waiting.state, 'AWAITING_APPROVAL', waiting.waitingFor);
      }
      const over = cliFailure(
        await asAgent('iac', 'apply', sandboxId, '--template', file('one-more.json', queue('one-more')), '--stack', 'one-more', '--run-id', 'one-more'),
        3,
        'QUOTA_EXCEEDED',
      );
      assert.match(over.message, new RegExp(`${agent} has ${IAC_RUNS_IN_FLIGHT_PER_PRINCIPAL} IaC runs open`));
      await assert.rejects(worker.client.workflow.getHandle(iacWorkflowIdFor('one-more')).describe(), WorkflowNotFoundError, 'nothing started');
      const joined = cliOutput<IacStatus>(await asAgent('iac', 'apply', sandboxId, '--template', file('held-0.json', queue('held-0')), '--stack', 'held-0', '--run-id', 'held-0'));
      assert.deepEqual([joined.runId, joined.state], ['held-0', 'AWAITING_APPROVAL'], 'the same request joins its run');
    } finally {
      worker.store.policies.remove(asked.id);
      // Nobody approves them: an operator ends them, as one would a run left waiting.
      for (const runId of held)
        await worker.client.workflow
          .getHandle(iacWorkflowIdFor(runId))
          .terminate('test over')
          .catch(() => undefined);
    }
  });
});
