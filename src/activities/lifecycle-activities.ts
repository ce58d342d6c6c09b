import { Context, log } from '@temporalio/activity';
import type {
  AdapterContext,
  AdapterRegistry,
  CloudEmulatorAdapter,
  DestroyReport,
  ResourceRef,
} from '../adapters/cloud-emulator-adapter';
import { SandboxPlaneError } from '../domain/errors';
import type { FeatureFlags } from '../domain/feature-flags';
import type { RuntimeHandle } from '../domain/lifecycle-record';
import type { LifecycleSettings } from '../domain/lifecycle-settings';
import type { PolicyEffect } from '../domain/policy';
import type { IdentifiedRequest } from '../domain/sandbox-request';
import type { SandboxState } from '../domain/sandbox-states';
import { screenRequest, type Decision } from '../domain/screening';
import { ADAPTER_NAMES, type AdapterName } from '../domain/service-catalog';
import type { OperationRecord, SandboxSnapshot, Store } from '../store';
import { withTaxonomy } from './activity-failure';

export interface LifecycleActivityDeps {
  readonly store: Store;
  readonly adapters: AdapterRegistry;
  readonly flags: FeatureFlags;
  readonly lifecycle: LifecycleSettings;
}

export interface ScreeningResult {
  readonly decision: Decision;
  readonly settings: LifecycleSettings;
  /** The state the projection now shows. */
  readonly state: SandboxState;
}

/** What version-1 lifecycles (started before the state machine) expect; current runs send `nextStates`. */
const V1_STATE_AFTER_SCREENING: Readonly<Record<PolicyEffect, SandboxState>> = {
  deny: 'DENIED',
  require_approval: 'AWAITING_APPROVAL',
  allow: 'PROVISIONING',
};

function adapterContext(): AdapterContext {
  const context = Context.current();
  return { heartbeat: (details) => context.heartbeat(details), cancelled: context.cancellationSignal };
}

function adapterFor(adapters: AdapterRegistry, name: AdapterName): CloudEmulatorAdapter {
  const adapter = adapters[name];
  if (adapter === undefined) throw new SandboxPlaneError('ADAPTER_UNAVAILABLE', `this worker does not run the ${name} adapter`);
  return adapter;
}

/**
 * Activities of the sandbox lifecycle. Projection writes are keyed by workflow id and
 * step, so a retried activity records nothing twice.
 */
export function createLifecycleActivities(deps: LifecycleActivityDeps) {
  const { store } = deps;
  const availableAdapters = ADAPTER_NAMES.filter((name) => deps.adapters[name] !== undefined);

  return {
    /** Writes the sandbox's snapshot and one audit row; `false` when this step was already recorded. */
    async recordTransition(input: { snapshot: SandboxSnapshot; operation: OperationRecord }): Promise<boolean> {
      return withTaxonomy(() => store.sandboxes.record(input.snapshot, input.operation));
    },

    /**
     * Screens the request against flags, policy rows, the catalog, TTL rules and the
     * principal's quota, and records the verdict — all in one write transaction, so
     * two requests racing for the last quota slot cannot both win. A retry returns the
     * verdict recorded the first time.
     */
    async screenRequest(input: {
      snapshot: SandboxSnapshot;
      request: IdentifiedRequest;
      step: number;
      /** The state the workflow moves to for each effect; the row is written in it, atomically with the quota count. */
      nextStates?: Readonly<Record<PolicyEffect, SandboxState>>;
    }): Promise<ScreeningResult> {
      const nextStates = input.nextStates ?? V1_STATE_AFTER_SCREENING;
      return withTaxonomy(() =>
        store.sandboxes.atomically(() => {
          const earlier = store.sandboxes.operation(input.snapshot.workflowId, input.step);
          if (earlier !== undefined) {
            const decision = earlier.summary.decision as Decision;
            return { decision, settings: deps.lifecycle, state: nextStates[decision.effect] };
          }
          const decision = screenRequest({
            request: input.request,
            flags: deps.flags,
            policies: store.policies.list(),
            liveSandboxes: store.sandboxes.countLive(input.request.principal, input.request.id),
            availableAdapters,
            ttl: deps.lifecycle,
          });
          const state = nextStates[decision.effect];
          store.sandboxes.record(
            { ...input.snapshot, state },
            {
              step: input.step,
              action: 'screened',
              actor: 'policy',
              effect: decision.effect,
              reason: decision.reasons.join('; '),
              summary: { decision },
            },
          );
          log.info('request screened', { sandboxId: input.request.id, effect: decision.effect, code: decision.code });
          return { decision, settings: deps.lifecycle, state };
        }),
      );
    },

    /** Whether `approver` is on the approvers list now (the list may change while a request waits). */
    async isListedApprover(input: { approver: string }): Promise<boolean> {
      return withTaxonomy(() => store.approvers.has(input.approver));
    },

    /** Provisions through the sandbox's adapter; idempotent, so a retry adopts what the first try made. */
    async provisionSandbox(input: {
      sandboxId: string;
      adapter: AdapterName;
      services: readonly string[];
      labels: Readonly<Record<string, string>>;
    }): Promise<RuntimeHandle> {
      return withTaxonomy(async () => {
        const adapter = adapterFor(deps.adapters, input.adapter);
        const plan = adapter.launchPlan({ sandboxId: input.sandboxId, services: input.services, labels: input.labels });
        const provisioned = await adapter.provision(plan, adapterContext());
        log.info('sandbox provisioned', { sandboxId: input.sandboxId, endpoint: provisioned.endpoint });
        return provisioned;
      });
    },

    /** What the sandbox holds, asked of its emulator; RESOURCE_DISCOVERY_FAILED when it cannot know. */
    async listSandboxResources(input: { sandboxId: string; adapter: AdapterName; services: readonly string[] }): Promise<ResourceRef[]> {
      return withTaxonomy(() => adapterFor(deps.adapters, input.adapter).listResources(input.sandboxId, input.services));
    },

    /** Tears down everything of the sandbox and reports what, if anything, remained. */
    async destroySandbox(input: { sandboxId: string; adapter: AdapterName }): Promise<DestroyReport> {
      return withTaxonomy(async () => {
        const report = await adapterFor(deps.adapters, input.adapter).destroy(input.sandboxId, adapterContext());
        log.info('sandbox destroyed', { sandboxId: input.sandboxId, removed: report.removed.length, remaining: report.remaining.length });
        return report;
      });
    },
  };
}

export type LifecycleActivities = ReturnType<typeof createLifecycleActivities>;
