import type { Client } from '@temporalio/client';
import type { Capability } from '../domain/capabilities';
import { IAC_MESSAGES, IAC_TARGET_TURNS_WORKFLOW, iacTargetTurnsWorkflowId } from '../domain/contract-names';
import { SandboxPlaneError } from '../domain/errors';
import type { FeatureFlags } from '../domain/feature-flags';
import type { IacProof, IacStackClaim } from '../domain/iac/iac-run';
import { screenIacRun, type IacDecision, type PlanScreening } from '../domain/iac/iac-screening';
import type { CfnTemplate } from '../domain/iac/template';
import type { LifecycleSettings } from '../domain/lifecycle-settings';
import type { TargetRecord } from '../domain/targets';
import type { OperationRecord, Store } from '../store';
import { withTaxonomy } from './activity-failure';

/** The policy's verdict on an IaC run, and how long it may wait for people. */
export interface IacScreening {
  readonly decision: IacDecision;
  readonly approvalTimeoutSeconds: number;
}

/** Where an IaC run's audit rows go: its sandbox's trail, or its target's. */
export type IacAuditHome = { readonly sandboxId: string } | { readonly target: string };

/**
 * The store role's part of an IaC run: its screening, the targets operators registered,
 * the sandbox proof a promotion needs, a target's stack turns, and the audit rows.
 */
export function createIacStoreActivities(deps: { readonly store: Store; readonly flags: FeatureFlags; readonly lifecycle: LifecycleSettings; readonly client: Client }) {
  const { store } = deps;
  return {
    /** Flags and policy rows on the run's capability over the services the template (and, once planned, the plan) touches (see screenIacRun). */
    async screenIacRun(input: { principal: string; template?: CfnTemplate; capability: Capability; plan?: PlanScreening }): Promise<IacScreening> {
      return withTaxonomy(() => ({
        decision: screenIacRun({
          principal: input.principal,
          capability: input.capability,
          ...(input.template === undefined ? {} : { template: input.template }),
          flags: deps.flags,
          policies: store.policies.list(),
          ...(input.plan === undefined ? {} : { plan: input.plan }),
        }),
        approvalTimeoutSeconds: deps.lifecycle.approvalTimeoutSeconds,
      }));
    },

    /** A target as its operator registered it; NOT_FOUND when there is none of that name. */
    async iacTarget(input: { name: string }): Promise<TargetRecord> {
      return withTaxonomy(() => {
        const target = store.targets.get(input.name);
        if (target === undefined) throw new SandboxPlaneError('NOT_FOUND', `no target ${input.name}`, { hint: '`sandboxctl targets list` shows the targets an operator registered.' });
        return target;
      });
    },

    /**
     * The gate of a promotion (DESIGN §14): the newest sandbox run of `principal` that
     * APPLIED this template digest (template and parameters) within `withinSeconds`, with
     * every supported resource verified; `null` when there is none.
     */
    async findIacProof(input: { principal: string; templateDigest: string; withinSeconds: number }): Promise<IacProof | null> {
      return withTaxonomy(() => {
        const sinceIso = new Date(Date.now() - input.withinSeconds * 1000).toISOString();
        return store.sandboxes.findIacProof({ principal: input.principal, templateDigest: input.templateDigest, sinceIso }) ?? null;
      });
    },

    /**
     * Asks a target's keeper of turns for a stack, starting the keeper if none runs
     * (signal-with-start): workflow code cannot start another workflow and signal it in one step.
     */
    async claimTargetStack(input: { target: string; taskQueue: string; claim: IacStackClaim }): Promise<void> {
      return withTaxonomy(async () => {
        await deps.client.workflow.signalWithStart(IAC_TARGET_TURNS_WORKFLOW, {
          workflowId: iacTargetTurnsWorkflowId(input.target),
          taskQueue: input.taskQueue,
          args: [{ target: input.target }],
          signal: IAC_MESSAGES.claimStackSignal,
          signalArgs: [input.claim],
        });
      });
    },

    /** Appends the run's rows to its sandbox's or target's audit trail, keyed by the run's workflow, run and step (a retry writes nothing twice). */
    async recordIacOperations(input: { home: IacAuditHome; workflowId: string; operations: readonly OperationRecord[] }): Promise<void> {
      return withTaxonomy(() =>
        store.sandboxes.atomically(() => {
          for (const operation of input.operations) {
            if ('sandboxId' in input.home) store.sandboxes.appendAudit(input.home.sandboxId, input.workflowId, operation);
            else store.targets.appendOperation(input.home.target, input.workflowId, operation);
          }
        }),
      );
    },
  };
}
