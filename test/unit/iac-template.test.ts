/** Reading and checking CloudFormation templates (DESIGN §14): what the plane accepts, and how it says what to fix. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { isSandboxPlaneError } from '../../src/domain/errors';
import { canonicalJson, defaultStackName, MAX_TEMPLATE_BYTES, STACK_NAME_PATTERN, stackNameSchema, validateTemplate } from '../../src/domain/iac/template';
import { readTemplateText } from '../../src/domain/iac/template-yaml';

/** Asserts `run` throws INVALID_INPUT whose message matches every pattern. */
function assertInvalid(run: () => unknown, ...patterns: RegExp[]): string {
  let message = '';
  assert.throws(run, (err: unknown) => {
    assert.ok(isSandboxPlaneError(err), `a SandboxPlaneError, got ${String(err)}`);
    assert.equal(err.code, 'INVALID_INPUT');
    message = err.message;
    return true;
  });
  for (const pattern of patterns) assert.match(message, pattern);
  return message;
}

const queueTemplate = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  Resources: { Queue: { Type: 'AWS::SQS::Queue', Properties: properties } },
  ...extra,
});

describe('readTemplateText', () => {
  test('turns every short-form tag, nested, into its JSON form', () => {
    const yaml = `
AWSTemplateFormatVersion: 2010-09-09
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      Ref: !Ref Param
      GetAttDotted: !GetAtt Db.Endpoint.Address
      GetAttList: !GetAtt [Queue, Arn]
      Condition: !Condition IsProd
      Sub: !Sub 'q-\${AWS::Region}'
      SubList: !Sub ['\${A}-x', { A: !Ref Param }]
      Join: !Join [',', [!Sub '\${Param}-a', !GetAtt Queue.Arn, !Ref 'AWS::NoValue']]
      Select: !Select [0, !GetAZs '']
      Split: !Split [',', !ImportValue Shared]
      If: !If [IsProd, !Base64 { 'Fn::Sub': 'x' }, !Cidr [10.0.0.0/16, 4, 8]]
      Equals: !Equals [!Ref Param, prod]
      Not: !Not [!Equals [a, b]]
      And: !And [!Condition A, !Or [!Condition B, !Condition C]]
      FindInMap: !FindInMap [Map, !Ref 'AWS::Region', Ami]
      Transform: !Transform { Name: 'AWS::Include', Parameters: { Location: s3://b/k } }
      Length: !Length [1, 2]
      ToJson: !ToJsonString { a: [1, 2] }
      InSequence: [!GetAtt Queue.Arn, !Ref Param]
`;
    assert.deepEqual(readTemplateText(yaml, 'app.yaml'), {
      AWSTemplateFormatVersion: '2010-09-09',
      Resources: {
        Queue: {
          Type: 'AWS::SQS::Queue',
          Properties: {
            Ref: { Ref: 'Param' },
            GetAttDotted: { 'Fn::GetAtt': ['Db', 'Endpoint.Address'] },
            GetAttList: { 'Fn::GetAtt': ['Queue', 'Arn'] },
            Condition: { Condition: 'IsProd' },
            Sub: { 'Fn::Sub': 'q-${AWS::Region}' },
            SubList: { 'Fn::Sub': ['${A}-x', { A: { Ref: 'Param' } }] },
            Join: { 'Fn::Join': [',', [{ 'Fn::Sub': '${Param}-a' }, { 'Fn::GetAtt': ['Queue', 'Arn'] }, { Ref: 'AWS::NoValue' }]] },
            Select: { 'Fn::Select': [0, { 'Fn::GetAZs': '' }] },
            Split: { 'Fn::Split': [',', { 'Fn::ImportValue': 'Shared' }] },
            If: { 'Fn::If': ['IsProd', { 'Fn::Base64': { 'Fn::Sub': 'x' } }, { 'Fn::Cidr': ['10.0.0.0/16', 4, 8] }] },
            Equals: { 'Fn::Equals': [{ Ref: 'Param' }, 'prod'] },
            Not: { 'Fn::Not': [{ 'Fn::Equals': ['a', 'b'] }] },
            And: { 'Fn::And': [{ Condition: 'A' }, { 'Fn::Or': [{ Condition: 'B' }, { Condition: 'C' }] }] },
            FindInMap: { 'Fn::FindInMap': ['Map', { Ref: 'AWS::Region' }, 'Ami'] },
            Transform: { 'Fn::Transform': { Name: 'AWS::Include', Parameters: { Location: 's3://b/k' } } },
            Length: { 'Fn::Length': [1, 2] },
            ToJson: { 'Fn::ToJsonString': { a: [1, 2] } },
            InSequence: [{ 'Fn::GetAtt': ['Queue', 'Arn'] }, { Ref: 'Param' }],
          },
        },
      },
    });
  });

  test('scalars read as CloudFormation means them: dates and yes/no stay text, numbers stay numbers', () => {
    const read = readTemplateText('AWSTemplateFormatVersion: 2010-09-09\nA: yes\nB: no\nC: 30\nD: 1.5\nE: true\nF: ~\nG: "30"\nH: 2024-01-02T03:04:05Z\n', 't.yaml');
    assert.deepEqual(read, { AWSTemplateFormatVersion: '2010-09-09', A: 'yes', B: 'no', C: 30, D: 1.5, E: true, F: null, G: '30', H: '2024-01-02T03:04:05Z' });
    assertInvalid(() => readTemplateText('A: !!timestamp 2010-09-09\n', 't.yaml'), /t\.yaml:1:4: unknown tag tag:yaml\.org,2002:timestamp/);
  });

  test('JSON reads as JSON, and anchors and aliases as the values they name', () => {
    const json = { Resources: { Queue: { Type: 'AWS::SQS::Queue', Properties: { VisibilityTimeout: 30, Tags: [{ Key: 'a', Value: 'b' }] } } } };
    assert.deepEqual(readTemplateText(`\n  ${JSON.stringify(json, null, 2)}`, 't.json'), json);
    assert.deepEqual(readTemplateText('Tags: &tags [{Key: a, Value: b}]\nOther: *tags\n', 't.yaml'), { Tags: [{ Key: 'a', Value: 'b' }], Other: [{ Key: 'a', Value: 'b' }] });
  });

  test('broken text is INVALID_INPUT naming the file and the line and column', () => {
    assertInvalid(() => readTemplateText('Resources:\n  Queue:\n    Type: [AWS::SQS::Queue\n', 'broken.yaml'), /^broken\.yaml:\d+:\d+: /);
    assertInvalid(() => readTemplateText('{\n  "Resources": {\n    "Queue": { "Type": "AWS::SQS::Queue" "x": 1 }\n  }\n}\n', 'broken.json'), /^broken\.json:3:\d+: /);
    assertInvalid(() => readTemplateText('Resources:\n  Queue: !Bogus x\n', 't.yaml'), /^t\.yaml:2:10: unknown tag !Bogus \(known: !Ref, /);
    assertInvalid(() => readTemplateText('Resources:\n  A: 1\n  A: 2\n', 't.yaml'), /^t\.yaml:3:3: .*unique/);
    assertInvalid(() => readTemplateText('A: !Ref [x, y]\n', 't.yaml'), /^t\.yaml:1:4: !Ref takes a name/);
    assertInvalid(() => readTemplateText('A: !GetAtt Queue\n', 't.yaml'), /^t\.yaml:1:12: !GetAtt Queue: write LogicalId\.Attribute/);
  });

  test('a document that is not a mapping is refused', () => {
    assertInvalid(() => readTemplateText('- a\n- b\n', 'list.yaml'), /^list\.yaml:1:1: the document is a sequence; a template is a mapping/);
    assertInvalid(() => readTemplateText('just text\n', 'text.yaml'), /^text\.yaml:1:1: the document is a scalar/);
    assertInvalid(() => readTemplateText('# only a comment\n', 'empty.yaml'), /^empty\.yaml:\d+:\d+: the document is empty/);
    assertInvalid(() => readTemplateText('a: 1\n---\nb: 2\n', 'two.yaml'), /^two\.yaml:/);
  });

  test('text over 1 MiB is refused before it is parsed', () => {
    // Broken YAML: the size is what it is refused for, so the parser never saw it.
    const text = `A: [${'x'.repeat(MAX_TEMPLATE_BYTES)}`;
    assertInvalid(() => readTemplateText(text, 'big.yaml'), /^big\.yaml: \d+ bytes, more than the 1048576/);
    // Bytes, not characters: 'é' is two bytes in UTF-8.
    assertInvalid(() => readTemplateText(`A: ${'é'.repeat(MAX_TEMPLATE_BYTES / 2)}`, 'wide.yaml'), /more than the 1048576/);
  });
});

describe('validateTemplate', () => {
  test('returns the template as given, frozen', () => {
    const template = {
      AWSTemplateFormatVersion: '2010-09-09',
      Parameters: { Env: { Type: 'String', Default: 'dev' } },
      Resources: {
        Queue: { Type: 'AWS::SQS::Queue', Properties: { QueueName: { 'Fn::Sub': '${Env}-${AWS::Region}-${Topic.TopicName}-${!Literal}' } } },
        Topic: { Type: 'AWS::SNS::Topic', DependsOn: 'Queue', Properties: { Name: { 'Fn::GetAtt': ['Queue', 'QueueName'] } } },
      },
    };
    const valid = validateTemplate(template, { Env: 'prod' });
    assert.deepEqual(valid, template);
    assert.ok(Object.isFrozen(valid) && Object.isFrozen((valid.Resources as Record<string, object>).Queue));
    assert.ok(!Object.isFrozen(template), 'the caller keeps a template it can change');
  });

  test('an unknown intrinsic function is refused naming its path', () => {
    assertInvalid(
      () => validateTemplate(queueTemplate({ Name: { 'Fn::Bogus': 'x' } }), {}),
      /Resources\.Queue\.Properties\.Name: unknown intrinsic function Fn::Bogus \(known: Ref, Fn::Base64/,
    );
    assertInvalid(
      () => validateTemplate(queueTemplate({ Tags: [{ Key: 'k', Value: { 'Fn::Nope': [] } }] }), {}),
      /Resources\.Queue\.Properties\.Tags\[0\]\.Value: unknown intrinsic function Fn::Nope/,
    );
    assertInvalid(
      () => validateTemplate(queueTemplate({ Name: { 'Fn::Sub': 'x', Extra: 1 } }), {}),
      /Resources\.Queue\.Properties\.Name: an intrinsic function is an object with exactly one key/,
    );
  });

  test('a Ref must name a parameter, a resource or a pseudo parameter', () => {
    const template = queueTemplate({ A: { Ref: 'Queue' }, B: { Ref: 'AWS::Region' }, C: { Ref: 'Env' } }, { Parameters: { Env: { Type: 'String', Default: 'dev' } } });
    validateTemplate(template, {});
    assertInvalid(
      () => validateTemplate(queueTemplate({ A: { Ref: 'Missing' } }), {}),
      /Resources\.Queue\.Properties\.A\.Ref: Missing is not a declared parameter, a resource or a pseudo parameter \(AWS::AccountId/,
    );
    assertInvalid(() => validateTemplate(queueTemplate({ A: { 'Fn::Sub': 'x-${Missing}' } }), {}), /\$\{Missing\} is not a variable/);
    assertInvalid(() => validateTemplate(queueTemplate({ A: { 'Fn::GetAtt': ['Missing', 'Arn'] } }), {}), /Fn::GetAtt: Missing is not a resource of this template/);
  });

  test('given parameters must be declared, and every parameter without a Default must be given', () => {
    const template = queueTemplate({ Name: { Ref: 'Env' }, Size: { Ref: 'Size' } }, { Parameters: { Env: { Type: 'String' }, Size: { Type: 'Number', Default: 1 } } });
    validateTemplate(template, { Env: 'dev' });
    assertInvalid(() => validateTemplate(template, { Env: 'dev', Stage: 'x' }), /parameters\.Stage: not a parameter of this template \(declared: Env, Size\)/);
    assertInvalid(() => validateTemplate(template, {}), /parameters\.Env: required \(Parameters\.Env has no Default\)/);
    assertInvalid(() => validateTemplate(queueTemplate({}), { Stage: 'x' }), /parameters\.Stage: not a parameter of this template \(the template declares none\)/);
    assertInvalid(
      () => validateTemplate(queueTemplate({}, { Parameters: { 'Bad-Name': { Type: 'String', Default: '' } } }), {}),
      /Parameters\.Bad-Name: a parameter name must be 1-255 letters or digits/,
    );
  });

  test('every problem is listed at once', () => {
    const message = assertInvalid(
      () =>
        validateTemplate(
          {
            Transform: 'AWS::Serverless-2016-10-31',
            Outputz: {},
            Resources: { 'bad-id': { Type: 'S3Bucket' }, Queue: { Type: 'AWS::SQS::Queue', Properties: [] }, Custom: { Type: 'Custom::Thing' } },
          },
          {},
        ),
      /Transform: transforms \(e\.g\. AWS::Serverless\) are not supported: expand them before planning/,
      /Outputz: not a template section \(allowed: AWSTemplateFormatVersion, Description/,
      /Resources\.bad-id: a logical id must be 1-255 letters or digits/,
      /Resources\.bad-id\.Type: "S3Bucket" is not a resource type/,
      /Resources\.Queue\.Properties: must be an object, got a list/,
    );
    assert.doesNotMatch(message, /Resources\.Custom/, 'Custom::Name is a resource type');
  });

  test('Resources must be a non-empty object; the template a JSON object', () => {
    assertInvalid(() => validateTemplate({ Resources: {} }, {}), /Resources: must declare at least one resource/);
    assertInvalid(() => validateTemplate({ Description: 'x' }, {}), /Resources: required/);
    assertInvalid(() => validateTemplate([], {}), /template: must be a JSON object .*got a list/);
    assertInvalid(() => validateTemplate(queueTemplate({}, { AWSTemplateFormatVersion: new Date(0) }), {}), /AWSTemplateFormatVersion: a Date is not a JSON value/);
  });

  test('a template whose JSON is over 1 MiB is refused', () => {
    const big = queueTemplate({ Policy: 'x'.repeat(MAX_TEMPLATE_BYTES) });
    assertInvalid(() => validateTemplate(big, {}), /template: \d+ bytes of JSON, more than the 1048576 allowed/);
  });
});

describe('stack names', () => {
  test('the schema takes 1-128 letters, digits and dashes starting with a letter', () => {
    for (const good of ['a', 'my-app', 'Stack2', `a${'-'.repeat(127)}`]) assert.ok(stackNameSchema.safeParse(good).success, good);
    for (const bad of ['', '1app', '-app', 'my_app', 'my app', 'my.app', `a${'b'.repeat(128)}`, 'ünïcode']) {
      const parsed = stackNameSchema.safeParse(bad);
      assert.ok(!parsed.success, bad);
      assert.match(parsed.error.issues[0]?.message ?? '', /must be 1-128 letters, digits or dashes, starting with a letter/);
    }
  });

  test('defaultStackName derives a readable name from a file, a folder or a CDK stack', () => {
    assert.equal(defaultStackName('my_app.template.yaml'), 'my-app');
    assert.equal(defaultStackName('./infra/cdk.out/MyStack.template.json'), 'MyStack');
    assert.equal(defaultStackName('C:\\work\\queues.yml'), 'queues');
    assert.equal(defaultStackName('cdk-app/'), 'cdk-app');
    assert.equal(defaultStackName('2024 plan!!.yaml'), 'stack-2024-plan');
    assert.equal(defaultStackName('.yaml'), 'stack');
    assert.equal(defaultStackName('x'.repeat(300)).length, 128);
  });

  test('defaultStackName always gives a valid stack name', () => {
    fc.assert(
      fc.property(fc.fullUnicodeString({ maxLength: 300 }), (name) => STACK_NAME_PATTERN.test(defaultStackName(name))),
      { numRuns: 2000 },
    );
  });
});

describe('canonicalJson', () => {
  test('the same value in any key order gives the same text; lists keep their order', () => {
    assert.equal(canonicalJson({ b: 1, a: { d: [3, 1], c: null } }), '{"a":{"c":null,"d":[3,1]},"b":1}');
    assert.equal(canonicalJson({ 10: 'x', 2: 'y', a: undefined }), '{"10":"x","2":"y"}', 'keys sorted as text, not as numbers');
    const shuffled = (value: unknown): unknown =>
      Array.isArray(value)
        ? value.map(shuffled)
        : value !== null && typeof value === 'object'
          ? Object.fromEntries(
              Object.entries(value)
                .reverse()
                .map(([key, item]) => [key, shuffled(item)]),
            )
          : value;
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalJson(value);
        assert.equal(canonicalJson(shuffled(value)), text);
        assert.deepEqual(JSON.parse(text), JSON.parse(JSON.stringify(value)));
      }),
      { numRuns: 500 },
    );
  });
});
