/** What a template comes to before apply: conditions, Fn::If, mappings, lists, Sub, NoValue, unknowns kept unknown, NoEcho values never shown. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { validateTemplate, type CfnTemplate } from '../../src/domain/iac/template';
import { evaluateTemplate, parameterContext, type EvaluationContext } from '../../src/domain/iac/template-evaluation';
import { readTemplateText } from '../../src/domain/iac/template-yaml';

const read = (yaml: string, parameters: Record<string, string> = {}) => validateTemplate(readTemplateText(yaml, 'test.yaml'), parameters);

/** The template read and evaluated with `given` parameters, NoEcho ones masked as `****`. */
function evaluate(yaml: string, given: Record<string, string> = {}, pseudo: EvaluationContext['pseudo'] = {}) {
  const template = read(yaml, given);
  return evaluateTemplate(template, { ...parameterContext(template, given, () => '****'), pseudo });
}

const propertiesOf = (evaluated: ReturnType<typeof evaluate>, logicalId: string): unknown => evaluated.resources[logicalId]?.resource.Properties;

const PROD_AND_DEV = `
Parameters:
  Env: { Type: String, AllowedValues: [dev, prod], Default: dev }
Conditions:
  IsProd: !Equals [!Ref Env, prod]
Resources:
  Table:
    Type: AWS::DynamoDB::Table
    Condition: IsProd
    DeletionPolicy: !If [IsProd, Retain, Delete]
    Properties:
      TableName: !Sub 'orders-\${Env}'
  Queue:
    Type: AWS::SQS::Queue
    Metadata: { Owner: !Ref Env }
    Properties:
      QueueName: !Join ['-', [orders, !Ref Env]]
      VisibilityTimeout: !If [IsProd, 60, !Ref 'AWS::NoValue']
      SecurityGroups: [sg-1, !Ref 'AWS::NoValue', !If [IsProd, sg-2, !Ref 'AWS::NoValue']]
Outputs:
  TableName:
    Condition: IsProd
    Value: !Ref Table
    Export: { Name: !Sub '\${Env}-table' }
  QueueUrl:
    Value: !Ref Queue
`;

describe('evaluateTemplate: conditions', () => {
  test('dev: the prod-only table is skipped, the timeout and the list item go, the prod-only output is left out', () => {
    const dev = evaluate(PROD_AND_DEV);
    assert.deepEqual(dev.conditions, { IsProd: false });
    assert.deepEqual(Object.keys(dev.resources), ['Queue']);
    assert.deepEqual(dev.skipped, [{ logicalId: 'Table', condition: 'IsProd' }]);
    assert.deepEqual(dev.resources.Queue, {
      resource: {
        Type: 'AWS::SQS::Queue',
        Metadata: { Owner: { Ref: 'Env' } },
        Properties: { QueueName: 'orders-dev', SecurityGroups: ['sg-1'] },
      },
    });
    assert.deepEqual(dev.outputs, { QueueUrl: { value: { Ref: 'Queue' } } });
  });

  test('prod: the table is created with its condition, attributes resolved, and its output exported', () => {
    const prod = evaluate(PROD_AND_DEV, { Env: 'prod' });
    assert.deepEqual(prod.conditions, { IsProd: true });
    assert.deepEqual(prod.skipped, []);
    assert.deepEqual(prod.resources.Table, {
      resource: { Type: 'AWS::DynamoDB::Table', Condition: 'IsProd', DeletionPolicy: 'Retain', Properties: { TableName: 'orders-prod' } },
      condition: { name: 'IsProd', value: true },
    });
    assert.deepEqual(propertiesOf(prod, 'Queue'), { QueueName: 'orders-prod', VisibilityTimeout: 60, SecurityGroups: ['sg-1', 'sg-2'] });
    assert.deepEqual(prod.outputs.TableName, { value: { Ref: 'Table' }, exportName: 'prod-table', condition: { name: 'IsProd', value: true } });
  });

  test('numbers and text compare as text; a condition may name one declared after it', () => {
    const evaluated = evaluate(
      `
Parameters:
  Size: { Type: Number, Default: 3 }
Conditions:
  Both: !And [!Condition IsThree, !Condition IsText]
  IsThree: !Equals [!Ref Size, 3]
  IsText: !Equals ['3', !Ref Size]
  NotThree: !Not [!Condition IsThree]
Resources:
  Queue: { Type: AWS::SQS::Queue }
`,
    );
    assert.deepEqual(evaluated.conditions, { Both: true, IsThree: true, IsText: true, NotThree: false });
  });

  test('a condition on an SSM parameter is unknown: its resource is kept with value null and Fn::If stays whole', () => {
    const evaluated = evaluate(`
Parameters:
  Flag: { Type: 'AWS::SSM::Parameter::Value<String>', Default: /app/flag }
Conditions:
  FlagOn: !Equals [!Ref Flag, 'on']
Resources:
  Topic:
    Type: AWS::SNS::Topic
    Condition: FlagOn
    Properties:
      TopicName: !If [FlagOn, on-topic, !Ref 'AWS::NoValue']
      DisplayName: !Ref Flag
`);
    assert.deepEqual(evaluated.conditions, { FlagOn: null });
    assert.deepEqual(evaluated.skipped, []);
    assert.deepEqual(evaluated.resources.Topic?.condition, { name: 'FlagOn', value: null });
    assert.deepEqual(propertiesOf(evaluated, 'Topic'), {
      TopicName: { 'Fn::If': ['FlagOn', 'on-topic', { Ref: 'AWS::NoValue' }] },
      DisplayName: { Ref: 'Flag' },
    });
  });

  test('And and Or with an unknown operand: decided by a false And or a true Or, unknown otherwise', () => {
    const evaluated = evaluate(`
Parameters:
  Env: { Type: String, Default: dev }
Conditions:
  IsDev: !Equals [!Ref Env, dev]
  IsProd: !Equals [!Ref Env, prod]
  InUsEast: !Equals [!Ref 'AWS::Region', us-east-1]
  AndFalse: !And [!Condition IsProd, !Condition InUsEast]
  AndUnknown: !And [!Condition IsDev, !Condition InUsEast]
  OrTrue: !Or [!Condition InUsEast, !Condition IsDev]
  OrUnknown: !Or [!Condition InUsEast, !Condition IsProd]
  NotUnknown: !Not [!Condition InUsEast]
Resources:
  Queue: { Type: AWS::SQS::Queue }
`);
    assert.deepEqual(evaluated.conditions, {
      IsDev: true,
      IsProd: false,
      InUsEast: null,
      AndFalse: false,
      AndUnknown: null,
      OrTrue: true,
      OrUnknown: null,
      NotUnknown: null,
    });
  });

  test('conditions that name each other in a cycle stay unknown', () => {
    const template: CfnTemplate = {
      Conditions: { A: { 'Fn::Not': [{ Condition: 'B' }] }, B: { Condition: 'A' } },
      Resources: { Queue: { Type: 'AWS::SQS::Queue', Condition: 'A' } },
    };
    const evaluated = evaluateTemplate(template, { parameters: new Map() });
    assert.deepEqual(evaluated.conditions, { A: null, B: null });
    assert.deepEqual(evaluated.resources.Queue?.condition, { name: 'A', value: null });
  });
});

describe('evaluateTemplate: values', () => {
  const MAPPINGS = `
Mappings:
  RegionMap:
    us-east-1: { Ami: ami-east }
    eu-west-1: { Ami: ami-west, Zones: [a, b] }
Resources:
  Instance:
    Type: AWS::EC2::Instance
    Properties:
      ImageId: !FindInMap [RegionMap, !Ref 'AWS::Region', Ami]
      Zones: !FindInMap [RegionMap, eu-west-1, Zones]
      Missing: !FindInMap [RegionMap, !Ref 'AWS::Region', Nothing]
      Inherited: !FindInMap [RegionMap, constructor, Ami]
`;

  test('Fn::FindInMap over the region: the value when the region is given, still a FindInMap when not', () => {
    assert.deepEqual(propertiesOf(evaluate(MAPPINGS, {}, { 'AWS::Region': 'eu-west-1' }), 'Instance'), {
      ImageId: 'ami-west',
      Zones: ['a', 'b'],
      Missing: { 'Fn::FindInMap': ['RegionMap', 'eu-west-1', 'Nothing'] },
      Inherited: { 'Fn::FindInMap': ['RegionMap', 'constructor', 'Ami'] },
    });
    assert.deepEqual(propertiesOf(evaluate(MAPPINGS), 'Instance'), {
      ImageId: { 'Fn::FindInMap': ['RegionMap', { Ref: 'AWS::Region' }, 'Ami'] },
      Zones: ['a', 'b'],
      Missing: { 'Fn::FindInMap': ['RegionMap', { Ref: 'AWS::Region' }, 'Nothing'] },
      Inherited: { 'Fn::FindInMap': ['RegionMap', 'constructor', 'Ami'] },
    });
  });

  test('Select, Split and Join over a CommaDelimitedList, and symbolic when an input is unknown', () => {
    const yaml = `
Parameters:
  Subnets: { Type: CommaDelimitedList, Default: 'a, b ,c' }
  Index: { Type: Number, Default: 2 }
Conditions:
  HasThree: !Equals [!Select [2, !Ref Subnets], c]
Resources:
  Queue: { Type: AWS::SQS::Queue }
  Group:
    Type: AWS::EC2::SubnetGroup
    Properties:
      All: !Ref Subnets
      Second: !Select [1, !Ref Subnets]
      ByParameter: !Select [!Ref Index, !Ref Subnets]
      Joined: !Join ['+', !Ref Subnets]
      FromSplit: !Select [1, !Split ['/', 'x/y/z']]
      Rejoined: !Join [',', !Split ['/', !Join ['/', !Ref Subnets]]]
      OutOfRange: !Select [5, !Ref Subnets]
      JoinUnknown: !Join [':', [arn, !GetAtt Queue.Arn]]
      SelectUnknown: !Select [0, !GetAZs '']
      SplitUnknown: !Split [',', !ImportValue shared-list]
`;
    const evaluated = evaluate(yaml);
    assert.deepEqual(evaluated.conditions, { HasThree: true });
    assert.deepEqual(propertiesOf(evaluated, 'Group'), {
      All: ['a', 'b', 'c'],
      Second: 'b',
      ByParameter: 'c',
      Joined: 'a+b+c',
      FromSplit: 'y',
      Rejoined: 'a,b,c',
      OutOfRange: { 'Fn::Select': [5, ['a', 'b', 'c']] },
      JoinUnknown: { 'Fn::Join': [':', ['arn', { 'Fn::GetAtt': ['Queue', 'Arn'] }]] },
      SelectUnknown: { 'Fn::Select': [0, { 'Fn::GetAZs': '' }] },
      SplitUnknown: { 'Fn::Split': [',', { 'Fn::ImportValue': 'shared-list' }] },
    });
    assert.deepEqual(propertiesOf(evaluate(yaml, { Subnets: 'x,y' }), 'Group'), {
      ...(propertiesOf(evaluated, 'Group') as object),
      All: ['x', 'y'],
      Second: 'y',
      ByParameter: { 'Fn::Select': ['2', ['x', 'y']] },
      Joined: 'x+y',
      Rejoined: 'x,y',
      OutOfRange: { 'Fn::Select': [5, ['x', 'y']] },
    });
  });

  test('Select does not pick past an Fn::If that may still turn out to be NoValue', () => {
    const evaluated = evaluate(`
Conditions:
  InUsEast: !Equals [!Ref 'AWS::Region', us-east-1]
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      Picked: !Select [1, [a, !If [InUsEast, b, !Ref 'AWS::NoValue'], c]]
`);
    assert.deepEqual(propertiesOf(evaluated, 'Queue'), {
      Picked: { 'Fn::Select': [1, ['a', { 'Fn::If': ['InUsEast', 'b', { Ref: 'AWS::NoValue' }] }, 'c']] },
    });
  });

  test('Fn::Sub puts in parameters, pseudo parameters and variables; what is unknown keeps it a Sub, escaped', () => {
    const yaml = `
Parameters:
  Env: { Type: String, Default: dev }
  Pattern: { Type: String, Default: 'a\${b}' }
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      Known: !Sub 'arn:\${AWS::Partition}:sqs:\${AWS::Region}:\${Env}-\${!Literal}'
      WithResource: !Sub '\${AWS::StackName}-\${Env}-\${Queue.Arn}-\${!Literal}'
      UnknownPseudo: !Sub '\${AWS::AccountId}-\${Pattern}'
      Variables: !Sub ['\${Name}-\${Count}-\${AWS::Region}', { Name: !Join ['-', [app, !Ref Env]], Count: 2 }]
      Encoded: !Base64 { 'Fn::Sub': 'user-\${Env}' }
`;
    const pseudo = { 'AWS::Region': 'eu-west-1', 'AWS::Partition': 'aws', 'AWS::StackName': 'app' };
    assert.deepEqual(propertiesOf(evaluate(yaml, {}, pseudo), 'Queue'), {
      Known: 'arn:aws:sqs:eu-west-1:dev-${Literal}',
      WithResource: { 'Fn::Sub': 'app-dev-${Queue.Arn}-${!Literal}' },
      UnknownPseudo: { 'Fn::Sub': '${AWS::AccountId}-a${!b}' },
      Variables: 'app-dev-2-eu-west-1',
      Encoded: { 'Fn::Base64': 'user-dev' },
    });
    assert.deepEqual(propertiesOf(evaluate(yaml), 'Queue'), {
      Known: { 'Fn::Sub': 'arn:${AWS::Partition}:sqs:${AWS::Region}:dev-${!Literal}' },
      WithResource: { 'Fn::Sub': '${AWS::StackName}-dev-${Queue.Arn}-${!Literal}' },
      UnknownPseudo: { 'Fn::Sub': '${AWS::AccountId}-a${!b}' },
      Variables: { 'Fn::Sub': ['app-dev-2-${AWS::Region}', { Name: 'app-dev', Count: 2 }] },
      Encoded: { 'Fn::Base64': 'user-dev' },
    });
  });

  test('a __proto__ key is kept as data and pollutes nothing', () => {
    const template = read(`
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      Tags:
        __proto__: { polluted: yes }
        Plain: !Ref 'AWS::NoValue'
`);
    const tags = (evaluateTemplate(template, { parameters: new Map() }).resources.Queue?.resource.Properties as Record<string, unknown>).Tags as Record<string, unknown>;
    assert.ok(Object.hasOwn(tags, '__proto__'));
    assert.equal(Object.getPrototypeOf(tags), Object.prototype);
    assert.deepEqual(Object.keys(tags), ['__proto__']);
    assert.equal(JSON.stringify(tags), '{"__proto__":{"polluted":"yes"}}');
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });
});

describe('evaluateTemplate: NoEcho parameters', () => {
  test('the real value decides conditions, mapping keys and Select, but only the mask is ever shown', () => {
    const secret = 'hunter2,swordfish';
    const evaluated = evaluate(
      `
Parameters:
  Password: { Type: String, NoEcho: true }
  Tier: { Type: String, NoEcho: true, Default: gold }
Mappings:
  Tiers:
    gold: { Size: large }
Conditions:
  IsHunter: !Equals [!Select [0, !Split [',', !Ref Password]], hunter2]
Resources:
  Db:
    Type: AWS::RDS::DBInstance
    Condition: IsHunter
    Properties:
      MasterUserPassword: !Ref Password
      Url: !Sub 'db://admin:\${Password}@host'
      Size: !FindInMap [Tiers, !Ref Tier, Size]
      MissingTier: !FindInMap [Tiers, !Ref Tier, Colour]
      Pieces: !Split [',', !Ref Password]
      Piece: !Select [1, !Split [',', !Ref Password]]
      Rejoined: !Join ['', !Split [',', !Ref Password]]
      Listed: !Join ['-', [!Ref Password, x]]
      Unknown: !Join ['', [!Ref Password, !GetAtt Db.Endpoint.Address]]
Outputs:
  Secret:
    Value: !Ref Password
    Export: { Name: !Sub '\${Password}-export' }
`,
      { Password: secret },
    );
    assert.deepEqual(evaluated.conditions, { IsHunter: true });
    assert.deepEqual(propertiesOf(evaluated, 'Db'), {
      MasterUserPassword: '****',
      Url: 'db://admin:****@host',
      Size: 'large',
      MissingTier: { 'Fn::FindInMap': ['Tiers', '****', 'Colour'] },
      Pieces: { 'Fn::Split': [',', '****'] },
      Piece: { 'Fn::Select': [1, { 'Fn::Split': [',', '****'] }] },
      Rejoined: { 'Fn::Join': ['', { 'Fn::Split': [',', '****'] }] },
      Listed: '****-x',
      Unknown: { 'Fn::Join': ['', ['****', { 'Fn::GetAtt': ['Db', 'Endpoint.Address'] }]] },
    });
    assert.deepEqual(evaluated.outputs.Secret, { value: '****', exportName: '****-export' });
    assert.doesNotMatch(JSON.stringify(evaluated), /hunter2|swordfish|gold/);
  });
});

describe('parameterContext', () => {
  test('given values, else defaults; lists split and trimmed; SSM types and valueless parameters left out; NoEcho masked', () => {
    const template: CfnTemplate = {
      Parameters: {
        Env: { Type: 'String', Default: 'dev' },
        Count: { Type: 'Number', Default: 3 },
        Subnets: { Type: 'List<AWS::EC2::Subnet::Id>', Default: 'subnet-1 , subnet-2' },
        Zones: { Type: 'CommaDelimitedList' },
        Ami: { Type: 'AWS::SSM::Parameter::Value<String>', Default: '/images/latest' },
        Secret: { Type: 'String', NoEcho: 'true' },
        Required: { Type: 'String' },
      },
      Resources: { Queue: { Type: 'AWS::SQS::Queue' } },
    };
    const context = parameterContext(template, { Env: 'prod', Zones: 'a,b', Secret: 's3cret', Ami: 'ami-given' }, (name, value) => `<${name}:${value.length}>`);
    assert.deepEqual(
      context.parameters,
      new Map<string, unknown>([
        ['Env', 'prod'],
        ['Count', '3'],
        ['Subnets', ['subnet-1', 'subnet-2']],
        ['Zones', ['a', 'b']],
        ['Secret', 's3cret'],
      ]),
    );
    assert.deepEqual(context.masked, new Map([['Secret', '<Secret:6>']]));
  });
});
