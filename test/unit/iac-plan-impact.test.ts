/**
 * What a plan says a change does (issue 38, DESIGN §14 "What a plan must say"): replacement
 * and data loss from the CloudFormation resource specification, Retain, what conditions,
 * mappings and outputs decide, refusals by name, and screening that sees removals.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { cloudFormationResourceSpec } from '../../src/adapters/cloudformation-resource-spec';
import { motoUpdateGap } from '../../src/adapters/moto-adapter';
import { planScreening, screenIacRun } from '../../src/domain/iac/iac-screening';
import { buildPlan, type PlanChange, type TemplateWithParameters } from '../../src/domain/iac/plan';
import { requiresRecreation } from '../../src/domain/iac/resource-spec';
import { validateTemplate } from '../../src/domain/iac/template';
import { readTemplateText } from '../../src/domain/iac/template-yaml';
import { FEATURE_FLAG_NAMES, type FeatureFlags } from '../../src/domain/feature-flags';
import type { PolicyRow } from '../../src/domain/policy';

const read = (yaml: string, parameters: Record<string, string> = {}): TemplateWithParameters => ({ template: validateTemplate(readTemplateText(yaml, 'test.yaml'), parameters), parameters });
const plan = (base: TemplateWithParameters | null, next: TemplateWithParameters, region = 'us-east-1') =>
  buildPlan({ stack: 'app', base, next, spec: cloudFormationResourceSpec, place: { target: 'sandbox:sbx-1', isSupported: () => true, pseudo: { 'AWS::Region': region } } });
const change = (changes: readonly PlanChange[], logicalId: string): PlanChange => {
  const found = changes.find((one) => one.logicalId === logicalId);
  assert.ok(found !== undefined, `${logicalId} in ${JSON.stringify(changes.map((one) => one.logicalId))}`);
  return found;
};

const TABLE = (key: string, policy = '') => `
Resources:
  Table:
    Type: AWS::DynamoDB::Table${policy}
    Properties:
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions: [{ AttributeName: ${key}, AttributeType: S }]
      KeySchema: [{ AttributeName: ${key}, KeyType: HASH }]
`;

describe('replacement and data loss, from the resource specification', () => {
  test('a DynamoDB key change replaces the table and loses its data', () => {
    const table = change(plan(read(TABLE('pk')), read(TABLE('id'))).changes, 'Table');
    assert.equal(table.action, 'Modify');
    assert.equal(table.replacement, 'True');
    assert.equal(table.dataLoss, true);
    assert.equal(table.retained, false);
    const key = table.properties.find((property) => property.path.startsWith('Properties.KeySchema'));
    assert.equal(key?.requiresRecreation, 'Always');
    const attributes = table.properties.find((property) => property.path.startsWith('Properties.AttributeDefinitions'));
    assert.equal(attributes?.requiresRecreation, 'Never');
  });

  test('UpdateReplacePolicy Retain keeps the replaced table: no data loss, retained', () => {
    const table = change(plan(read(TABLE('pk', '\n    UpdateReplacePolicy: Retain')), read(TABLE('id', '\n    UpdateReplacePolicy: Retain'))).changes, 'Table');
    assert.deepEqual([table.replacement, table.dataLoss, table.retained], ['True', false, true]);
  });

  test('an SQS VisibilityTimeout change is an update in place; a QueueName change a replacement', () => {
    const queue = (name: string, timeout: number) => read(`Resources:\n  Queue:\n    Type: AWS::SQS::Queue\n    Properties: { QueueName: ${name}, VisibilityTimeout: ${timeout} }\n`);
    const inPlace = change(plan(queue('orders', 30), queue('orders', 60)).changes, 'Queue');
    assert.deepEqual([inPlace.replacement, inPlace.dataLoss], ['False', false]);
    assert.equal(inPlace.properties[0]?.requiresRecreation, 'Never');
    const renamed = change(plan(queue('orders', 30), queue('orders-2', 30)).changes, 'Queue');
    assert.equal(renamed.replacement, 'True');
    assert.equal(renamed.dataLoss, cloudFormationResourceSpec.type('AWS::SQS::Queue')?.stateful, "data loss follows the specification's statefulness");
  });

  test('a replaced topic changes what refers to it: the subscription is replaced too, its TopicArn known after apply', () => {
    const topic = (name: string) =>
      read(`Resources:
  Topic: { Type: AWS::SNS::Topic, Properties: { TopicName: ${name} } }
  Queue: { Type: AWS::SQS::Queue }
  Sub:
    Type: AWS::SNS::Subscription
    Properties: { TopicArn: !Ref Topic, Protocol: sqs, Endpoint: !GetAtt Queue.Arn }
`);
    const { changes, warnings } = plan(topic('a'), topic('b'));
    assert.equal(change(changes, 'Topic').replacement, 'True');
    const sub = change(changes, 'Sub');
    assert.deepEqual(sub.properties, [{ path: 'Properties.TopicArn', before: { Ref: 'Topic' }, after: '(known after apply)', requiresRecreation: 'Always' }]);
    assert.equal(sub.replacement, 'True');
    assert.ok(warnings.some((warning) => warning.logicalId === 'Sub' && warning.code === 'REFERENCE_REPLACED'));
    assert.equal(
      changes.find((one) => one.logicalId === 'Queue'),
      undefined,
      'nothing refers to a replaced resource from the queue',
    );
  });

  test('removing a bucket loses its data; with DeletionPolicy Retain it is kept', () => {
    const bucket = (policy: string) => read(`Resources:\n  Bucket:\n    Type: AWS::S3::Bucket${policy}\n  Queue: { Type: AWS::SQS::Queue }\n`);
    const queueOnly = read('Resources:\n  Queue: { Type: AWS::SQS::Queue }\n');
    const removed = change(plan(bucket(''), queueOnly).changes, 'Bucket');
    assert.deepEqual([removed.action, removed.dataLoss, removed.retained, removed.replacement], ['Remove', true, false, null]);
    const kept = change(plan(bucket('\n    DeletionPolicy: Retain'), queueOnly).changes, 'Bucket');
    assert.deepEqual([kept.action, kept.dataLoss, kept.retained], ['Remove', false, true]);
    const snapshot = change(plan(bucket('\n    DeletionPolicy: Snapshot'), queueOnly).changes, 'Bucket');
    assert.deepEqual([snapshot.dataLoss, snapshot.retained], [true, false], 'CloudFormation snapshots no bucket: Snapshot deletes it');
    const database = read('Resources:\n  Db: { Type: AWS::RDS::DBInstance, DeletionPolicy: Snapshot, Properties: { Engine: postgres } }\n  Queue: { Type: AWS::SQS::Queue }\n');
    assert.equal(change(plan(database, queueOnly).changes, 'Db').dataLoss, false, 'a database removed with Snapshot keeps its data');
  });

  test('a logical id renamed while its name stays is a warning', () => {
    const before = read('Resources:\n  Old: { Type: AWS::SQS::Queue, Properties: { QueueName: orders } }\n');
    const after = read('Resources:\n  New: { Type: AWS::SQS::Queue, Properties: { QueueName: orders } }\n');
    assert.deepEqual(
      plan(before, after).warnings.map((warning) => `${warning.logicalId} ${warning.code}`),
      ['New NAME_KEPT_BY_NEW_ID'],
    );
  });

  test('a type the specification does not know may be replaced, and says so', () => {
    const custom = (size: number) => read(`Resources:\n  Thing: { Type: Custom::Thing, Properties: { ServiceToken: arn, Size: ${size} } }\n`);
    const { changes, warnings } = plan(custom(1), custom(2));
    assert.equal(change(changes, 'Thing').replacement, 'Conditional');
    assert.ok(warnings.some((warning) => warning.code === 'TYPE_NOT_IN_SPECIFICATION'));
  });
});

describe("the emulator's gaps are said before the apply", () => {
  const queue = (props: string) => read(`Resources:\n  Queue:\n    Type: AWS::SQS::Queue\n    Properties: { ${props} }\n`);
  const planAt = (base: TemplateWithParameters, next: TemplateWithParameters) =>
    buildPlan({ stack: 'app', base, next, spec: cloudFormationResourceSpec, place: { target: 'sandbox:sbx-1', isSupported: () => true, updateGaps: motoUpdateGap } });

  test('moto drops a queue DelaySeconds change: a warning names it; VisibilityTimeout, which it applies, warns nothing', () => {
    const dropped = planAt(queue('DelaySeconds: 0'), queue('DelaySeconds: 5')).warnings;
    assert.deepEqual(
      dropped.map((warning) => `${warning.logicalId} ${warning.code}`),
      ['Queue EMULATOR_CANNOT_UPDATE'],
    );
    assert.match(dropped[0]?.message ?? '', /this change sets DelaySeconds/);
    assert.deepEqual(planAt(queue('VisibilityTimeout: 30'), queue('VisibilityTimeout: 60')).warnings, []);
    assert.deepEqual(
      planAt(read(TABLE('pk')), read(TABLE('id'))).warnings.map((warning) => warning.code),
      ['EMULATOR_CANNOT_UPDATE'],
      'moto has no table update at all',
    );
  });
});

describe('every verdict is the specification’s', () => {
  const specDb = () => {
    const require = createRequire(__filename);
    return (
      require('@aws-cdk/aws-service-spec') as {
        loadAwsServiceSpecSync(): { lookup(...args: string[]): { only(): { properties: Record<string, { causesReplacement?: string }>; isStateful?: boolean } } };
      }
    ).loadAwsServiceSpecSync();
  };
  const CHECKED = [
    'AWS::S3::Bucket',
    'AWS::SQS::Queue',
    'AWS::DynamoDB::Table',
    'AWS::SNS::Topic',
    'AWS::SNS::Subscription',
    'AWS::SSM::Parameter',
    'AWS::IAM::Role',
    'AWS::IAM::Policy',
    'AWS::IAM::ManagedPolicy',
    'AWS::IAM::User',
    'AWS::KMS::Key',
    'AWS::Logs::LogGroup',
    'AWS::Events::Rule',
  ];
  const expected = (causes: string | undefined) => (causes === 'yes' ? 'Always' : causes === 'maybe' ? 'Conditionally' : 'Never');

  test('each property of the checked types, against @aws-cdk/aws-service-spec itself', () => {
    const db = specDb();
    for (const type of CHECKED) {
      const resource = db.lookup('resource', 'cloudFormationType', 'equals', type).only();
      assert.equal(cloudFormationResourceSpec.type(type)?.stateful, resource.isStateful === true, type);
      for (const [name, property] of Object.entries(resource.properties))
        assert.equal(requiresRecreation(cloudFormationResourceSpec, type, name), expected(property.causesReplacement), `${type}.${name}`);
    }
  });

  test('generated template pairs: the plan of a changed property says what the specification says', () => {
    const db = specDb();
    const cases = CHECKED.flatMap((type) =>
      Object.entries(db.lookup('resource', 'cloudFormationType', 'equals', type).only().properties).map(([name, property]) => ({ type, name, causes: property.causesReplacement })),
    );
    fc.assert(
      fc.property(fc.constantFrom(...cases), fc.string({ minLength: 1, maxLength: 8 }), fc.string({ minLength: 1, maxLength: 8 }), ({ type, name, causes }, a, b) => {
        fc.pre(a !== b);
        const side = (value: string) => ({ template: validateTemplate({ Resources: { R: { Type: type, Properties: { [name]: value } } } }, {}), parameters: {} });
        const modified = change(plan(side(a), side(b)).changes, 'R');
        const verdict = expected(causes);
        assert.equal(modified.properties[0]?.requiresRecreation, verdict);
        assert.equal(modified.replacement, verdict === 'Always' ? 'True' : verdict === 'Conditionally' ? 'Conditional' : 'False');
      }),
      { numRuns: 300 },
    );
  });
});

describe('what only the apply knows is shown as unknown, never unchanged', () => {
  test('a NoEcho value the stack gives back as **** shows every property using it as unknown, judged by the specification', () => {
    const db = (given: Record<string, string>) =>
      read('Parameters:\n  User: { Type: String, NoEcho: true }\nResources:\n  Db: { Type: AWS::RDS::DBInstance, Properties: { Engine: postgres, MasterUsername: !Ref User } }\n', given);
    const { changes, warnings } = plan(db({ User: '****' }), db({ User: 'admin2' }));
    const modified = change(changes, 'Db');
    assert.deepEqual(modified.properties, [{ path: 'Properties.MasterUsername', before: '****', after: '**** (unknown)', requiresRecreation: 'Always' }]);
    assert.equal(modified.replacement, 'True');
    assert.deepEqual(
      warnings.map((warning) => warning.code),
      ['NO_ECHO_UNKNOWN'],
    );
  });

  test('an SSM-typed parameter pointing at another SSM parameter changes what uses it; the same one is read at apply', () => {
    const instance = (path: string) =>
      read(
        `Parameters:\n  Ami: { Type: 'AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>', Default: ${path} }\nResources:\n  Vm: { Type: AWS::EC2::Instance, Properties: { ImageId: !Ref Ami } }\n`,
      );
    const moved = plan(instance('/aws/service/a'), instance('/aws/service/b'));
    assert.deepEqual(change(moved.changes, 'Vm').properties[0]?.after, '(SSM parameter /aws/service/b, read at apply)');
    const same = plan(instance('/aws/service/a'), instance('/aws/service/a'));
    assert.deepEqual(same.changes, []);
    assert.deepEqual(
      same.warnings.map((warning) => `${warning.logicalId} ${warning.code}`),
      ['Vm SSM_READ_AT_APPLY'],
    );
  });

  test('an output that refers to a replaced resource changes at apply, its export too', () => {
    const bucket = (name: string) =>
      read(`Resources:\n  B: { Type: AWS::S3::Bucket, Properties: { BucketName: ${name} } }\nOutputs:\n  Arn: { Value: !GetAtt B.Arn, Export: { Name: bucket-arn } }\n`);
    const { outputs, warnings } = plan(bucket('a'), bucket('b'));
    assert.deepEqual(outputs, [{ name: 'Arn', action: 'Modify', before: { Value: { 'Fn::GetAtt': ['B', 'Arn'] }, Export: 'bucket-arn' }, after: '(known after apply)' }]);
    assert.match(warnings.find((warning) => warning.logicalId === 'Arn')?.message ?? '', /its export, for every stack that imports it/);
  });
});

describe('conditions, mappings and outputs are evaluated', () => {
  const ENV = `
Parameters:
  Env: { Type: String, Default: dev, AllowedValues: [dev, prod] }
Conditions:
  IsProd: !Equals [!Ref Env, prod]
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      VisibilityTimeout: !If [IsProd, 120, 30]
  Archive:
    Type: AWS::S3::Bucket
    Condition: IsProd
Outputs:
  QueueUrl: { Value: !Ref Queue }
  ArchiveName: { Condition: IsProd, Value: !Ref Archive }
`;

  test('a resource whose condition is false is skipped, not added', () => {
    const dev = plan(null, read(ENV, { Env: 'dev' }));
    assert.deepEqual(
      dev.changes.map((one) => `${one.action} ${one.logicalId}`),
      ['Add Queue'],
    );
    assert.deepEqual(dev.skipped, [{ logicalId: 'Archive', condition: 'IsProd' }]);
    assert.deepEqual(dev.conditions, { IsProd: false });
    assert.deepEqual(
      dev.outputs.map((output) => `${output.action} ${output.name}`),
      ['Add QueueUrl'],
    );
  });

  test('prod → dev removes and modifies what CloudFormation would', () => {
    const { changes, outputs } = plan(read(ENV, { Env: 'prod' }), read(ENV, { Env: 'dev' }));
    assert.deepEqual(
      changes.map((one) => `${one.action} ${one.logicalId}`),
      ['Remove Archive', 'Modify Queue'],
    );
    assert.deepEqual(change(changes, 'Queue').properties, [{ path: 'Properties.VisibilityTimeout', before: 120, after: 30, requiresRecreation: 'Never' }]);
    assert.equal(change(changes, 'Archive').dataLoss, true);
    assert.deepEqual(
      outputs.map((output) => `${output.action} ${output.name}`),
      ['Remove ArchiveName'],
    );
  });

  test('a Mappings change that renames a queue is a replacement', () => {
    const mapped = (name: string) =>
      read(`
Mappings:
  Names: { us-east-1: { queue: ${name} } }
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties: { QueueName: !FindInMap [Names, !Ref AWS::Region, queue] }
`);
    const queue = change(plan(mapped('a'), mapped('b')).changes, 'Queue');
    assert.deepEqual(queue.properties, [{ path: 'Properties.QueueName', before: 'a', after: 'b', requiresRecreation: 'Always' }]);
    assert.equal(queue.replacement, 'True');
  });

  test('an Outputs-only change is in the plan', () => {
    const withOutput = (value: string) => read(`Resources:\n  Queue: { Type: AWS::SQS::Queue }\nOutputs:\n  Where: { Value: ${value}, Export: { Name: where } }\n`);
    const only = plan(withOutput('a'), withOutput('b'));
    assert.deepEqual(only.changes, []);
    assert.deepEqual(only.outputs, [{ name: 'Where', action: 'Modify', before: { Value: 'a', Export: 'where' }, after: { Value: 'b', Export: 'where' } }]);
    assert.notEqual(only.digest, plan(withOutput('a'), withOutput('a')).digest);
  });
});

describe('refused by name (INVALID_INPUT)', () => {
  const refused = (yaml: string, pattern: RegExp) =>
    assert.throws(
      () => read(yaml),
      (err: Error & { code?: string }) => err.code === 'INVALID_INPUT' && pattern.test(err.message),
    );

  test('a nested stack, Fn::Transform, a Transform section and serverless types', () => {
    refused(
      'Resources:\n  Inner: { Type: AWS::CloudFormation::Stack, Properties: { TemplateURL: http://x } }\n',
      /Resources\.Inner\.Type: AWS::CloudFormation::Stack is refused: a nested stack/,
    );
    refused("Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      Fn::Transform: { Name: AWS::Include, Parameters: { Location: 's3://b/k' } }\n", /Fn::Transform is refused/);
    refused('Transform: AWS::Serverless-2016-10-31\nResources:\n  Q: { Type: AWS::SQS::Queue }\n', /Transform: transforms/);
    refused('Resources:\n  F: { Type: AWS::Serverless::Function }\n', /AWS::Serverless::Function is refused/);
  });

  test('YAML aliases that expand past the template limit stop while the template is built', () => {
    const big = 'x'.repeat(512 * 1024);
    const text = `Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      A: &s "${big}"\n      B: [${Array.from({ length: 100 }, () => '*s').join(',')}]\n`;
    assert.ok(Buffer.byteLength(text) < 1024 * 1024);
    assert.throws(
      () => readTemplateText(text, 'bomb.yaml'),
      (err: Error & { code?: string }) => err.code === 'INVALID_INPUT' && /expands \(aliases included\) to more than the 1048576 bytes/.test(err.message),
    );
  });
});

describe('screening sees what the plan removes and what loses data', () => {
  const flags = Object.fromEntries(FEATURE_FLAG_NAMES.map((flag) => [flag, true])) as FeatureFlags;
  const row = (id: number, effect: PolicyRow['effect'], services: string[] | null): PolicyRow => ({
    id,
    principalPattern: 'agent-1',
    capability: 'cloud.iac.local',
    effect,
    maxTtlSeconds: null,
    services,
    maxConcurrent: null,
  });

  test('removing a table under a row that would ask a person for dynamodb asks a person', () => {
    const base = read(`${TABLE('pk')}  Queue: { Type: AWS::SQS::Queue }\n`);
    const next = read('Resources:\n  Queue: { Type: AWS::SQS::Queue }\n');
    const { changes } = plan(base, next);
    const policies = [row(1, 'allow', ['sqs']), row(2, 'require_approval', ['dynamodb'])];
    const templateOnly = screenIacRun({ principal: 'agent-1', capability: 'cloud.iac.local', template: next.template, flags, policies });
    const withPlan = screenIacRun({ principal: 'agent-1', capability: 'cloud.iac.local', template: next.template, flags, policies, plan: planScreening(changes) });
    assert.equal(templateOnly.effect, 'allow', 'the new template alone has no dynamodb');
    assert.equal(withPlan.effect, 'require_approval');
  });

  test('a data-loss change needs a person under an allow row', () => {
    const { changes } = plan(read(TABLE('pk')), read(TABLE('id')));
    const decision = screenIacRun({ principal: 'agent-1', capability: 'cloud.iac.local', flags, policies: [row(1, 'allow', null)], plan: planScreening(changes) });
    assert.equal(decision.effect, 'require_approval');
    assert.match(decision.reasons.join(' '), /loses data \(Table/);
  });
});
