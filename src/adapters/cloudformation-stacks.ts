import { withAwsSpans } from '../telemetry/aws-spans';
import {
  ChangeSetNotFoundException,
  CloudFormationClient,
  CreateChangeSetCommand,
  DeleteChangeSetCommand,
  DeleteStackCommand,
  DescribeChangeSetCommand,
  DescribeStackEventsCommand,
  DescribeStacksCommand,
  ExecuteChangeSetCommand,
  GetTemplateCommand,
  ListChangeSetsCommand,
  ListStackResourcesCommand,
  ListStacksCommand,
  type Parameter,
  type StackResourceSummary,
} from '@aws-sdk/client-cloudformation';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { HeadBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { GetTopicAttributesCommand, ListTopicsCommand, SNSClient } from '@aws-sdk/client-sns';
import { GetQueueUrlCommand, SQSClient } from '@aws-sdk/client-sqs';
import { GetParameterCommand, PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { SandboxPlaneError } from '../domain/errors';
import { CDK_BOOTSTRAP_VERSION, type CdkBootstrapNeeds } from '../domain/iac/cdk-bootstrap';
import type { IacResourceRow, IacResourceStatus } from '../domain/iac/iac-run';
import type { PlanAction } from '../domain/iac/plan';
import type { CfnTemplate } from '../domain/iac/template';
import { readTemplateText } from '../domain/iac/template-yaml';
import type { IacAccess } from './cloud-emulator-adapter';

/** A stack as the emulator holds it now; `null` when there is none (or only a plan's REVIEW_IN_PROGRESS shell). */
export interface StackNow {
  readonly status: string;
  readonly template: CfnTemplate;
  readonly parameters: Record<string, string>;
  /** Physical ids of the stack's resources, by logical id. */
  readonly physicalIds: Record<string, string>;
}

/** One row of the emulator's change set: all moto says (Floci says nothing). */
export interface EmulatorChange {
  readonly action: string;
  readonly logicalId: string;
  readonly type: string;
}

/** A stack resource as the emulator lists it (`resources` shows these). */
export interface StackResourceListing {
  readonly stack: string;
  readonly logicalId: string;
  readonly type: string;
  readonly physicalId: string | null;
  readonly status: string;
}

/** What waiting for a stack saw: its last status and reason, and its events, newest last. */
export interface StackSettled {
  readonly status: string | null;
  readonly reason: string | null;
  readonly events: string[];
  /** Still in progress when the wait's bound ran out. */
  readonly stuck: boolean;
}

/** How long a change set may take to be computed, and how often to look. */
const CHANGE_SET_WAIT_MS = 60_000;
const POLL_MS = 500;
/** Events kept for the run: the newest, enough to read a failure by. */
const EVENTS_KEPT = 20;

const IN_PROGRESS = /_IN_PROGRESS$/;
const SETTLED_OK = new Set(['CREATE_COMPLETE', 'UPDATE_COMPLETE', 'IMPORT_COMPLETE']);

/** Change set names the plane gives, so a retried step finds its own: `sandboxplane-[plan-]<runId>`. */
export function changeSetName(runId: string, purpose: 'plan' | 'apply'): string {
  return purpose === 'plan' ? `sandboxplane-plan-${runId}` : `sandboxplane-${runId}`;
}

function errorName(err: unknown): string {
  return typeof err === 'object' && err !== null && 'name' in err ? String((err as { name: unknown }).name) : 'Error';
}

function describeError(err: unknown): string {
  return `${errorName(err)}: ${(err as Error).message}`;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The settings of an AWS SDK client that calls the emulator as the plane (the operator
 * headers of {@link IacAccess}); the credentials sign nothing moto checks on that path.
 */
function operatorClient<T extends { middlewareStack: { add: (...args: never[]) => void } }>(
  make: (settings: { endpoint?: string; region: string; credentials?: { accessKeyId: string; secretAccessKey: string }; profile?: string; maxAttempts: number }) => T,
  access: IacAccess,
): T {
  const client = withAwsSpans(
    make({
      ...(access.endpoint === undefined ? {} : { endpoint: access.endpoint }),
      region: access.region,
      // A target's key comes from the SDK's chain inside this process and never leaves it.
      ...(access.signer.kind === 'operator'
        ? { credentials: { accessKeyId: 'sandboxplane-operator', secretAccessKey: 'not-a-secret' } }
        : access.signer.profile === undefined
          ? {}
          : { profile: access.signer.profile }),
      maxAttempts: 2,
    }),
  );
  const headers = access.headers;
  if (Object.keys(headers).length > 0) {
    const addHeaders = (next: (args: { request: unknown }) => Promise<unknown>) => async (args: { request: unknown }) => {
      const request = args.request as { headers?: Record<string, string> };
      if (request.headers !== undefined) Object.assign(request.headers, headers);
      return next(args);
    };
    (client.middlewareStack.add as unknown as (middleware: unknown, options: { step: string; name: string }) => void)(addHeaders, { step: 'build', name: 'sandboxplaneOperatorHeaders' });
  }
  return client;
}

type Checker = (access: IacAccess, physicalId: string) => Promise<boolean>;
type NameLookup = (access: IacAccess, name: string) => Promise<string | null>;

/** 404-like answers: the thing is not there. */
function isAbsent(err: unknown): boolean {
  return (
    /NotFound|NoSuch|NonExistent|DoesNotExist|ParameterNotFound|ResourceNotFoundException/i.test(errorName(err)) ||
    (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404
  );
}

async function exists(probe: () => Promise<unknown>): Promise<boolean> {
  try {
    await probe();
    return true;
  } catch (err) {
    if (isAbsent(err)) return false;
    // Forbidden is somebody's: on a real account a bucket name another account holds answers 403.
    if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 403) return true;
    throw err;
  }
}

function withClient<C extends { destroy(): void; middlewareStack: { add: (...args: never[]) => void } }, R>(
  make: (settings: never) => C,
  access: IacAccess,
  use: (client: C) => Promise<R>,
): Promise<R> {
  const client = operatorClient(make as (settings: unknown) => C, access);
  return use(client).finally(() => client.destroy());
}

const s3 = (settings: never) => new S3Client({ ...(settings as object), forcePathStyle: true });
const sqs = (settings: never) => new SQSClient(settings);
const dynamodb = (settings: never) => new DynamoDBClient(settings);
const sns = (settings: never) => new SNSClient(settings);
const ssm = (settings: never) => new SSMClient(settings);

const queueName = (urlOrName: string) => urlOrName.slice(urlOrName.lastIndexOf('/') + 1);

/**
 * The types the plane checks through the service's own API, not only the stack's word:
 * `check` by the stack's physical id, `byName` finds one by the name its template gives
 * (a failed apply can leave a resource the stack never listed).
 */
const SERVICE_CHECKS: Readonly<Record<string, { check: Checker; nameProperty: string; byName: NameLookup }>> = {
  'AWS::S3::Bucket': {
    check: (access, id) => withClient(s3, access, (client) => exists(() => client.send(new HeadBucketCommand({ Bucket: id })))),
    nameProperty: 'BucketName',
    byName: async (access, name) => ((await withClient(s3, access, (client) => exists(() => client.send(new HeadBucketCommand({ Bucket: name }))))) ? name : null),
  },
  'AWS::SQS::Queue': {
    check: (access, id) => withClient(sqs, access, (client) => exists(() => client.send(new GetQueueUrlCommand({ QueueName: queueName(id) })))),
    nameProperty: 'QueueName',
    byName: (access, name) =>
      withClient(sqs, access, async (client) => {
        try {
          return (await client.send(new GetQueueUrlCommand({ QueueName: name }))).QueueUrl ?? null;
        } catch (err) {
          if (isAbsent(err)) return null;
          throw err;
        }
      }),
  },
  'AWS::DynamoDB::Table': {
    check: (access, id) => withClient(dynamodb, access, (client) => exists(() => client.send(new DescribeTableCommand({ TableName: id })))),
    nameProperty: 'TableName',
    byName: async (access, name) => ((await withClient(dynamodb, access, (client) => exists(() => client.send(new DescribeTableCommand({ TableName: name }))))) ? name : null),
  },
  'AWS::SNS::Topic': {
    check: (access, id) => withClient(sns, access, (client) => exists(() => client.send(new GetTopicAttributesCommand({ TopicArn: id })))),
    nameProperty: 'TopicName',
    byName: (access, name) =>
      withClient(sns, access, async (client) => {
        for (let token: string | undefined, first = true; first || token !== undefined; first = false) {
          const page = await client.send(new ListTopicsCommand(token === undefined ? {} : { NextToken: token }));
          const found = (page.Topics ?? []).find((topic) => topic.TopicArn?.endsWith(`:${name}`));
          if (found?.TopicArn !== undefined) return found.TopicArn;
          token = page.NextToken;
        }
        return null;
      }),
  },
  'AWS::SSM::Parameter': {
    check: (access, id) => withClient(ssm, access, (client) => exists(() => client.send(new GetParameterCommand({ Name: id })))),
    nameProperty: 'Name',
    byName: async (access, name) => ((await withClient(ssm, access, (client) => exists(() => client.send(new GetParameterCommand({ Name: name }))))) ? name : null),
  },
};

/** The literal name a resource's template gives it, when it gives one (an intrinsic is no name to look up). */
function literalName(template: CfnTemplate, logicalId: string, property: string): string | null {
  const resource = (template.Resources as Record<string, { Properties?: Record<string, unknown> }> | undefined)?.[logicalId];
  const value = resource?.Properties?.[property];
  return typeof value === 'string' ? value : null;
}

function parametersOf(parameters: readonly Parameter[] | undefined): Record<string, string> {
  return Object.fromEntries((parameters ?? []).flatMap((parameter) => (parameter.ParameterKey === undefined ? [] : [[parameter.ParameterKey, parameter.ParameterValue ?? '']])));
}

function isStackMissing(err: unknown): boolean {
  return /does not exist/i.test((err as Error).message ?? '');
}

/**
 * The CloudFormation of one sandbox's emulator, as the plane uses it for an IaC run
 * (DESIGN §14): the stack as it is, change sets named after the run (so a retried step
 * finds its own), execution, a bounded wait that streams the stack's events, and checks
 * of the result through each service's own API.
 */
export class CloudFormationStacks {
  private readonly client: CloudFormationClient;

  /** @param beat says the caller is alive (an activity's heartbeat) at each step of a wait or a check. */
  constructor(
    private readonly access: IacAccess,
    private readonly beat: () => void = () => undefined,
  ) {
    // No SDK retries: a retried CreateChangeSet makes moto a second stack of the name, and a
    // retried ExecuteChangeSet hides whether the first ran. The activity retries, looking first.
    this.client = operatorClient((settings) => new CloudFormationClient({ ...settings, maxAttempts: 1 }), access);
  }

  close(): void {
    this.client.destroy();
  }

  /**
   * The stack as the emulator holds it, or `null`. A REVIEW_IN_PROGRESS stack that never
   * ran a change set (a plan's, or an apply that failed before creating anything) is
   * removed first: moto would put a second stack of the same name beside it.
   */
  async current(stack: string, ownChangeSet?: string): Promise<StackNow | null> {
    let described;
    try {
      described = (await this.client.send(new DescribeStacksCommand({ StackName: stack }))).Stacks?.[0];
    } catch (err) {
      if (isStackMissing(err)) return null;
      throw err;
    }
    if (described === undefined) return null;
    if (described.StackStatus === 'REVIEW_IN_PROGRESS') {
      await this.discardShell(stack, described.StackId ?? stack, ownChangeSet);
      return null;
    }
    const body = (await this.client.send(new GetTemplateCommand({ StackName: stack, TemplateStage: 'Original' }))).TemplateBody ?? '{}';
    const template = readTemplateText(body, `the template stack ${stack} holds`) as CfnTemplate;
    return { status: described.StackStatus ?? 'UNKNOWN', template, parameters: parametersOf(described.Parameters), physicalIds: await this.physicalIds(stack) };
  }

  /**
   * A REVIEW_IN_PROGRESS stack never created anything: this run's own (a retried step
   * keeps it and its change set), the plane's left over (removed, by its id: moto removes
   * every stack of a name), or someone else's under review (refused, never touched).
   */
  private async discardShell(stack: string, stackId: string, ownChangeSet: string | undefined): Promise<void> {
    // moto lists every stack's change sets whatever stack is asked for: keep this stack's.
    const names = ((await this.client.send(new ListChangeSetsCommand({ StackName: stackId }))).Summaries ?? [])
      .filter((summary) => summary.StackId === undefined || summary.StackId === stackId)
      .map((summary) => summary.ChangeSetName ?? '');
    if (ownChangeSet !== undefined && names.includes(ownChangeSet)) return;
    const others = names.filter((name) => !name.startsWith('sandboxplane-'));
    if (others.length > 0) {
      throw new SandboxPlaneError('INVALID_STATE', `stack ${stack} is under review with change sets the plane did not make (${others.join(', ')}); nothing was changed`, {
        hint: 'Let its owner execute or delete those change sets, or choose another --stack.',
      });
    }
    await this.client.send(new DeleteStackCommand({ StackName: stackId }));
  }

  private async physicalIds(stack: string): Promise<Record<string, string>> {
    const ids: Record<string, string> = {};
    for (const row of await this.stackResources(stack)) if (row.physicalId !== null) ids[row.logicalId] = row.physicalId;
    return ids;
  }

  /**
   * Puts what a CDK app's default synthesizer expects into the sandbox before its
   * template is planned: the bootstrap version parameter(s). The plane's own doing, in a
   * sandbox only; an existing parameter is left as it is.
   */
  async bootstrap(needs: CdkBootstrapNeeds): Promise<void> {
    for (const { name } of needs.ssmParameters) {
      if (!name.startsWith('/cdk-bootstrap/')) continue;
      await withClient(ssm, this.access, async (client) => {
        try {
          await client.send(new PutParameterCommand({ Name: name, Value: String(CDK_BOOTSTRAP_VERSION), Type: 'String', Overwrite: false }));
        } catch (err) {
          if (!/AlreadyExists/i.test(errorName(err))) throw err;
        }
      });
    }
  }

  /**
   * The run's change set of `purpose`, created (CREATE for a new stack, UPDATE otherwise)
   * unless an earlier attempt did, and computed: the emulator's rows of it.
   */
  async changeSet(input: { stack: string; name: string; template: CfnTemplate; parameters: Record<string, string>; create: boolean }): Promise<EmulatorChange[]> {
    const existing = await this.describeChangeSet(input.stack, input.name);
    if (existing === undefined) {
      await this.client.send(
        new CreateChangeSetCommand({
          StackName: input.stack,
          ChangeSetName: input.name,
          ChangeSetType: input.create ? 'CREATE' : 'UPDATE',
          TemplateBody: JSON.stringify(input.template),
          Parameters: Object.entries(input.parameters).map(([ParameterKey, ParameterValue]) => ({ ParameterKey, ParameterValue })),
          Capabilities: ['CAPABILITY_IAM', 'CAPABILITY_NAMED_IAM', 'CAPABILITY_AUTO_EXPAND'],
        }),
      );
    }
    const deadline = Date.now() + CHANGE_SET_WAIT_MS;
    for (;;) {
      this.beat();
      const described = await this.describeChangeSet(input.stack, input.name);
      const status = described?.Status;
      if (status === 'CREATE_COMPLETE') return (described?.Changes ?? []).flatMap((change) => (change.ResourceChange === undefined ? [] : [toEmulatorChange(change.ResourceChange)]));
      if (status === 'FAILED') {
        // A change set with nothing to change fails so in CloudFormation; the plane's own diff says the same.
        if (/didn't contain changes|no updates/i.test(described?.StatusReason ?? '')) return [];
        throw new SandboxPlaneError('INVALID_INPUT', `the emulator refused the change set of stack ${input.stack}: ${described?.StatusReason ?? 'no reason given'}`);
      }
      if (Date.now() > deadline)
        throw new SandboxPlaneError('PROVISION_UNAVAILABLE', `the change set of stack ${input.stack} was not computed within ${CHANGE_SET_WAIT_MS / 1000} s (status ${status ?? 'unknown'})`);
      await sleep(POLL_MS);
    }
  }

  private async describeChangeSet(stack: string, name: string) {
    try {
      return await this.client.send(new DescribeChangeSetCommand({ StackName: stack, ChangeSetName: name }));
    } catch (err) {
      if (err instanceof ChangeSetNotFoundException || isStackMissing(err) || /ChangeSetNotFound/i.test(errorName(err))) return undefined;
      throw err;
    }
  }

  /** Removes a plan's change set, and the REVIEW_IN_PROGRESS shell a CREATE change set made: a plan leaves nothing behind. */
  async discardChangeSet(stack: string, name: string): Promise<void> {
    if ((await this.describeChangeSet(stack, name)) !== undefined) await this.client.send(new DeleteChangeSetCommand({ StackName: stack, ChangeSetName: name }));
    await this.current(stack);
  }

  /**
   * Executes the run's change set once: `already` when an earlier attempt did (its
   * execution status moved on), `failed` with the emulator's words when it refused.
   */
  async execute(stack: string, name: string): Promise<{ outcome: 'executed' | 'already' } | { outcome: 'failed'; error: string }> {
    const described = await this.describeChangeSet(stack, name);
    if (described === undefined) return { outcome: 'failed', error: `change set ${name} of stack ${stack} is gone` };
    const before = executionOutcome(described.ExecutionStatus, described.StatusReason);
    if (before !== 'available') return before;
    try {
      // The token makes CloudFormation take a repeated call as the same execution.
      await this.client.send(new ExecuteChangeSetCommand({ StackName: stack, ChangeSetName: name, ClientRequestToken: name }));
      return { outcome: 'executed' };
    } catch (err) {
      // An answer lost on the way back is not a refusal: the change set's own status says whether it ran.
      const after = await this.describeChangeSet(stack, name).catch(() => undefined);
      const outcome = executionOutcome(after?.ExecutionStatus, after?.StatusReason);
      if (outcome !== 'available' && outcome.outcome !== 'failed') return { outcome: 'executed' };
      return { outcome: 'failed', error: describeError(err) };
    }
  }

  /**
   * Waits until the stack is no longer in progress, at most `timeoutMs`, handing each
   * look's newest events to `progress` (the activity's heartbeat). Still in progress at
   * the bound is `stuck`: a failure with a reason, never a wait for ever.
   */
  async settle(stack: string, timeoutMs: number, progress: (seen: StackSettled) => void, sinceIso: string | null = null): Promise<StackSettled> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const seen = await this.look(stack, sinceIso);
      progress(seen);
      if (seen.status === null || !IN_PROGRESS.test(seen.status)) return seen;
      if (Date.now() > deadline) return { ...seen, stuck: true };
      await sleep(POLL_MS * 2);
    }
  }

  /** The stack's status now, and its newest events since `sinceIso` (the change's own; all when `null`). */
  async look(stack: string, sinceIso: string | null = null): Promise<StackSettled> {
    let described;
    try {
      described = (await this.client.send(new DescribeStacksCommand({ StackName: stack }))).Stacks?.[0];
    } catch (err) {
      if (isStackMissing(err)) return { status: null, reason: 'the stack does not exist', events: [], stuck: false };
      throw err;
    }
    const events = (await this.client.send(new DescribeStackEventsCommand({ StackName: stack })).catch(() => ({ StackEvents: [] }))).StackEvents ?? [];
    const since = sinceIso === null ? 0 : Date.parse(sinceIso);
    const lines = events
      .filter((event) => (event.Timestamp?.getTime() ?? Number.POSITIVE_INFINITY) >= since)
      .slice(0, EVENTS_KEPT)
      .reverse()
      .map((event) =>
        `${event.Timestamp?.toISOString() ?? ''} ${event.LogicalResourceId ?? ''} ${event.ResourceStatus ?? ''}${event.ResourceStatusReason ? `: ${event.ResourceStatusReason}` : ''}`.trim(),
      );
    return { status: described?.StackStatus ?? null, reason: described?.StackStatusReason ?? null, events: lines, stuck: false };
  }

  /**
   * The stack's resources as the emulator lists them. moto lists a resource it skipped as
   * an empty row, dropped here; a stack whose listing fails (moto after a failed create)
   * lists nothing, and the service checks say what is really there.
   */
  async stackResources(stack: string): Promise<StackResourceListing[]> {
    const rows: StackResourceSummary[] = [];
    try {
      for (let token: string | undefined, first = true; first || token !== undefined; first = false) {
        const page = await this.client.send(new ListStackResourcesCommand({ StackName: stack, ...(token === undefined ? {} : { NextToken: token }) }));
        rows.push(...(page.StackResourceSummaries ?? []));
        token = page.NextToken;
      }
    } catch (err) {
      if (isStackMissing(err)) return [];
      if (errorName(err) === 'TimeoutError' || /ECONNREFUSED|socket/i.test(String(err))) throw err;
      return [];
    }
    return rows
      .filter((row) => (row.LogicalResourceId ?? '') !== '')
      .map((row) => ({
        stack,
        logicalId: row.LogicalResourceId ?? '',
        type: row.ResourceType ?? '',
        physicalId: row.PhysicalResourceId === undefined || row.PhysicalResourceId === '' ? null : row.PhysicalResourceId,
        status: row.ResourceStatus ?? 'UNKNOWN',
      }));
  }

  /** Every stack of the sandbox (not deleted) with its resources: the IaC half of `resources`. */
  async allStackResources(): Promise<StackResourceListing[]> {
    const names: string[] = [];
    for (let token: string | undefined, first = true; first || token !== undefined; first = false) {
      const page = await this.client.send(new ListStacksCommand(token === undefined ? {} : { NextToken: token }));
      for (const summary of page.StackSummaries ?? []) {
        if (summary.StackName !== undefined && summary.StackStatus !== 'DELETE_COMPLETE' && summary.StackStatus !== 'REVIEW_IN_PROGRESS') names.push(summary.StackName);
      }
      token = page.NextToken;
    }
    const rows: StackResourceListing[] = [];
    for (const name of [...new Set(names)].sort()) rows.push(...(await this.stackResources(name)));
    return rows;
  }

  /**
   * What the stack holds against what the applied template says it should: each
   * resource of `template` by the stack's physical id and the service's own answer, and
   * each one `removed` (with the physical id it had) gone or not.
   */
  /**
   * The resources the change adds that already exist by the name the template gives them
   * (another stack's, or made by hand): looked up before executing, so a failed apply
   * tells them from what it made itself.
   */
  async alreadyThere(template: CfnTemplate, added: readonly string[]): Promise<Record<string, string>> {
    const resources = (template.Resources ?? {}) as Record<string, { Type?: unknown }>;
    const found: Record<string, string> = {};
    for (const logicalId of added) {
      this.beat();
      const check = SERVICE_CHECKS[String(resources[logicalId]?.Type)];
      const name = check === undefined ? null : literalName(template, logicalId, check.nameProperty);
      const physicalId = name === null || check === undefined ? null : await check.byName(this.access, name);
      if (physicalId !== null) found[logicalId] = physicalId;
    }
    return found;
  }

  async verify(input: {
    stack: string;
    template: CfnTemplate;
    removed: readonly { logicalId: string; type: string; physicalId: string | null }[];
    /** What {@link alreadyThere} found before the change ran. */
    preexisting?: Readonly<Record<string, string>>;
  }): Promise<IacResourceRow[]> {
    const listed = new Map((await this.stackResources(input.stack)).map((row) => [row.logicalId, row]));
    const resources = (input.template.Resources ?? {}) as Record<string, { Type?: unknown }>;
    const rows: IacResourceRow[] = [];
    for (const [logicalId, resource] of Object.entries(resources)) {
      const type = String(resource.Type);
      this.beat();
      rows.push(await this.verifyOne(input.template, logicalId, type, listed.get(logicalId), input.preexisting?.[logicalId]));
    }
    for (const gone of input.removed) {
      const check = SERVICE_CHECKS[gone.type];
      if (listed.has(gone.logicalId)) {
        rows.push({ logicalId: gone.logicalId, type: gone.type, physicalId: gone.physicalId, status: 'STILL_PRESENT', detail: 'the stack still lists it' });
        continue;
      }
      if (gone.physicalId === null || check === undefined || !this.access.supports(gone.type)) {
        rows.push({ logicalId: gone.logicalId, type: gone.type, physicalId: gone.physicalId, status: 'REMOVED', detail: 'the stack no longer lists it' });
        continue;
      }
      const still = await check.check(this.access, gone.physicalId);
      rows.push({ logicalId: gone.logicalId, type: gone.type, physicalId: gone.physicalId, status: still ? 'STILL_PRESENT' : 'REMOVED' });
    }
    return rows.sort((a, b) => a.logicalId.localeCompare(b.logicalId));
  }

  private async verifyOne(template: CfnTemplate, logicalId: string, type: string, listed: StackResourceListing | undefined, preexisting: string | undefined): Promise<IacResourceRow> {
    const row = (status: IacResourceStatus, physicalId: string | null, detail?: string): IacResourceRow => ({
      logicalId,
      type,
      physicalId,
      status,
      ...(detail === undefined ? {} : { detail }),
    });
    if (!this.access.supports(type)) return row('NOT_CREATED', null, `${this.access.name} does not create this type here`);
    const check = SERVICE_CHECKS[type];
    if (listed?.physicalId !== undefined && listed.physicalId !== null) {
      if (check === undefined) return row('UNVERIFIED', listed.physicalId, `the stack says ${listed.status}; the plane has no check of its own for ${type}`);
      return (await check.check(this.access, listed.physicalId))
        ? row('VERIFIED', listed.physicalId)
        : row('MISSING', listed.physicalId, `the stack lists it (${listed.status}), but the service does not know ${listed.physicalId}`);
    }
    const name = check === undefined ? null : literalName(template, logicalId, check.nameProperty);
    const found = name === null || check === undefined ? null : await check.byName(this.access, name);
    if (found !== null && preexisting !== undefined) return row('TAKEN', found, await this.holderOf(found));
    if (found !== null) return row('ORPHANED', found, 'the service has it, but the stack does not list it');
    return row('MISSING', null, listed === undefined ? 'the stack does not list it' : `the stack lists it (${listed.status}) with no physical id`);
  }

  /** Who holds a resource that was there before the change: another stack, or nobody the plane can name. */
  private async holderOf(physicalId: string): Promise<string> {
    const holder = (await this.allStackResources().catch(() => [])).find((row) => row.physicalId === physicalId);
    return holder === undefined
      ? 'a resource of that name was there before this apply, made outside any stack'
      : `a resource of that name was there before this apply: stack ${holder.stack} holds it (${holder.logicalId})`;
  }

  /** Whether a settled status is a success. */
  static succeeded(status: string | null): boolean {
    return status !== null && SETTLED_OK.has(status);
  }
}

/** What a change set's execution status says of an execution: not yet (`available`), under way or done, or impossible. */
function executionOutcome(status: string | undefined, reason: string | undefined): 'available' | { outcome: 'already' } | { outcome: 'failed'; error: string } {
  switch (status) {
    case 'AVAILABLE':
      return 'available';
    case 'EXECUTE_IN_PROGRESS':
    case 'EXECUTE_COMPLETE':
    case 'EXECUTE_FAILED':
      return { outcome: 'already' };
    case 'OBSOLETE':
      return { outcome: 'failed', error: 'the change set is obsolete: the stack changed after it was made' };
    case 'UNAVAILABLE':
      // CloudFormation's "no changes": nothing to execute, and the stack is checked all the same.
      return { outcome: 'already' };
    default:
      return { outcome: 'failed', error: `the change set cannot be executed (${status ?? 'no status'}${reason ? `: ${reason}` : ''})` };
  }
}

function toEmulatorChange(change: { Action?: string; LogicalResourceId?: string; ResourceType?: string }): EmulatorChange {
  return { action: change.Action ?? 'Unknown', logicalId: change.LogicalResourceId ?? '', type: change.ResourceType ?? '' };
}

/**
 * Where the emulator's change set and the plane's diff disagree, in words a reviewer can
 * act on. The plane's diff is the verdict; moto executes what it says, so a resource it
 * calls Modify that the plane finds unchanged is re-created there (with a new physical id).
 */
export function crossCheck(plane: readonly { action: PlanAction; logicalId: string }[], emulator: readonly EmulatorChange[], emulatorName: string): string[] {
  if (emulator.length === 0 && plane.length > 0) return [`${emulatorName}'s change set lists no changes (it gives no preview); the plane's own diff is all there is to read`];
  const ours = new Map(plane.map((change) => [change.logicalId, change.action]));
  const theirs = new Map(emulator.map((change) => [change.logicalId, change.action]));
  const notes: string[] = [];
  for (const [logicalId, action] of [...theirs].sort(([a], [b]) => a.localeCompare(b))) {
    const planned = ours.get(logicalId);
    if (planned === action) continue;
    if (planned === undefined && action === 'Modify') {
      notes.push(`${emulatorName}'s change set says Modify for ${logicalId}, which the plane finds unchanged; ${emulatorName} may re-create it with a new physical id`);
    } else if (planned === undefined) {
      notes.push(`${emulatorName}'s change set says ${action} for ${logicalId}, which the plane finds unchanged`);
    } else {
      notes.push(`${emulatorName}'s change set says ${action} for ${logicalId}; the plane says ${planned}`);
    }
  }
  for (const [logicalId, action] of [...ours].sort(([a], [b]) => a.localeCompare(b))) {
    if (!theirs.has(logicalId)) notes.push(`the plane says ${action} for ${logicalId}; ${emulatorName}'s change set does not list it`);
  }
  return notes;
}
