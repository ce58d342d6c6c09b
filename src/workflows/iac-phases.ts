import type { Capability } from '../domain/capabilities';

/** Where an IaC run is: each phase is one function that returns the next (iac-run.ts is the diagram). */
export type IacPhase =
  | { readonly name: 'screening' }
  | { readonly name: 'planning'; readonly capability: Capability; readonly approvalTimeoutSeconds: number }
  | { readonly name: 'awaiting_approval'; readonly approvalTimeoutSeconds: number }
  | { readonly name: 'applying' }
  | { readonly name: 'ended' };
