import type { FeatureFlag } from './feature-flags';

export const CAPABILITIES = ['cloud.sandbox', 'cloud.iac.local', 'cloud.staging.apply', 'cloud.production.apply'] as const;
export type Capability = (typeof CAPABILITIES)[number];

export interface CapabilityRules {
  /** The flag that must be on for the capability to be requested at all. */
  readonly flag: FeatureFlag;
  /** Reaches beyond the local machine: approval is required whatever a policy row says. */
  readonly alwaysRequiresApproval: boolean;
}

export const CAPABILITY_RULES: Readonly<Record<Capability, CapabilityRules>> = {
  'cloud.sandbox': { flag: 'CLOUD_SANDBOX', alwaysRequiresApproval: false },
  'cloud.iac.local': { flag: 'IAC_LOCAL', alwaysRequiresApproval: false },
  'cloud.staging.apply': { flag: 'STAGING_APPLY', alwaysRequiresApproval: true },
  'cloud.production.apply': { flag: 'PRODUCTION_APPLY', alwaysRequiresApproval: true },
};
