import type { TtlSettings } from './ttl';

/** Operator settings the lifecycle workflow receives from screening (workflows read no env). */
export interface LifecycleSettings extends TtlSettings {
  /** Without an answer by then, a request waiting for approval is EXPIRED. */
  readonly approvalTimeoutSeconds: number;
  /** How long before expiry the "expiring" event is recorded. */
  readonly expiryWarningSeconds: number;
}
