import { Context, log } from '@temporalio/activity';
import type { AdapterRegistry, IacAccess } from '../adapters/cloud-emulator-adapter';
import { changeSetName, CloudFormationStacks, type StackSettled } from '../adapters/cloudformation-stacks';
import { cloudFormationResourceSpec } from '../adapters/cloudformation-resource-spec';
import { SandboxPlaneError } from '../domain/errors';
import { cdkBootstrapNeeds } from '../domain/iac/cdk-bootstrap';
import { FAILING_RESOURCE_STATUSES, iacTargetOfTarget, type IacResourceRow, type IacRuntimeRef, type ShownPlan } from '../domain/iac/iac-run';
import type { TargetRecord } from '../domain/targets';
import type { ParameterSeal } from '../crypto/parameter-seal';
import { buildPlan, plannedProperties, pseudoParameters } from '../domain/iac/plan';
import { isSealedParameterValue, parametersForDigest, sealingProblems } from '../domain/iac/sealed-parameters';
import type { CfnTemplate } from '../domain/iac/template';
import type { AdapterName } from '../domain/service-catalog';
import { withTaxonomy } from './activity-failure';

/**
 * Where an IaC step works: a sandbox, as its lifecycle granted it (no credentials, only
 * where its containers run), or an operator's target (its region, endpoint and profile
 * name: the key itself is the worker's, found by the AWS SDK's credential chain).
 */
export type IacPlace =
  | { readonly kind: 'sandbox'; readonly sandboxId: string; readonly adapter: AdapterName; readonly runtime: IacRuntimeRef }
  | { readonly kind: 'target'; readonly target: Pick<TargetRecord, 'name' | 'region' | 'endpoint' | 'profile'> };

/** One change of one stack: what every planning step needs. */
export interface IacChangeRequest {
  readonly place: IacPlace;
  readonly runId: string;
  readonly stack: string;
  readonly template: CfnTemplate;
  readonly parameters: Record<string, string>;
  /** Whose change it is: a sealed NoEcho value opens only for its principal. */
  readonly principal?: string;
}

/** A computed plan, and what an apply checks afterwards: the physical ids of what the change removes. */
export interface PlannedChange {
  readonly plan: ShownPlan;
  /** `retained`: removed from the stack but kept by its DeletionPolicy, so still there is right. */
  readonly removed: readonly { logicalId: string; type: string; physicalId: string | null; retained?: boolean }[];
  /** For an apply: what the change adds that already exists by its name, by logical id (see CloudFormationStacks.alreadyThere). */
  readonly preexisting: Readonly<Record<string, string>>;
  /** False when the place made no change set because nothing changes (moto refuses one at once): there is nothing to execute. */
  readonly executable?: boolean;
}

/** How an apply ended, as the plane checked it. */
export interface AppliedChange {
  readonly ok: boolean;
  readonly stackStatus: string | null;
  readonly resources: readonly IacResourceRow[];
  readonly events: readonly string[];
  /** Why it is not ok, in words (the stack's reason, what is missing). */
  readonly problems: readonly string[];
}

/** How long an executed change may stay in progress before the run calls it stuck. */
export const SETTLE_TIMEOUT_MS = 10 * 60_000;

/** How a worker reaches the CloudFormation of a place: a docker host its sandboxes', the targets worker its targets'. */
export type IacAccessResolver = (place: IacPlace) => Promise<IacAccess>;

/** A docker host's resolver: the emulator of a sandbox placed on it, as the plane itself. */
export function sandboxAccess(adapters: AdapterRegistry): IacAccessResolver {
  return async (place) => {
    if (place.kind !== 'sandbox') throw new SandboxPlaneError('INTERNAL', `a docker worker was asked to reach target ${place.target.name}`);
    const adapter = adapters[place.adapter];
    if (adapter?.iacAccess === undefined) {
      throw new SandboxPlaneError('ADAPTER_UNAVAILABLE', `the ${place.adapter} adapter has no CloudFormation: infrastructure as code needs a moto (or Floci) sandbox`, {
        hint: 'Create a sandbox with `--adapter moto` (and the services the template touches) and plan there.',
      });
    }
    return adapter.iacAccess(place.sandboxId, { runtimeIds: place.runtime.runtimeIds, ...(place.runtime.engineId === undefined ? {} : { engineId: place.runtime.engineId }) });
  };
}

/** The targets worker's resolver: the target's CloudFormation, signed by the AWS SDK's credential chain of this process. */
export const targetAccess: IacAccessResolver = async (place) => {
  if (place.kind !== 'target') throw new SandboxPlaneError('INTERNAL', `the targets worker was asked to reach sandbox ${place.sandboxId}`);
  const { target } = place;
  return {
    ...(target.endpoint === null ? {} : { endpoint: target.endpoint }),
    region: target.region,
    headers: {},
    signer: target.profile === null ? { kind: 'chain' } : { kind: 'chain', profile: target.profile },
    // A target is a real account: the plane names nothing unsupported there.
    supports: () => true,
    target: iacTargetOfTarget(target.name),
    seedsCdkBootstrap: false,
    name: target.name,
  };
};

async function withStacks<T>(resolve: IacAccessResolver, place: IacPlace, work: (stacks: CloudFormationStacks, access: IacAccess) => Promise<T>): Promise<T> {
  return withTaxonomy(async () => {
    const access = await resolve(place);
    const context = Context.current();
    // Every step beats, on a timer too (one call may take long: moto executes a change set in
    // its answer): a worker that dies mid-step is noticed in seconds, not at the step's timeout.
    context.heartbeat();
    const beating = setInterval(() => context.heartbeat(), 10_000);
    const stacks = new CloudFormationStacks(access, () => context.heartbeat());
    try {
      return await work(stacks, access);
    } finally {
      clearInterval(beating);
      stacks.close();
    }
  });
}

/**
 * The plan of a change: the plane's own diff of the template against the stack as the
 * emulator holds it, cross-checked with the emulator's change set `name` (created, or
 * found again on a retry). A CDK template's bootstrap parameters are put in first.
 */
async function planWith(stacks: CloudFormationStacks, access: IacAccess, input: IacChangeRequest, name: string, purpose: 'plan' | 'apply', seal: ParameterSeal): Promise<PlannedChange> {
  if (access.seedsCdkBootstrap) await stacks.bootstrap(cdkBootstrapNeeds(input.template));
  const base = await stacks.current(input.stack, name);
  // Opened here, for the change set and the plan's evaluation only: they never leave this step.
  const opened = openParameters(input, seal);
  const emulator = await stacks.changeSet({ stack: input.stack, name, template: input.template, parameters: opened, create: base === null });
  const plan = buildPlan({
    stack: input.stack,
    base: base === null ? null : { template: base.template, parameters: base.parameters },
    next: { template: input.template, parameters: opened },
    digestParameters: parametersForDigest(input.parameters),
    keyed: (parameter, value) => seal.digestForm({ principal: input.principal ?? '', parameter }, value),
    spec: cloudFormationResourceSpec,
    place: {
      // An approval of this plan is for this place: the same change elsewhere is another plan.
      target: access.target,
      isSupported: (type) => access.supports(type),
      ...(access.updateGaps === undefined ? {} : { updateGaps: (type: string, properties: readonly string[]) => access.updateGaps?.(type, properties) }),
      pseudo: pseudoParameters(access.region, input.stack),
      emulator: { name: access.name, changes: emulator.changes },
    },
  });
  const removed = plan.changes
    .filter((change) => change.action === 'Remove')
    .map((change) => ({ logicalId: change.logicalId, type: change.type, physicalId: base?.physicalIds[change.logicalId] ?? null, retained: change.retained }));
  const added = plan.changes.filter((change) => change.action === 'Add').map((change) => change.logicalId);
  const preexisting = purpose === 'apply' ? await stacks.alreadyThere(input.template, added) : {};
  return { plan, removed, preexisting, executable: emulator.made };
}

/**
 * The parameters with their sealed NoEcho values opened, each for the run's principal: for
 * this step's own calls, never returned. Sealed text for a parameter that is not NoEcho is
 * refused, never opened: it would show a value copied from another run in clear.
 */
function openParameters(input: Pick<IacChangeRequest, 'template' | 'parameters' | 'principal'>, seal: ParameterSeal): Record<string, string> {
  const problems = sealingProblems(input.template, input.parameters);
  if (problems.length > 0) throw new SandboxPlaneError('INVALID_INPUT', `parameters: ${problems.join('; ')}`);
  const principal = input.principal ?? '';
  return Object.fromEntries(Object.entries(input.parameters).map(([parameter, value]) => [parameter, isSealedParameterValue(value) ? seal.open({ principal, parameter }, value) : value]));
}

/** What the run heartbeats while it waits for a stack: its status and newest events, so the UI shows the apply as it goes. */
function heartbeatProgress(seen: StackSettled): void {
  Context.current().heartbeat({ stackStatus: seen.status, events: seen.events.slice(-5) });
}

/**
 * The IaC steps (DESIGN §14): a docker host's, on the queue of the host a sandbox runs on
 * (the emulator listens on that host's loopback), or the targets worker's, with `resolve`
 * reaching each. Each is safe to retry; `executeIacChange` looks before it executes.
 */
export function createIacActivities(resolve: IacAccessResolver, seal: ParameterSeal) {
  return {
    /** A plan that changes nothing: its change set (and a new stack's REVIEW_IN_PROGRESS shell) is removed again. */
    async planIacChange(input: IacChangeRequest): Promise<PlannedChange> {
      return withStacks(resolve, input.place, async (stacks, access) => {
        const name = changeSetName(input.runId, 'plan');
        try {
          return await planWith(stacks, access, input, name, 'plan', seal);
        } finally {
          await stacks.discardChangeSet(input.stack, name);
        }
      });
    },

    /** The approved change's own change set, planned again: the workflow compares the digest with the approved one before executing. */
    async prepareIacApply(input: IacChangeRequest): Promise<PlannedChange> {
      return withStacks(resolve, input.place, (stacks, access) => planWith(stacks, access, input, changeSetName(input.runId, 'apply'), 'apply', seal));
    },

    /** Removes the apply's change set when the run will not execute it (a stale plan). */
    async discardIacApply(input: { place: IacPlace; runId: string; stack: string }): Promise<void> {
      return withStacks(resolve, input.place, (stacks) => stacks.discardChangeSet(input.stack, changeSetName(input.runId, 'apply')));
    },

    /** Executes the change set, at most once: a second attempt finds it executed and says `already`. */
    async executeIacChange(input: { place: IacPlace; runId: string; stack: string }): Promise<{ outcome: 'executed' | 'already' } | { outcome: 'failed'; error: string }> {
      return withStacks(resolve, input.place, async (stacks, access) => {
        const result = await stacks.execute(input.stack, changeSetName(input.runId, 'apply'));
        log.info('IaC change executed', { target: access.target, stack: input.stack, runId: input.runId, outcome: result.outcome });
        return result;
      });
    },

    /**
     * Waits (bounded, heartbeating the stack's events) until the stack settles, then
     * checks what it holds against the applied template through each service's own API.
     */
    async settleIacChange(
      input: IacChangeRequest & { removed: PlannedChange['removed']; preexisting?: PlannedChange['preexisting']; executionError: string | null; sinceIso?: string | null },
    ): Promise<AppliedChange> {
      return withStacks(resolve, input.place, async (stacks, access) => {
        // A refused execution changes nothing more: look once, do not wait for a stack that will not move.
        const since = input.sinceIso ?? null;
        const seen = input.executionError === null ? await stacks.settle(input.stack, SETTLE_TIMEOUT_MS, heartbeatProgress, since) : await stacks.look(input.stack, since);
        const opened = openParameters(input, seal);
        const resolved = plannedProperties({ template: input.template, parameters: opened }, pseudoParameters(access.region, input.stack));
        const resources = await stacks.verify({ stack: input.stack, template: input.template, removed: input.removed, preexisting: input.preexisting ?? {}, resolved });
        const problems: string[] = [];
        if (input.executionError !== null) problems.push(`${access.name} refused to execute the change: ${input.executionError}`);
        if (seen.stuck) problems.push(`stack ${input.stack} was still ${seen.status} after ${SETTLE_TIMEOUT_MS / 60_000} minutes`);
        else if (!CloudFormationStacks.succeeded(seen.status)) {
          problems.push(
            `stack ${input.stack} is ${seen.status ?? 'gone'}${seen.reason ? ` (${seen.reason})` : ''}${seen.status !== null && /IN_PROGRESS$/.test(seen.status) && input.place.kind === 'sandbox' ? '; the emulator does not roll back' : ''}`,
          );
        }
        for (const row of resources) if (FAILING_RESOURCE_STATUSES.has(row.status)) problems.push(`${row.logicalId} (${row.type}) is ${row.status}${row.detail ? `: ${row.detail}` : ''}`);
        return { ok: problems.length === 0, stackStatus: seen.status, resources, events: seen.events, problems };
      });
    },
  };
}
