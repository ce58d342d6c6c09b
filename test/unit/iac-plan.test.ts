/** The plane's own plan of an IaC change (DESIGN §14): the diff, what cannot be created, what touches security, the digest, the text a reviewer reads. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { cloudFormationResourceSpec } from '../../src/adapters/cloudformation-resource-spec';
import { buildPlan, diffTemplates, iacPlanSchema, planDigest, securityFindings, unsupportedResources, type IacPlan, type TemplateWithParameters } from '../../src/domain/iac/plan';
import { MAX_PLAN_DETAILS_CHARS, planDetailsMarkdown, planSummaryLine } from '../../src/domain/iac/plan-text';
import { validateTemplate, type CfnTemplate } from '../../src/domain/iac/template';
import { readTemplateText } from '../../src/domain/iac/template-yaml';

const read = (yaml: string, parameters: Record<string, string> = {}) => ({ template: validateTemplate(readTemplateText(yaml, 'test.yaml'), parameters), parameters });

/** The example: five resources, one of them a type moto lacks. */
const FIRST = read(`
AWSTemplateFormatVersion: 2010-09-09
Resources:
  Bucket:
    Type: AWS::S3::Bucket
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      VisibilityTimeout: 30
  Table:
    Type: AWS::DynamoDB::Table
    Properties:
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions: [{ AttributeName: id, AttributeType: S }]
      KeySchema: [{ AttributeName: id, KeyType: HASH }]
  Topic:
    Type: AWS::SNS::Topic
  Subscription:
    Type: AWS::SNS::Subscription
    Properties:
      Protocol: sqs
      TopicArn: !Ref Topic
      Endpoint: !GetAtt Queue.Arn
`);

const SECOND = read(`
AWSTemplateFormatVersion: 2010-09-09
Resources:
  Bucket:
    Type: AWS::S3::Bucket
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      VisibilityTimeout: 60
  Table:
    Type: AWS::DynamoDB::Table
    Properties:
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions: [{ AttributeName: id, AttributeType: S }]
      KeySchema: [{ AttributeName: id, KeyType: HASH }]
  Topic:
    Type: AWS::SNS::Topic
`);

const withoutSubscriptions = (type: string) => type !== 'AWS::SNS::Subscription';

interface BuildInput {
  target: string;
  stack: string;
  base: TemplateWithParameters | null;
  next: TemplateWithParameters;
  isSupported: (type: string) => boolean;
}
/** A plan for `target` as a docker worker makes it, judged by the resource specification. */
const build = ({ target, stack, base, next, isSupported }: BuildInput) => buildPlan({ stack, base, next, spec: cloudFormationResourceSpec, place: { target, isSupported } });
const summary = (changes: readonly { action: string; logicalId: string }[]) => changes.map((change) => `${change.action} ${change.logicalId}`);
const one = <T>(items: readonly T[], predicate: (item: T) => boolean): T => {
  const found = items.filter(predicate);
  assert.equal(found.length, 1, JSON.stringify(items));
  return found[0] as T;
};

describe('diffTemplates', () => {
  test('against nothing applied, every resource is an Add with each property before null', () => {
    const changes = diffTemplates(null, FIRST);
    assert.deepEqual(summary(changes), ['Add Bucket', 'Add Queue', 'Add Subscription', 'Add Table', 'Add Topic']);
    assert.deepEqual(
      one(changes, (change) => change.logicalId === 'Queue'),
      {
        action: 'Add',
        logicalId: 'Queue',
        type: 'AWS::SQS::Queue',
        properties: [{ path: 'Properties.VisibilityTimeout', before: null, after: 30 }],
      },
    );
    assert.deepEqual(one(changes, (change) => change.logicalId === 'Subscription').properties, [
      { path: 'Properties.Endpoint', before: null, after: { 'Fn::GetAtt': ['Queue', 'Arn'] } },
      { path: 'Properties.Protocol', before: null, after: 'sqs' },
      { path: 'Properties.TopicArn', before: null, after: { Ref: 'Topic' } },
    ]);
    assert.deepEqual(
      one(changes, (change) => change.logicalId === 'Table').properties.map((property) => property.path),
      [
        'Properties.AttributeDefinitions[0].AttributeName',
        'Properties.AttributeDefinitions[0].AttributeType',
        'Properties.BillingMode',
        'Properties.KeySchema[0].AttributeName',
        'Properties.KeySchema[0].KeyType',
      ],
    );
  });

  test('against the applied template: one Modify for the changed timeout, one Remove, nothing for what did not change', () => {
    assert.deepEqual(diffTemplates(FIRST, SECOND), [
      { action: 'Modify', logicalId: 'Queue', type: 'AWS::SQS::Queue', properties: [{ path: 'Properties.VisibilityTimeout', before: 30, after: 60 }] },
      {
        action: 'Remove',
        logicalId: 'Subscription',
        type: 'AWS::SNS::Subscription',
        properties: [
          { path: 'Properties.Endpoint', before: { 'Fn::GetAtt': ['Queue', 'Arn'] }, after: null },
          { path: 'Properties.Protocol', before: 'sqs', after: null },
          { path: 'Properties.TopicArn', before: { Ref: 'Topic' }, after: null },
        ],
      },
    ]);
    assert.deepEqual(diffTemplates(SECOND, SECOND), [], 'the same template plans nothing');
  });

  test('a changed parameter shows as a Modify of every resource that uses it, with the resolved values', () => {
    const yaml = `
Parameters:
  Env: { Type: String, Default: dev }
  Subnets: { Type: CommaDelimitedList, Default: 'a, b' }
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: !Sub 'orders-\${Env}'
      Tags: [{ Key: env, Value: !Ref Env }]
  Topic:
    Type: AWS::SNS::Topic
    Properties:
      TopicName: !Sub ['\${Prefix}-\${AWS::Region}', { Prefix: !Join ['-', [app, !Ref Env]] }]
      Other: !Join [',', !Ref Subnets]
  Table:
    Type: AWS::DynamoDB::Table
    Properties: { TableName: fixed }
`;
    const dev = read(yaml);
    const prod = read(yaml, { Env: 'prod', Subnets: 'a,b,c' });
    assert.deepEqual(diffTemplates(null, dev).find((change) => change.logicalId === 'Topic')?.properties, [
      { path: 'Properties.Other', before: null, after: 'a,b' },
      { path: 'Properties.TopicName', before: null, after: { 'Fn::Sub': ['app-dev-${AWS::Region}', { Prefix: 'app-dev' }] } },
    ]);
    assert.deepEqual(diffTemplates(dev, prod), [
      {
        action: 'Modify',
        logicalId: 'Queue',
        type: 'AWS::SQS::Queue',
        properties: [
          { path: 'Properties.QueueName', before: 'orders-dev', after: 'orders-prod' },
          { path: 'Properties.Tags[0].Value', before: 'dev', after: 'prod' },
        ],
      },
      {
        action: 'Modify',
        logicalId: 'Topic',
        type: 'AWS::SNS::Topic',
        properties: [
          { path: 'Properties.Other', before: 'a,b', after: 'a,b,c' },
          {
            path: 'Properties.TopicName',
            before: { 'Fn::Sub': ['app-dev-${AWS::Region}', { Prefix: 'app-dev' }] },
            after: { 'Fn::Sub': ['app-prod-${AWS::Region}', { Prefix: 'app-prod' }] },
          },
        ],
      },
    ]);
  });

  test('a NoEcho parameter never shows its value, but its change shows', () => {
    const yaml = `
Parameters:
  Password: { Type: String, NoEcho: true }
Resources:
  Db:
    Type: AWS::RDS::DBInstance
    Properties: { MasterUserPassword: !Ref Password, Url: !Sub 'db://admin:\${Password}@host' }
`;
    const first = read(yaml, { Password: 'hunter2' });
    const second = read(yaml, { Password: 'correct horse' });
    const text = JSON.stringify([diffTemplates(null, first), diffTemplates(first, second)]);
    assert.doesNotMatch(text, /hunter2|correct horse/);
    assert.deepEqual(diffTemplates(first, second)[0]?.properties, [
      { path: 'Properties.MasterUserPassword', before: '****', after: '**** (changed)' },
      { path: 'Properties.Url', before: 'db://admin:****@host', after: 'db://admin:**** (changed)@host' },
    ]);
    assert.deepEqual(diffTemplates(first, read(yaml, { Password: 'hunter2' })), []);
  });

  test('GetAtt, Refs to resources and other intrinsics stay symbolic and are compared as they are', () => {
    const before = read(`
Resources:
  Queue: { Type: AWS::SQS::Queue }
  Dlq: { Type: AWS::SQS::Queue }
  Topic:
    Type: AWS::SNS::Topic
    Properties: { Target: !GetAtt Queue.Arn, Name: !If [IsProd, !Ref Queue, !Ref 'AWS::NoValue'] }
    Condition: IsProd
Conditions:
  IsProd: !Equals [!Ref 'AWS::Region', us-east-1]
`);
    const after = read(`
Resources:
  Queue: { Type: AWS::SQS::Queue }
  Dlq: { Type: AWS::SQS::Queue }
  Topic:
    Type: AWS::SNS::Topic
    Properties: { Target: !GetAtt Dlq.Arn, Name: !If [IsProd, !Ref Queue, !Ref 'AWS::NoValue'] }
    Condition: IsProd
Conditions:
  IsProd: !Equals [!Ref 'AWS::Region', us-east-1]
`);
    assert.deepEqual(diffTemplates(before, after), [
      {
        action: 'Modify',
        logicalId: 'Topic',
        type: 'AWS::SNS::Topic',
        properties: [{ path: 'Properties.Target', before: { 'Fn::GetAtt': ['Queue', 'Arn'] }, after: { 'Fn::GetAtt': ['Dlq', 'Arn'] } }],
      },
    ]);
  });

  test('lists compare by index, attributes count, Metadata does not, paths sort naturally', () => {
    const before = read(`
Resources:
  Other: { Type: AWS::SQS::Queue }
  Queue:
    Type: AWS::SQS::Queue
    Metadata: { note: one }
    Properties:
      Tags: [{ Key: a, Value: '1' }, { Key: b, Value: '2' }, { Key: c, Value: '3' }, { Key: d, Value: '4' }, { Key: e, Value: '5' }, { Key: f, Value: '6' }, { Key: g, Value: '7' }, { Key: h, Value: '8' }, { Key: i, Value: '9' }, { Key: j, Value: '10' }]
`);
    const after = read(`
Resources:
  Other: { Type: AWS::SQS::Queue }
  Queue:
    Type: AWS::SQS::Queue
    Metadata: { note: two }
    DeletionPolicy: Retain
    DependsOn: Other
    Properties:
      Tags: [{ Key: a, Value: '1' }, { Key: b, Value: 'two' }, { Key: c, Value: '3' }, { Key: d, Value: '4' }, { Key: e, Value: '5' }, { Key: f, Value: '6' }, { Key: g, Value: '7' }, { Key: h, Value: '8' }, { Key: i, Value: '9' }, { Key: j, Value: '10' }, { Key: k, Value: '11' }]
`);
    assert.deepEqual(diffTemplates(before, after)[0]?.properties, [
      { path: 'DeletionPolicy', before: null, after: 'Retain' },
      { path: 'DependsOn[0]', before: null, after: 'Other' },
      { path: 'Properties.Tags[1].Value', before: '2', after: 'two' },
      { path: 'Properties.Tags[10].Key', before: null, after: 'k' },
      { path: 'Properties.Tags[10].Value', before: null, after: '11' },
    ]);
    const onlyMetadata = read(JSON.stringify(before.template).replace('"note":"one"', '"note":"three"'));
    assert.notDeepEqual(onlyMetadata.template, before.template);
    assert.deepEqual(diffTemplates(before, onlyMetadata), [], 'Metadata is not a change');
  });

  test('a type changed under one logical id is refused by name, as CloudFormation refuses it', () => {
    const before = read('Resources:\n  Thing: { Type: AWS::SQS::Queue, Properties: { A: 1 } }\n');
    const after = read('Resources:\n  Thing: { Type: AWS::SNS::Topic, Properties: { A: 1 } }\n');
    assert.throws(
      () => diffTemplates(before, after),
      (err: Error & { code?: string }) => err.code === 'INVALID_INPUT' && /Resources\.Thing: its type changes from AWS::SQS::Queue to AWS::SNS::Topic/.test(err.message),
    );
  });

  test('a key that would make a path ambiguous is quoted', () => {
    const next = read(`
Resources:
  Fn:
    Type: AWS::Lambda::Function
    Properties: { Environment: { Variables: { 'app.mode': fast } } }
`);
    assert.deepEqual(diffTemplates(null, next)[0]?.properties, [{ path: 'Properties.Environment.Variables["app.mode"]', before: null, after: 'fast' }]);
  });
});

describe('unsupportedResources', () => {
  test('names every resource of a type the emulator lacks, sorted', () => {
    assert.deepEqual(unsupportedResources(FIRST.template, withoutSubscriptions), [{ logicalId: 'Subscription', type: 'AWS::SNS::Subscription' }]);
    assert.deepEqual(
      unsupportedResources(FIRST.template, () => false).map((resource) => resource.logicalId),
      ['Bucket', 'Queue', 'Subscription', 'Table', 'Topic'],
    );
    assert.deepEqual(unsupportedResources(SECOND.template, withoutSubscriptions), []);
  });
});

describe('securityFindings', () => {
  const RISKY = read(`
Parameters:
  AdminCidr: { Type: String, Default: 0.0.0.0/0 }
Resources:
  Queue: { Type: AWS::SQS::Queue }
  Role:
    Type: AWS::IAM::Role
    Properties:
      AssumeRolePolicyDocument:
        Statement: [{ Effect: Allow, Principal: { Service: lambda.amazonaws.com }, Action: 'sts:AssumeRole' }]
  Site: 
    Type: AWS::S3::Bucket
    Properties:
      AccessControl: PublicRead
      PublicAccessBlockConfiguration: { BlockPublicAcls: false, BlockPublicPolicy: false, IgnorePublicAcls: true, RestrictPublicBuckets: true }
      WebsiteConfiguration: { IndexDocument: index.html }
  SitePolicy:
    Type: AWS::S3::BucketPolicy
    Properties:
      Bucket: !Ref Site
      PolicyDocument:
        Statement:
          - { Effect: Allow, Principal: '*', Action: 's3:GetObject', Resource: !Sub 'arn:aws:s3:::\${Site}/*' }
          - { Effect: Deny, Principal: { AWS: '*' }, Action: 's3:DeleteObject', Resource: '*' }
  Ssh:
    Type: AWS::EC2::SecurityGroup
    Properties:
      GroupDescription: ssh
      SecurityGroupIngress:
        - { IpProtocol: tcp, FromPort: 22, ToPort: 22, CidrIp: !Ref AdminCidr }
        - { IpProtocol: tcp, FromPort: 443, ToPort: 443, CidrIp: 10.0.0.0/8 }
        - { IpProtocol: '-1', CidrIpv6: '::/0' }
`);

  test('IAM, a policy that grants anyone, a public bucket and ingress from the whole internet are each named, with why', () => {
    const findings = securityFindings(null, diffTemplates(null, RISKY), RISKY.template);
    assert.deepEqual(
      findings.map(({ logicalId, reason }) => `${logicalId}: ${reason}`),
      [
        'Role: creates an IAM role',
        'Site: makes the bucket public (AccessControl PublicRead)',
        'Site: serves the bucket as a public website (WebsiteConfiguration)',
        'Site: turns off blocking of public access (BlockPublicAcls, BlockPublicPolicy false)',
        'SitePolicy: creates an S3 bucket policy',
        'SitePolicy: grants access to anyone (Principal "*")',
        'Ssh: creates a security group',
        'Ssh: opens all ports of every protocol to the whole internet (::/0)',
        'Ssh: opens port 22/tcp to the whole internet (0.0.0.0/0)',
      ],
    );
    assert.equal(one(findings, (finding) => finding.logicalId === 'Role').type, 'AWS::IAM::Role');
  });

  test('changes and removals say so; a change that touches nothing of security finds nothing', () => {
    const tightened = read(`
Resources:
  Queue: { Type: AWS::SQS::Queue, Properties: { VisibilityTimeout: 60 } }
  Ssh:
    Type: AWS::EC2::SecurityGroup
    Properties:
      GroupDescription: ssh
      SecurityGroupIngress: [{ IpProtocol: tcp, FromPort: 22, ToPort: 22, CidrIp: 10.0.0.0/8 }]
  Site:
    Type: AWS::S3::Bucket
`);
    const changes = diffTemplates(RISKY, tightened);
    assert.deepEqual(
      securityFindings(RISKY.template, changes, tightened.template).map(({ logicalId, reason }) => `${logicalId}: ${reason}`),
      ['Role: removes an IAM role', "Site: changes the bucket's public access settings", 'SitePolicy: removes an S3 bucket policy', 'Ssh: changes a security group'],
    );
    assert.deepEqual(securityFindings(FIRST.template, diffTemplates(FIRST, SECOND), SECOND.template), []);
  });

  test('a policy in any resource counts, also as JSON text; a Lambda permission for anyone is a grant to anyone', () => {
    const next = read(`
Resources:
  LogPolicy:
    Type: AWS::Logs::ResourcePolicy
    Properties: { PolicyName: p, PolicyDocument: '{"Statement":[{"Effect":"Allow","Principal":{"AWS":["*"]},"Action":"logs:PutLogEvents"}]}' }
  Invoke:
    Type: AWS::Lambda::Permission
    Properties: { Action: 'lambda:InvokeFunction', FunctionName: f, Principal: '*' }
  IotPolicy:
    Type: AWS::IoT::Policy
    Properties: { PolicyDocument: { Statement: [{ Effect: Allow, Action: 'iot:Connect', Resource: '*' }] } }
`);
    assert.deepEqual(
      securityFindings(null, diffTemplates(null, next), next.template).map(({ logicalId, reason }) => `${logicalId}: ${reason}`),
      [
        'Invoke: creates a Lambda permission (who may invoke a function)',
        'Invoke: grants access to anyone (Principal "*")',
        'IotPolicy: creates a policy (PolicyDocument)',
        'LogPolicy: creates a CloudWatch Logs resource policy',
        'LogPolicy: grants access to anyone (Principal "*")',
      ],
    );
  });
});

describe('the plan and its digest', () => {
  test('buildPlan composes the diff, the unsupported resources and the findings', () => {
    const plan = build({ target: 'sandbox:sbx-1', stack: 'orders', base: null, next: FIRST, isSupported: withoutSubscriptions });
    assert.deepEqual(summary(plan.changes), ['Add Bucket', 'Add Queue', 'Add Subscription', 'Add Table', 'Add Topic']);
    assert.deepEqual(plan.unsupported, [{ logicalId: 'Subscription', type: 'AWS::SNS::Subscription' }]);
    assert.deepEqual(plan.security, []);
    assert.match(plan.digest, /^[0-9a-f]{64}$/);
    const { crossCheck: _notes, ...contract } = plan;
    assert.deepEqual(iacPlanSchema.parse(JSON.parse(JSON.stringify(plan))), contract, 'the §11 shape survives JSON');
    assert.ok(!iacPlanSchema.safeParse({ ...plan, digest: 'ABC' }).success);
    assert.ok(!iacPlanSchema.safeParse({ ...plan, changes: [{ action: 'Replace', logicalId: 'Q', type: 'T', properties: [] }] }).success);
  });

  test('the digest does not depend on key order, and changes with anything it binds', () => {
    const plan = (input: Partial<BuildInput> = {}) => build({ target: 'sandbox:sbx-1', stack: 'orders', base: FIRST, next: SECOND, isSupported: withoutSubscriptions, ...input }).digest;
    const reordered = (template: CfnTemplate): CfnTemplate => JSON.parse(JSON.stringify(Object.fromEntries(Object.entries(template).reverse()))) as CfnTemplate;
    const reversedResources = { ...SECOND.template, Resources: Object.fromEntries(Object.entries(SECOND.template.Resources as object).reverse()) };
    assert.equal(plan({ next: { template: reordered(reversedResources), parameters: {} } }), plan());
    assert.equal(plan({ base: { template: reordered(FIRST.template), parameters: {} } }), plan());

    const digests = [
      plan(),
      plan({ stack: 'orders-2' }),
      plan({ target: 'sandbox:sbx-2' }),
      plan({ base: null }),
      plan({ isSupported: (type) => type !== 'AWS::SNS::Topic' }),
      plan({ next: read(JSON.stringify({ ...SECOND.template, Description: 'x' })) }),
      plan({ base: read(JSON.stringify({ ...FIRST.template, Description: 'applied' })) }),
    ];
    assert.equal(new Set(digests).size, digests.length, 'every difference gives another digest');

    const input = { target: 'sandbox:sbx-1', stack: 's', template: SECOND.template, parameters: {}, baseTemplateDigest: null, changes: [], unsupported: [], security: [] };
    assert.equal(planDigest(input), planDigest({ ...input }));
    assert.notEqual(planDigest(input), planDigest({ ...input, parameters: { A: 'b' } }));
  });
});

describe('plan text', () => {
  const context = { runId: 'run-7', stack: 'orders', target: 'sandbox-abc', principal: 'agent-1', state: 'AWAITING_APPROVAL', waitingFor: 'Waiting for an approver to approve plan.' };

  test('shows the digest in full, every change, the unsupported and how to approve with that digest', () => {
    const plan = build({ target: 'sandbox:sbx-1', stack: 'orders', base: FIRST, next: SECOND, isSupported: withoutSubscriptions });
    const text = planDetailsMarkdown(plan, context);
    assert.match(text, /AWAITING_APPROVAL/);
    assert.match(text, /sandbox-abc/);
    assert.match(text, /Waiting for an approver to approve plan\./);
    assert.ok(text.includes(plan.digest));
    assert.ok(text.includes('`Properties.VisibilityTimeout`: `30` → `60`'), text);
    assert.ok(text.includes('**Remove** `Subscription` (`AWS::SNS::Subscription`)'));
    assert.match(text, /### Unsupported \(will NOT be created there\)\n\n- none/);
    assert.ok(text.includes('sandboxctl iac approve run-7 --approver NAME --code NNNNNN'));
    const payload = /```\n(\{[^`]*\})\n```/.exec(text)?.[1] ?? '';
    assert.deepEqual(JSON.parse(payload), { approver: '<your name>', reason: '<why>', code: '<6 digits>', planDigest: plan.digest }, 'the signal payload, with this digest');
    assert.ok(
      payload.split('\n').every((line) => line.length <= 90),
      'one field a line: the UI does not wrap a code block',
    );
    assert.match(text, /### Security\n\n- none/);
    assert.equal(planSummaryLine(plan), '0 to add, 1 to change, 1 to remove; 0 unsupported; 0 security');

    const added = planDetailsMarkdown(build({ target: 'sandbox:sbx-1', stack: 'orders', base: null, next: FIRST, isSupported: withoutSubscriptions }), context);
    assert.ok(added.includes('**Add** `Subscription` (`AWS::SNS::Subscription`) — **not created there**'), 'an unsupported Add says so where it is listed');

    const applied = planDetailsMarkdown(plan, { ...context, state: 'APPLIED', waitingFor: 'Applied.' });
    assert.doesNotMatch(applied, /iac approve/);
  });

  test('stays within 16,000 characters, listing the first changes and counting the rest', () => {
    const resources = Object.fromEntries(
      Array.from({ length: 2000 }, (_, index) => [`Queue${index}`, { Type: 'AWS::SQS::Queue', Properties: { VisibilityTimeout: index, Name: 'x'.repeat(200) } }]),
    );
    const plan = build({ target: 'sandbox:sbx-1', stack: 'big', base: null, next: read(JSON.stringify({ Resources: resources })), isSupported: () => false });
    const text = planDetailsMarkdown(plan, context);
    assert.ok(text.length <= MAX_PLAN_DETAILS_CHARS, `${text.length} characters`);
    const shown = text.split('\n').filter((line) => line.startsWith('- **Add**')).length;
    assert.ok(shown > 10, `${shown} changes shown`);
    assert.ok(text.endsWith(`… and ${2000 - shown} more changes (\`sandboxctl iac status run-7 --json\` shows all)`), text.slice(-200));
    assert.ok(text.includes(plan.digest) && text.includes('sandboxctl iac approve run-7'), 'the digest and how to approve survive the cut');
    assert.match(text, /- … and \d+ more \(`sandboxctl iac status run-7 --json` shows all\)/, 'the unsupported list is cut too');
    assert.match(text, /"xxxxxxxxx[x]*…`/, 'long values are cut');

    const huge = build({
      target: 'sandbox:sbx-1',
      stack: 'big',
      base: null,
      next: read(JSON.stringify({ Resources: { Queue: { Type: 'AWS::SQS::Queue', Properties: { Tags: Array.from({ length: 3000 }, (_, index) => ({ Key: `k${index}`, Value: 'v' })) } } } })),
      isSupported: () => true,
    });
    const hugeText = planDetailsMarkdown(huge, context);
    assert.ok(hugeText.length <= MAX_PLAN_DETAILS_CHARS);
    assert.match(hugeText, /- \*\*Add\*\* `Queue`[\s\S]*  - … and \d+ more properties of this change/);
  });

  test("the template's text cannot break out of its code spans", () => {
    const plan: IacPlan = {
      digest: 'a'.repeat(64),
      changes: [
        {
          action: 'Add',
          logicalId: 'Queue',
          type: 'AWS::SQS::Queue',
          properties: [{ path: 'Properties.Name', before: null, after: 'x` **approved**\n## Approved by ops\u001b[2K' }],
          replacement: null,
          dataLoss: false,
          retained: false,
        },
      ],
      unsupported: [],
      security: [],
      conditions: {},
      skipped: [],
      outputs: [],
      warnings: [],
    };
    const text = planDetailsMarkdown(plan, context);
    assert.doesNotMatch(text, /^## Approved/m);
    assert.doesNotMatch(text, /\u001b/);
    assert.ok(text.includes('``"x` **approved**\\n## Approved by ops\\u001b[2K"``'), text);
  });
});
