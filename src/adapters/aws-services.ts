import { CloudWatchLogsClient, DescribeLogGroupsCommand, type LogGroup } from '@aws-sdk/client-cloudwatch-logs';
import { DescribeTableCommand, DynamoDBClient, paginateListTables } from '@aws-sdk/client-dynamodb';
import { DescribeRuleCommand, EventBridgeClient } from '@aws-sdk/client-eventbridge';
import {
  GetGroupPolicyCommand,
  GetPolicyCommand,
  GetPolicyVersionCommand,
  GetRoleCommand,
  GetRolePolicyCommand,
  GetUserCommand,
  GetUserPolicyCommand,
  IAMClient,
  ListAttachedRolePoliciesCommand,
  ListEntitiesForPolicyCommand,
  ListPoliciesCommand,
} from '@aws-sdk/client-iam';
import { DescribeKeyCommand, GetKeyPolicyCommand, GetKeyRotationStatusCommand, KMSClient } from '@aws-sdk/client-kms';
import { GetBucketTaggingCommand, GetBucketVersioningCommand, HeadBucketCommand, ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';
import { GetTopicAttributesCommand, ListTopicsCommand, SNSClient } from '@aws-sdk/client-sns';
import { GetQueueAttributesCommand, GetQueueUrlCommand, paginateListQueues, SQSClient } from '@aws-sdk/client-sqs';
import { DescribeParametersCommand, GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { comparePlanned, plannedAt, type Observed, type PropertyMismatch } from './aws-property-compare';
import { exists, isAbsent, withClient, type OperatorClientSettings } from './aws-operator-client';
import type { ClientConfig } from '../domain/client-config';
import type { ResourceRef } from '../domain/resources';
import { withAwsSpans } from '../telemetry/aws-spans';
import type { IacAccess } from './cloud-emulator-adapter';

export type { PropertyMismatch } from './aws-property-compare';

/** A resource's Properties as planned: the template's own, or with parameters and conditions resolved. */
export type PlannedProperties = Readonly<Record<string, unknown>>;

/**
 * How the plane reaches the resources of one CloudFormation type through the service's
 * own API, never only the stack's word (DESIGN §14).
 */
export interface AwsServiceAccess {
  /**
   * Whether the resource of the stack's `physicalId` is there. `null` when that id alone
   * cannot say (an inline policy's is made up) and `planned` names nothing to look at.
   */
  exists(access: IacAccess, physicalId: string, planned?: PlannedProperties): Promise<boolean | null>;
  /** The property that names a resource of the type, when a template can name one... */
  readonly nameProperty?: string;
  /** ...and the physical id of the resource of that name, or `null` (a failed apply can leave one the stack never listed). */
  byName?(access: IacAccess, name: string): Promise<string | null>;
  /** Each property `planned` sets that the service reads back otherwise (see comparePlanned). */
  readBack(access: IacAccess, physicalId: string, planned: PlannedProperties): Promise<PropertyMismatch[]>;
  /** Every resource of the type, for `resources` (with the sandbox's own key, as its agent sees them), under its service's name. */
  readonly lists?: { readonly service: string; all(config: ClientConfig): Promise<ResourceRef[]> };
}

/** A client with the sandbox's own key (what `resources` lists is what its agent sees), traced like every AWS call, destroyed after use. */
function withSandboxClient<C extends { destroy(): void; middlewareStack: { add: (...args: never[]) => void } }, R>(client: C, use: (client: C) => Promise<R>): Promise<R> {
  return use(withAwsSpans(client)).finally(() => client.destroy());
}

const s3 = (settings: OperatorClientSettings) => new S3Client({ ...settings, forcePathStyle: true });
const sqs = (settings: OperatorClientSettings) => new SQSClient(settings);
const dynamodb = (settings: OperatorClientSettings) => new DynamoDBClient(settings);
const sns = (settings: OperatorClientSettings) => new SNSClient(settings);
const ssm = (settings: OperatorClientSettings) => new SSMClient(settings);
const iam = (settings: OperatorClientSettings) => new IAMClient(settings);
const kms = (settings: OperatorClientSettings) => new KMSClient(settings);
const logs = (settings: OperatorClientSettings) => new CloudWatchLogsClient(settings);
const events = (settings: OperatorClientSettings) => new EventBridgeClient(settings);

/** The last segment of a queue URL (or a name as it is). */
const queueName = (urlOrName: string) => urlOrName.slice(urlOrName.lastIndexOf('/') + 1);
/** The last segment of an ARN: a topic's name. */
const arnName = (arn: string) => arn.slice(arn.lastIndexOf(':') + 1);

/** The literal text the plan sets at `path` (a number counts as its text), or `undefined`. */
function literal(planned: PlannedProperties, path: string): string | undefined {
  const found = plannedAt(planned, path);
  return found.kind === 'value' && (typeof found.value === 'string' || typeof found.value === 'number') ? String(found.value) : undefined;
}

/** Whether the plan sets `path` to something that can be compared. */
const sets = (planned: PlannedProperties, path: string) => plannedAt(planned, path).kind === 'value';

/** Each literal name the plan lists in the property `name` (`Roles`), with its index; an intrinsic among them is skipped. */
function literalList(planned: PlannedProperties, name: string): { index: number; name: string }[] {
  const value = planned[name];
  if (!Array.isArray(value)) return [];
  return value.flatMap((item: unknown, index) => (typeof item === 'string' ? [{ index, name: item }] : []));
}

/** `read`'s answer, or `undefined` when the service says there is no such thing. */
async function orAbsent<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (err) {
    if (isAbsent(err)) return undefined;
    throw err;
  }
}

/** Walks pages of a listing until `take` finds what it looks for (or the pages end). */
async function firstOfPages<P, R>(page: (token: string | undefined) => Promise<P>, next: (page: P) => string | undefined, take: (page: P) => R | undefined): Promise<R | undefined> {
  for (let token: string | undefined, first = true; first || token !== undefined; first = false) {
    const answer = await page(token);
    const found = take(answer);
    if (found !== undefined) return found;
    token = next(answer);
  }
  return undefined;
}

async function allOfPages<P, R>(page: (token: string | undefined) => Promise<P>, next: (page: P) => string | undefined, items: (page: P) => readonly R[]): Promise<R[]> {
  const all: R[] = [];
  await firstOfPages(page, next, (answer) => {
    all.push(...items(answer));
    return undefined;
  });
  return all;
}

/** A type whose resources are read through `observe`: its readBack compares what that reads with the plan. */
function service(spec: Omit<AwsServiceAccess, 'readBack'> & { observe(access: IacAccess, physicalId: string, planned: PlannedProperties): Promise<Observed[]> }): AwsServiceAccess {
  const { observe, ...rest } = spec;
  return { ...rest, readBack: async (access, physicalId, planned) => comparePlanned(planned, await observe(access, physicalId, planned)) };
}

/** A log group of exactly `name` (DescribeLogGroups looks by prefix). */
function logGroup(access: IacAccess, name: string): Promise<LogGroup | undefined> {
  return withClient(logs, access, (client) =>
    firstOfPages(
      (nextToken) => client.send(new DescribeLogGroupsCommand({ logGroupNamePrefix: name, ...(nextToken === undefined ? {} : { nextToken }) })),
      (page) => page.nextToken,
      (page) => page.logGroups?.find((group) => group.logGroupName === name),
    ),
  );
}

/** An events rule's physical id: its name, or `bus|name` for a rule on another bus. */
function ruleId(physicalId: string, planned?: PlannedProperties): { Name: string; EventBusName?: string } {
  const [bus, name] = physicalId.includes('|') ? physicalId.split('|', 2) : [planned === undefined ? undefined : literal(planned, 'EventBusName'), physicalId];
  return { Name: name as string, ...(bus === undefined || bus === '' ? {} : { EventBusName: bus }) };
}

/** The principals an IAM::Policy names, and how to read its inline policy on each. */
const INLINE_HOLDERS: readonly { property: string; read: (client: IAMClient, name: string, policy: string) => Promise<{ PolicyDocument?: string }> }[] = [
  { property: 'Roles', read: (client: IAMClient, name: string, policy: string) => client.send(new GetRolePolicyCommand({ RoleName: name, PolicyName: policy })) },
  { property: 'Users', read: (client: IAMClient, name: string, policy: string) => client.send(new GetUserPolicyCommand({ UserName: name, PolicyName: policy })) },
  { property: 'Groups', read: (client: IAMClient, name: string, policy: string) => client.send(new GetGroupPolicyCommand({ GroupName: name, PolicyName: policy })) },
];

/** The inline policy `PolicyName` on each principal the plan names: each one's document, or `undefined` where it is not. */
async function inlinePolicies(access: IacAccess, planned: PlannedProperties): Promise<{ path: string; name: string; document: string | undefined }[]> {
  const policy = literal(planned, 'PolicyName');
  if (policy === undefined) return [];
  return withClient(iam, access, async (client) => {
    const found = [];
    for (const holder of INLINE_HOLDERS) {
      for (const { index, name } of literalList(planned, holder.property)) {
        const answer = await orAbsent(() => holder.read(client, name, policy));
        found.push({ path: `${holder.property}.${index}`, name, document: answer?.PolicyDocument });
      }
    }
    return found;
  });
}

/**
 * The one table of AWS service access per CloudFormation type: how a resource is found
 * (by the stack's physical id, as moto's CloudFormation reports it, or by the name its
 * template gives), and which planned properties are read back, and how. Every per-type
 * rule of the plane lives here.
 */
export const AWS_SERVICES: Readonly<Record<string, AwsServiceAccess>> = {
  // Physical id: the bucket's name.
  'AWS::S3::Bucket': service({
    lists: {
      service: 's3',
      all: (config) =>
        withSandboxClient(new S3Client({ ...config, maxAttempts: 2 }), async (client) =>
          ((await client.send(new ListBucketsCommand({}))).Buckets ?? []).map((bucket) => ({ service: 's3', type: 'bucket', id: bucket.Name ?? '' })),
        ),
    },
    exists: (access, id) => withClient(s3, access, (client) => exists(() => client.send(new HeadBucketCommand({ Bucket: id })))),
    nameProperty: 'BucketName',
    byName: async (access, name) => ((await withClient(s3, access, (client) => exists(() => client.send(new HeadBucketCommand({ Bucket: name }))))) ? name : null),
    observe: (access, id, planned) =>
      withClient(s3, access, async (client) => {
        const versioning = await client.send(new GetBucketVersioningCommand({ Bucket: id }));
        const observed: Observed[] = [
          { path: 'BucketName', value: id },
          // A bucket never versioned answers no Status: that is neither Enabled nor Suspended.
          { path: 'VersioningConfiguration.Status', value: versioning.Status },
        ];
        if (sets(planned, 'Tags')) {
          const tagging = await client.send(new GetBucketTaggingCommand({ Bucket: id })).catch((err: unknown) => {
            if (/NoSuchTagSet/i.test((err as { name?: string }).name ?? '')) return { TagSet: [] };
            throw err;
          });
          observed.push({ path: 'Tags', value: tagging.TagSet ?? [], as: 'tags' });
        }
        return observed;
      }),
  }),
  // Physical id: the queue's URL, as moto makes it (its host is not the endpoint's), so a queue is found by its name.
  'AWS::SQS::Queue': service({
    lists: {
      service: 'sqs',
      all: (config) =>
        withSandboxClient(new SQSClient({ ...config, maxAttempts: 2 }), async (client) => {
          const queues: ResourceRef[] = [];
          for await (const page of paginateListQueues({ client }, {})) for (const url of page.QueueUrls ?? []) queues.push({ service: 'sqs', type: 'queue', id: queueName(url) });
          return queues;
        }),
    },
    exists: (access, id) => withClient(sqs, access, (client) => exists(() => client.send(new GetQueueUrlCommand({ QueueName: queueName(id) })))),
    nameProperty: 'QueueName',
    byName: (access, name) => withClient(sqs, access, async (client) => (await orAbsent(() => client.send(new GetQueueUrlCommand({ QueueName: name }))))?.QueueUrl ?? null),
    observe: (access, id) =>
      withClient(sqs, access, async (client) => {
        const { QueueUrl } = await client.send(new GetQueueUrlCommand({ QueueName: queueName(id) }));
        const attributes: Record<string, string | undefined> = (await client.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['All'] }))).Attributes ?? {};
        return [
          // A QueueName the update did not honour leaves the stack's queue under its old name.
          { path: 'QueueName', value: queueName(id) },
          ...['VisibilityTimeout', 'DelaySeconds', 'MessageRetentionPeriod', 'MaximumMessageSize', 'ReceiveMessageWaitTimeSeconds'].map((name) => ({ path: name, value: attributes[name] })),
          { path: 'FifoQueue', value: attributes.FifoQueue, unset: false },
          { path: 'ContentBasedDeduplication', value: attributes.ContentBasedDeduplication, unset: false },
        ];
      }),
  }),
  // Physical id: the table's name.
  'AWS::DynamoDB::Table': service({
    lists: {
      service: 'dynamodb',
      all: (config) =>
        withSandboxClient(new DynamoDBClient({ ...config, maxAttempts: 2 }), async (client) => {
          const tables: ResourceRef[] = [];
          for await (const page of paginateListTables({ client }, {})) for (const name of page.TableNames ?? []) tables.push({ service: 'dynamodb', type: 'table', id: name });
          return tables;
        }),
    },
    exists: (access, id) => withClient(dynamodb, access, (client) => exists(() => client.send(new DescribeTableCommand({ TableName: id })))),
    nameProperty: 'TableName',
    byName: async (access, name) => ((await withClient(dynamodb, access, (client) => exists(() => client.send(new DescribeTableCommand({ TableName: name }))))) ? name : null),
    observe: (access, id) =>
      withClient(dynamodb, access, async (client) => {
        const table = (await client.send(new DescribeTableCommand({ TableName: id }))).Table;
        return [
          { path: 'TableName', value: id },
          // A table made without a billing mode is PROVISIONED, and DynamoDB may then leave the summary out.
          { path: 'BillingMode', value: table?.BillingModeSummary?.BillingMode, unset: 'PROVISIONED' },
          { path: 'KeySchema', value: table?.KeySchema, as: 'set' },
          { path: 'AttributeDefinitions', value: table?.AttributeDefinitions, as: 'set' },
          { path: 'ProvisionedThroughput.ReadCapacityUnits', value: table?.ProvisionedThroughput?.ReadCapacityUnits },
          { path: 'ProvisionedThroughput.WriteCapacityUnits', value: table?.ProvisionedThroughput?.WriteCapacityUnits },
        ];
      }),
  }),
  // Physical id: the topic's ARN.
  'AWS::SNS::Topic': service({
    exists: (access, id) => withClient(sns, access, (client) => exists(() => client.send(new GetTopicAttributesCommand({ TopicArn: id })))),
    nameProperty: 'TopicName',
    byName: (access, name) =>
      withClient(sns, access, async (client) => {
        const found = await firstOfPages(
          (token) => client.send(new ListTopicsCommand(token === undefined ? {} : { NextToken: token })),
          (page) => page.NextToken,
          (page) => page.Topics?.find((topic) => topic.TopicArn?.endsWith(`:${name}`))?.TopicArn,
        );
        return found ?? null;
      }),
    observe: (access, id) =>
      withClient(sns, access, async (client) => {
        const attributes: Record<string, string | undefined> = (await client.send(new GetTopicAttributesCommand({ TopicArn: id }))).Attributes ?? {};
        return [
          { path: 'TopicName', value: arnName(id) },
          { path: 'DisplayName', value: attributes.DisplayName, unset: '' },
          { path: 'FifoTopic', value: attributes.FifoTopic, unset: false },
          { path: 'ContentBasedDeduplication', value: attributes.ContentBasedDeduplication, unset: false },
        ];
      }),
  }),
  // Physical id: the parameter's name.
  'AWS::SSM::Parameter': service({
    exists: (access, id) => withClient(ssm, access, (client) => exists(() => client.send(new GetParameterCommand({ Name: id })))),
    nameProperty: 'Name',
    byName: async (access, name) => ((await withClient(ssm, access, (client) => exists(() => client.send(new GetParameterCommand({ Name: name }))))) ? name : null),
    observe: (access, id, planned) =>
      withClient(ssm, access, async (client) => {
        const parameter = (await client.send(new GetParameterCommand({ Name: id }))).Parameter;
        const observed: Observed[] = [
          { path: 'Name', value: id },
          { path: 'Value', value: parameter?.Value },
          { path: 'Type', value: parameter?.Type },
        ];
        if (sets(planned, 'Description')) {
          const described = await client.send(new DescribeParametersCommand({ ParameterFilters: [{ Key: 'Name', Option: 'Equals', Values: [id] }] }));
          observed.push({ path: 'Description', value: described.Parameters?.[0]?.Description, unset: '' });
        }
        return observed;
      }),
  }),
  // Physical id: the role's name.
  'AWS::IAM::Role': service({
    exists: (access, id) => withClient(iam, access, (client) => exists(() => client.send(new GetRoleCommand({ RoleName: id })))),
    nameProperty: 'RoleName',
    byName: async (access, name) => ((await withClient(iam, access, (client) => exists(() => client.send(new GetRoleCommand({ RoleName: name }))))) ? name : null),
    observe: (access, id, planned) =>
      withClient(iam, access, async (client) => {
        const role = (await client.send(new GetRoleCommand({ RoleName: id }))).Role;
        const observed: Observed[] = [
          { path: 'RoleName', value: id },
          { path: 'AssumeRolePolicyDocument', value: role?.AssumeRolePolicyDocument, as: 'policy' },
          { path: 'Path', value: role?.Path, unset: '/' },
          { path: 'MaxSessionDuration', value: role?.MaxSessionDuration, unset: 3600 },
          { path: 'Description', value: role?.Description, unset: '' },
        ];
        for (const { index, name } of inlineNames(planned)) {
          const document = (await orAbsent(() => client.send(new GetRolePolicyCommand({ RoleName: id, PolicyName: name }))))?.PolicyDocument;
          observed.push({ path: `Policies.${index}.PolicyDocument`, value: document, as: 'policy' });
        }
        if (sets(planned, 'ManagedPolicyArns')) {
          const attached = await allOfPages(
            (Marker) => client.send(new ListAttachedRolePoliciesCommand({ RoleName: id, ...(Marker === undefined ? {} : { Marker }) })),
            (page) => (page.IsTruncated ? page.Marker : undefined),
            (page) => (page.AttachedPolicies ?? []).map((policy) => policy.PolicyArn ?? ''),
          );
          observed.push({ path: 'ManagedPolicyArns', value: attached, as: 'set' });
        }
        return observed;
      }),
  }),
  // Physical id: a name moto makes up (`<stack>-<logicalId>-<suffix>`), known to no IAM API: the policy is looked for on the roles, users and groups it names.
  'AWS::IAM::Policy': service({
    exists: async (access, _id, planned) => {
      if (planned === undefined) return null;
      const held = await inlinePolicies(access, planned);
      return held.length === 0 ? null : held.some((one) => one.document !== undefined);
    },
    observe: async (access, _id, planned) =>
      (await inlinePolicies(access, planned)).flatMap((one): Observed[] => [
        { path: one.path, value: one.document === undefined ? undefined : one.name },
        ...(one.document === undefined ? [] : [{ path: 'PolicyDocument', value: one.document, as: 'policy' as const }]),
      ]),
  }),
  // Physical id: the policy's ARN.
  'AWS::IAM::ManagedPolicy': service({
    exists: (access, id) => withClient(iam, access, (client) => exists(() => client.send(new GetPolicyCommand({ PolicyArn: id })))),
    nameProperty: 'ManagedPolicyName',
    byName: (access, name) =>
      withClient(iam, access, async (client) => {
        const found = await firstOfPages(
          (Marker) => client.send(new ListPoliciesCommand({ Scope: 'Local', ...(Marker === undefined ? {} : { Marker }) })),
          (page) => (page.IsTruncated ? page.Marker : undefined),
          (page) => page.Policies?.find((policy) => policy.PolicyName === name)?.Arn,
        );
        return found ?? null;
      }),
    observe: (access, id, planned) =>
      withClient(iam, access, async (client) => {
        const policy = (await client.send(new GetPolicyCommand({ PolicyArn: id }))).Policy;
        const version =
          policy?.DefaultVersionId === undefined ? undefined : (await client.send(new GetPolicyVersionCommand({ PolicyArn: id, VersionId: policy.DefaultVersionId }))).PolicyVersion;
        const observed: Observed[] = [
          { path: 'ManagedPolicyName', value: policy?.PolicyName },
          { path: 'PolicyDocument', value: version?.Document, as: 'policy' },
          { path: 'Path', value: policy?.Path, unset: '/' },
          { path: 'Description', value: policy?.Description, unset: '' },
        ];
        if (['Roles', 'Users', 'Groups'].some((property) => sets(planned, property))) {
          const entities = await allOfPages(
            (Marker) => client.send(new ListEntitiesForPolicyCommand({ PolicyArn: id, ...(Marker === undefined ? {} : { Marker }) })),
            (page) => (page.IsTruncated ? page.Marker : undefined),
            (page) => [page],
          );
          observed.push(
            { path: 'Roles', value: entities.flatMap((page) => (page.PolicyRoles ?? []).map((role) => role.RoleName)), as: 'subset' },
            { path: 'Users', value: entities.flatMap((page) => (page.PolicyUsers ?? []).map((user) => user.UserName)), as: 'subset' },
            { path: 'Groups', value: entities.flatMap((page) => (page.PolicyGroups ?? []).map((group) => group.GroupName)), as: 'subset' },
          );
        }
        return observed;
      }),
  }),
  // Physical id: the user's name.
  'AWS::IAM::User': service({
    exists: (access, id) => withClient(iam, access, (client) => exists(() => client.send(new GetUserCommand({ UserName: id })))),
    nameProperty: 'UserName',
    byName: async (access, name) => ((await withClient(iam, access, (client) => exists(() => client.send(new GetUserCommand({ UserName: name }))))) ? name : null),
    observe: (access, id) =>
      withClient(iam, access, async (client) => {
        const user = (await client.send(new GetUserCommand({ UserName: id }))).User;
        return [
          { path: 'UserName', value: id },
          { path: 'Path', value: user?.Path, unset: '/' },
        ];
      }),
  }),
  // Physical id: the key's id. A key scheduled for deletion is gone, as CloudFormation deletes keys.
  'AWS::KMS::Key': service({
    exists: (access, id) =>
      withClient(kms, access, async (client) => {
        const described = await orAbsent(() => client.send(new DescribeKeyCommand({ KeyId: id })));
        return described !== undefined && described.KeyMetadata?.KeyState !== 'PendingDeletion';
      }),
    observe: (access, id, planned) =>
      withClient(kms, access, async (client) => {
        const key = (await client.send(new DescribeKeyCommand({ KeyId: id }))).KeyMetadata;
        const observed: Observed[] = [
          { path: 'Description', value: key?.Description, unset: '' },
          { path: 'Enabled', value: key?.Enabled },
          { path: 'KeyUsage', value: key?.KeyUsage },
          { path: 'KeySpec', value: key?.KeySpec ?? key?.CustomerMasterKeySpec },
        ];
        if (sets(planned, 'KeyPolicy')) {
          observed.push({ path: 'KeyPolicy', value: (await client.send(new GetKeyPolicyCommand({ KeyId: id, PolicyName: 'default' }))).Policy, as: 'policy' });
        }
        if (sets(planned, 'EnableKeyRotation')) {
          observed.push({ path: 'EnableKeyRotation', value: (await client.send(new GetKeyRotationStatusCommand({ KeyId: id }))).KeyRotationEnabled, unset: false });
        }
        return observed;
      }),
  }),
  // Physical id: the log group's name.
  'AWS::Logs::LogGroup': service({
    exists: async (access, id) => (await logGroup(access, id)) !== undefined,
    nameProperty: 'LogGroupName',
    byName: async (access, name) => ((await logGroup(access, name)) === undefined ? null : name),
    observe: async (access, id) => {
      const group = await logGroup(access, id);
      return [
        { path: 'LogGroupName', value: group?.logGroupName },
        // No retention is "never expire".
        { path: 'RetentionInDays', value: group?.retentionInDays },
      ];
    },
  }),
  // Physical id: the rule's name (on the default bus).
  'AWS::Events::Rule': service({
    exists: (access, id, planned) => withClient(events, access, (client) => exists(() => client.send(new DescribeRuleCommand(ruleId(id, planned))))),
    nameProperty: 'Name',
    byName: async (access, name) => ((await withClient(events, access, (client) => exists(() => client.send(new DescribeRuleCommand({ Name: name }))))) ? name : null),
    observe: (access, id, planned) =>
      withClient(events, access, async (client) => {
        const rule = await client.send(new DescribeRuleCommand(ruleId(id, planned)));
        return [
          { path: 'Name', value: rule.Name },
          { path: 'ScheduleExpression', value: rule.ScheduleExpression },
          { path: 'EventPattern', value: rule.EventPattern, as: 'json' },
          { path: 'State', value: rule.State, unset: 'ENABLED' },
          { path: 'Description', value: rule.Description, unset: '' },
        ];
      }),
  }),
};

/** The literal names of a role's inline `Policies`, with their index (one whose document holds an intrinsic is still looked for). */
function inlineNames(planned: PlannedProperties): { index: number; name: string }[] {
  const value = planned.Policies;
  if (!Array.isArray(value)) return [];
  return value.flatMap((item: unknown, index) => {
    const name = typeof item === 'object' && item !== null ? (item as { PolicyName?: unknown }).PolicyName : undefined;
    return typeof name === 'string' ? [{ index, name }] : [];
  });
}
