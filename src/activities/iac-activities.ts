import { Context, log } from '@temporalio/activity';
import type { AdapterRegistry, IacAccess } from '../adapters/cloud-emulator-adapter';
import { changeSetName, CloudFormationStacks, crossCheck, type StackSettled } from '../adapters/cloudformation-stacks';
import { SandboxPlaneError } from '../domain/errors';
import { cdkBootstrapNeeds } from '../domain/iac/cdk-bootstrap';
import { FAILING_RESOURCE_STATUSES, type IacResourceRow, type IacRuntimeRef, type ShownPlan } from '../domain/iac/iac-run';
import { buildPlan } from '../domain/iac/plan';
import type { CfnTemplate } from '../domain/iac/template';
import type { AdapterName } from '../domain/service-catalog';
import { withTaxonomy } from './activity-failure';

/** Which sandbox an IaC step works on, as its lifecycle granted it: no credentials, only where its containers run. */
export interface IacSandboxRef {
  readonly sandboxId: string;
  readonly adapter: AdapterName;
  readonly runtime: IacRuntimeRef;
}

/** One change of one stack: what every planning step needs. */
export interface IacChangeRequest extends IacSandboxRef {
  readonly runId: string;
  readonly stack: string;
  readonly template: CfnTemplate;
  readonly parameters: Record<string, string>;
}

/** A computed plan, and what an apply checks afterwards: the physical ids of what the change removes. */
export interface PlannedChange {
  readonly plan: ShownPlan;
  /** The stack's status before the change (`null`: no stack yet). */
  readonly baseStatus: string | null;
  readonly removed: readonly { logicalId: string; type: string; physicalId: string | null }[];
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

function accessFor(adapters: AdapterRegistry, ref: IacSandboxRef): Promise<IacAccess> {
  const adapter = adapters[ref.adapter];
  if (adapter?.iacAccess === undefined) {
    throw new SandboxPlaneError('ADAPTER_UNAVAILABLE', `the ${ref.adapter} adapter has no CloudFormation: infrastructure as code needs a moto (or Floci) sandbox`);
  }
  return adapter.iacAccess(ref.sandboxId, { runtimeIds: ref.runtime.runtimeIds, ...(ref.runtime.engineId === undefined ? {} : { engineId: ref.runtime.engineId }) });
}

async function withStacks<T>(adapters: AdapterRegistry, ref: IacSandboxRef, work: (stacks: CloudFormationStacks, access: IacAccess) => Promise<T>): Promise<T> {
  return withTaxonomy(async () => {
    const access = await accessFor(adapters, ref);
    const stacks = new CloudFormationStacks(access);
    try {
      return await work(stacks, access);
    } finally {
      stacks.close();
    }
  });
}

/**
 * The plan of a change: the plane's own diff of the template against the stack as the
 * emulator holds it, cross-checked with the emulator's change set `name` (created, or
 * found again on a retry). A CDK template's bootstrap parameters are put in first.
 */
async function planWith(stacks: CloudFormationStacks, access: IacAccess, input: IacChangeRequest, name: string, adapter: AdapterName): Promise<PlannedChange> {
  await stacks.bootstrap(cdkBootstrapNeeds(input.template));
  const base = await stacks.current(input.stack);
  const emulator = await stacks.changeSet({ stack: input.stack, name, template: input.template, parameters: input.parameters, create: base === null });
  const plan = buildPlan({
    stack: input.stack,
    base: base === null ? null : { template: base.template, parameters: base.parameters },
    next: { template: input.template, parameters: input.parameters },
    isSupported: (type) => access.supportedTypes.has(type),
  });
  const removed = plan.changes
    .filter((change) => change.action === 'Remove')
    .map((change) => ({ logicalId: change.logicalId, type: change.type, physicalId: base?.physicalIds[change.logicalId] ?? null }));
  return { plan: { ...plan, crossCheck: crossCheck(plan.changes, emulator, adapter) }, baseStatus: base?.status ?? null, removed };
}

/** What the run heartbeats while it waits for a stack: its status and newest events, so the UI shows the apply as it goes. */
function heartbeatProgress(seen: StackSettled): void {
  Context.current().heartbeat({ stackStatus: seen.status, events: seen.events.slice(-5) });
}

/**
 * The IaC steps of a docker host (DESIGN §14), on the queue of the host its sandbox runs
 * on (the emulator listens on that host's loopback). Each is safe to retry but
 * `executeIacChange`, which the workflow runs once.
 */
export function createIacActivities(deps: { readonly adapters: AdapterRegistry }) {
  return {
    /** A plan that changes nothing: its change set (and a new stack's REVIEW_IN_PROGRESS shell) is removed again. */
    async planIacChange(input: IacChangeRequest): Promise<PlannedChange> {
      return withStacks(deps.adapters, input, async (stacks, access) => {
        const name = changeSetName(input.runId, 'plan');
        try {
          return await planWith(stacks, access, input, name, input.adapter);
        } finally {
          await stacks.discardChangeSet(input.stack, name);
        }
      });
    },

    /** The approved change's own change set, planned again: the workflow compares the digest with the approved one before executing. */
    async prepareIacApply(input: IacChangeRequest): Promise<PlannedChange> {
      return withStacks(deps.adapters, input, (stacks, access) => planWith(stacks, access, input, changeSetName(input.runId, 'apply'), input.adapter));
    },

    /** Removes the apply's change set when the run will not execute it (a stale plan). */
    async discardIacApply(input: IacSandboxRef & { runId: string; stack: string }): Promise<void> {
      return withStacks(deps.adapters, input, (stacks) => stacks.discardChangeSet(input.stack, changeSetName(input.runId, 'apply')));
    },

    /** Executes the change set, at most once: a second attempt finds it executed and says `already`. */
    async executeIacChange(input: IacSandboxRef & { runId: string; stack: string }): Promise<{ outcome: 'executed' | 'already' } | { outcome: 'failed'; error: string }> {
      return withStacks(deps.adapters, input, async (stacks) => {
        const result = await stacks.execute(input.stack, changeSetName(input.runId, 'apply'));
        log.info('IaC change executed', { sandboxId: input.sandboxId, stack: input.stack, runId: input.runId, outcome: result.outcome });
        return result;
      });
    },

    /**
     * Waits (bounded, heartbeating the stack's events) until the stack settles, then
     * checks what it holds against the applied template through each service's own API.
     */
    async settleIacChange(input: IacChangeRequest & { removed: PlannedChange['removed']; executionError: string | null }): Promise<AppliedChange> {
      return withStacks(deps.adapters, input, async (stacks) => {
        // A refused execution changes nothing more: look once, do not wait for a stack that will not move.
        const seen = input.executionError === null ? await stacks.settle(input.stack, SETTLE_TIMEOUT_MS, heartbeatProgress) : await stacks.look(input.stack);
        const resources = await stacks.verify({ stack: input.stack, template: input.template, removed: input.removed });
        const problems: string[] = [];
        if (input.executionError !== null) problems.push(`the emulator refused to execute the change: ${input.executionError}`);
        if (seen.stuck) problems.push(`stack ${input.stack} was still ${seen.status} after ${SETTLE_TIMEOUT_MS / 60_000} minutes`);
        else if (!CloudFormationStacks.succeeded(seen.status)) {
          problems.push(
            `stack ${input.stack} is ${seen.status ?? 'gone'}${seen.reason ? ` (${seen.reason})` : ''}${seen.status !== null && /IN_PROGRESS$/.test(seen.status) ? '; the emulator does not roll back' : ''}`,
          );
        }
        for (const row of resources) if (FAILING_RESOURCE_STATUSES.has(row.status)) problems.push(`${row.logicalId} (${row.type}) is ${row.status}${row.detail ? `: ${row.detail}` : ''}`);
        return { ok: problems.length === 0, stackStatus: seen.status, resources, events: seen.events, problems };
      });
    },
  };
}
