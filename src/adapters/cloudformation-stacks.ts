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
  type ResourceChange,
  type StackResourceSummary,
} from '@aws-sdk/client-cloudformation';
import { PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { SandboxPlaneError } from '../domain/errors';
import { CDK_BOOTSTRAP_VERSION, type CdkBootstrapNeeds } from '../domain/iac/cdk-bootstrap';
import type { IacResourceRow, IacResourceStatus } from '../domain/iac/iac-run';
import { executionOutcome } from '../domain/iac/change-set-outcome';
import type { EmulatorChange } from '../domain/iac/cross-check';
import type { CfnTemplate } from '../domain/iac/template';
import { readTemplateText } from '../domain/iac/template-yaml';
import { errorName, isAbsent, isForbidden, isServerFault, operatorClient, withClient, type OperatorClientSettings } from './aws-operator-client';
import { describeMismatches, resolveStackRefs } from './aws-property-compare';
import { AWS_SERVICES, type PlannedProperties } from './aws-services';
import type { IacAccess } from './cloud-emulator-adapter';

/** A stack as the emulator holds it now; `null` when there is none (or only a plan's REVIEW_IN_PROGRESS shell). */
export interface StackNow {
  readonly status: string;
  readonly template: CfnTemplate;
  readonly parameters: Record<string, string>;
  /** Physical ids of the stack's resources, by logical id. */
  readonly physicalIds: Record<string, string>;
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

function describeError(err: unknown): string {
  return `${errorName(err)}: ${(err as Error).message}`;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const ssm = (settings: OperatorClientSettings) => new SSMClient(settings);

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
  async changeSet(input: { stack: string; name: string; template: CfnTemplate; parameters: Record<string, string>; create: boolean }): Promise<{ changes: EmulatorChange[]; made: boolean }> {
    const existing = await this.describeChangeSet(input.stack, input.name);
    if (existing === undefined) {
      try {
        await this.client.send(
          new CreateChangeSetCommand({
            StackName: input.stack,
            ChangeSetName: input.name,
            ChangeSetType: input.create ? 'CREATE' : 'UPDATE',
            TemplateBody: JSON.stringify(input.template),
            Parameters: Object.entries(input.parameters).map(([ParameterKey, ParameterValue]) => ({ ParameterKey, ParameterValue })),
            // No CAPABILITY_AUTO_EXPAND: a template that needs a macro is refused before it gets here.
            Capabilities: ['CAPABILITY_IAM', 'CAPABILITY_NAMED_IAM'],
          }),
        );
      } catch (err) {
        // moto refuses a change set that changes nothing at once (CloudFormation makes one that FAILED, below): there is nothing to execute.
        if (/No updates are to be performed/i.test((err as Error).message ?? '')) return { changes: [], made: false };
        throw err;
      }
    }
    const deadline = Date.now() + CHANGE_SET_WAIT_MS;
    for (;;) {
      this.beat();
      const described = await this.describeChangeSet(input.stack, input.name);
      const status = described?.Status;
      if (status === 'CREATE_COMPLETE') {
        return { changes: (described?.Changes ?? []).flatMap((change) => (change.ResourceChange === undefined ? [] : [toEmulatorChange(change.ResourceChange)])), made: true };
      }
      if (status === 'FAILED') {
        // A change set with nothing to change fails so in CloudFormation; the plane's own diff says the same.
        if (/didn't contain changes|no updates/i.test(described?.StatusReason ?? '')) return { changes: [], made: true };
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
   * The resources the change adds that already exist by the name the template gives them
   * (another stack's, or made by hand): looked up before executing, so a failed apply
   * tells them from what it made itself.
   */
  async alreadyThere(template: CfnTemplate, added: readonly string[]): Promise<Record<string, string>> {
    const resources = (template.Resources ?? {}) as Record<string, { Type?: unknown; Properties?: PlannedProperties }>;
    const found: Record<string, string> = {};
    for (const logicalId of added) {
      this.beat();
      const physicalId = await this.findByName(String(resources[logicalId]?.Type), resources[logicalId]?.Properties ?? {});
      if (physicalId !== null) found[logicalId] = physicalId;
    }
    return found;
  }

  /** The physical id of the resource of `type` named as `planned` names it, when it names one and the service has it. */
  private async findByName(type: string, planned: PlannedProperties): Promise<string | null> {
    const service = AWS_SERVICES[type];
    if (service?.nameProperty === undefined || service.byName === undefined) return null;
    const name = planned[service.nameProperty];
    // An intrinsic is no name to look up.
    return typeof name === 'string' ? service.byName(this.access, name) : null;
  }

  /**
   * What the stack holds against what the applied template says it should: each
   * resource of `template` by the stack's physical id and the service's own answer, its
   * planned properties read back, and each one `removed` (with the physical id it had)
   * gone or not.
   */
  async verify(input: {
    stack: string;
    template: CfnTemplate;
    /** `retained`: its DeletionPolicy keeps it, so the service still having it is right. */
    removed: readonly { logicalId: string; type: string; physicalId: string | null; retained?: boolean }[];
    /** What {@link alreadyThere} found before the change ran. */
    preexisting?: Readonly<Record<string, string>>;
    /**
     * Each resource's Properties with parameters and conditions resolved, by logical id;
     * without it the template's own are read back (what an intrinsic sets is not compared).
     */
    resolved?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  }): Promise<IacResourceRow[]> {
    const listing = await this.stackResources(input.stack);
    const listed = new Map(listing.map((row) => [row.logicalId, row]));
    const physicalIds = Object.fromEntries(listing.flatMap((row) => (row.physicalId === null ? [] : [[row.logicalId, row.physicalId]])));
    const resources = (input.template.Resources ?? {}) as Record<string, { Type?: unknown; Properties?: PlannedProperties }>;
    const rows: IacResourceRow[] = [];
    for (const [logicalId, resource] of Object.entries(resources)) {
      // A resource whose condition is false is not created: nothing to find.
      if (input.resolved !== undefined && !Object.hasOwn(input.resolved, logicalId)) continue;
      this.beat();
      // A Ref of another resource of the stack is its physical id, known now.
      const planned = resolveStackRefs(input.resolved?.[logicalId] ?? resource.Properties ?? {}, physicalIds);
      rows.push(await this.verifyOne({ logicalId, type: String(resource.Type), planned }, listed.get(logicalId), input.preexisting?.[logicalId]));
    }
    for (const gone of input.removed) {
      const service = AWS_SERVICES[gone.type];
      if (listed.has(gone.logicalId)) {
        rows.push({ logicalId: gone.logicalId, type: gone.type, physicalId: gone.physicalId, status: 'STILL_PRESENT', detail: 'the stack still lists it' });
        continue;
      }
      const still = gone.physicalId === null || service === undefined || !this.access.supports(gone.type) ? null : await service.exists(this.access, gone.physicalId);
      if (still === null) {
        rows.push({ logicalId: gone.logicalId, type: gone.type, physicalId: gone.physicalId, status: 'REMOVED', detail: 'the stack no longer lists it' });
        continue;
      }
      if (gone.retained === true && still) {
        rows.push({ logicalId: gone.logicalId, type: gone.type, physicalId: gone.physicalId, status: 'REMOVED', detail: 'the stack no longer lists it, and its DeletionPolicy kept it' });
        continue;
      }
      if (gone.retained === true) {
        // What the emulator did not do is never a proof: Retain was the plan, and the resource is gone.
        const mismatches = [{ path: 'DeletionPolicy', planned: 'Retain', observed: 'deleted' }];
        const detail = `the stack no longer lists it, but ${this.access.name} deleted it although its DeletionPolicy keeps it`;
        rows.push({ logicalId: gone.logicalId, type: gone.type, physicalId: gone.physicalId, status: 'MISMATCHED', detail, mismatches });
        continue;
      }
      rows.push({ logicalId: gone.logicalId, type: gone.type, physicalId: gone.physicalId, status: still ? 'STILL_PRESENT' : 'REMOVED' });
    }
    return rows.sort((a, b) => a.logicalId.localeCompare(b.logicalId));
  }

  private async verifyOne(
    resource: { logicalId: string; type: string; planned: PlannedProperties },
    listed: StackResourceListing | undefined,
    preexisting: string | undefined,
  ): Promise<IacResourceRow> {
    const { logicalId, type, planned } = resource;
    const row = (status: IacResourceStatus, physicalId: string | null, detail?: string): IacResourceRow => ({
      logicalId,
      type,
      physicalId,
      status,
      ...(detail === undefined ? {} : { detail }),
    });
    if (!this.access.supports(type)) return row('NOT_CREATED', null, `${this.access.name} does not create this type here`);
    const service = AWS_SERVICES[type];
    if (listed?.physicalId !== undefined && listed.physicalId !== null) {
      const physicalId = listed.physicalId;
      if (service === undefined) return row('UNVERIFIED', physicalId, `the stack says ${listed.status}; the plane has no check of its own for ${type}`);
      let mismatches;
      try {
        const there = await service.exists(this.access, physicalId, planned);
        if (there === null) return row('UNVERIFIED', physicalId, `the stack says ${listed.status}; its physical id is no name the service knows, and the template names nothing to look at`);
        if (!there) return row('MISSING', physicalId, `the stack lists it (${listed.status}), but the service does not know ${physicalId}`);
        mismatches = await service.readBack(this.access, physicalId, planned);
      } catch (err) {
        if (isAbsent(err)) return row('MISSING', physicalId, `the stack lists it (${listed.status}), but the service lost ${physicalId} while its properties were read`);
        // A target's role may see a resource and not its properties: no proof either way.
        if (isForbidden(err)) return row('UNVERIFIED', physicalId, `the service has it, but refused to show its properties (${errorName(err)})`);
        // moto 5.2.5 fails on every call about a key whose KeyPolicy a template gave as an object: no proof either way, and no retry mends it.
        if (isServerFault(err)) return row('UNVERIFIED', physicalId, `the stack says ${listed.status}, but the service fails when asked for it (${describeError(err)})`);
        throw err;
      }
      if (mismatches.length === 0) return row('VERIFIED', physicalId);
      return { ...row('MISMATCHED', physicalId, describeMismatches(this.access.name, mismatches)), mismatches };
    }
    const found = await this.findByName(type, planned);
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

/** A change set row: moto gives the action alone; CloudFormation its Replacement and which properties change, kept for the cross-check. */
function toEmulatorChange(change: ResourceChange): EmulatorChange {
  const details = (change.Details ?? []).flatMap((detail) =>
    detail.Target?.Attribute === 'Properties' && detail.Target.Name !== undefined
      ? [{ name: detail.Target.Name, ...(detail.Target.RequiresRecreation === undefined ? {} : { requiresRecreation: detail.Target.RequiresRecreation }) }]
      : [],
  );
  return {
    action: change.Action ?? 'Unknown',
    logicalId: change.LogicalResourceId ?? '',
    type: change.ResourceType ?? '',
    ...(change.Replacement === undefined ? {} : { replacement: change.Replacement }),
    ...(details.length === 0 ? {} : { details }),
  };
}
