import type { FeatureFlags } from '../domain/feature-flags';
import { screenIacRun, type IacDecision } from '../domain/iac/iac-screening';
import type { CfnTemplate } from '../domain/iac/template';
import type { LifecycleSettings } from '../domain/lifecycle-settings';
import type { OperationRecord, Store } from '../store';
import { withTaxonomy } from './activity-failure';

/** The policy's verdict on an IaC run, and how long it may wait for a person. */
export interface IacScreening {
  readonly decision: IacDecision;
  readonly approvalTimeoutSeconds: number;
}

/** The store role's part of an IaC run: its screening and its audit rows in the sandbox's trail. */
export function createIacStoreActivities(deps: { readonly store: Store; readonly flags: FeatureFlags; readonly lifecycle: LifecycleSettings }) {
  const { store } = deps;
  return {
    /** Flags and policy rows on `cloud.iac.local` over the services the template touches (see screenIacRun). */
    async screenIacRun(input: { principal: string; template: CfnTemplate }): Promise<IacScreening> {
      return withTaxonomy(() => ({
        decision: screenIacRun({ principal: input.principal, capability: 'cloud.iac.local', template: input.template, flags: deps.flags, policies: store.policies.list() }),
        approvalTimeoutSeconds: deps.lifecycle.approvalTimeoutSeconds,
      }));
    },

    /** Appends the run's rows to its sandbox's audit trail, keyed by the run's workflow, run and step (a retry writes nothing twice). */
    async recordIacOperations(input: { sandboxId: string; workflowId: string; operations: readonly OperationRecord[] }): Promise<void> {
      return withTaxonomy(() =>
        store.sandboxes.atomically(() => {
          for (const operation of input.operations) store.sandboxes.appendAudit(input.sandboxId, input.workflowId, operation);
        }),
      );
    },
  };
}
