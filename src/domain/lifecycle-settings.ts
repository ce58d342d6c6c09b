import type { TtlSettings } from './ttl';

/** Operator settings the lifecycle workflow receives from screening (workflows read no env). */
export interface LifecycleSettings extends TtlSettings {
  /** Without an answer by then, a request waiting for approval is EXPIRED. */
  readonly approvalTimeoutSeconds: number;
  /** How long before expiry the "expiring" event is recorded. */
  readonly expiryWarningSeconds: number;
  /** How often the health watch looks at a READY sandbox's emulator. */
  readonly healthCheckIntervalSeconds: number;
  /** How long a screened sandbox waits for a docker host with room before it is refused (NO_CAPACITY). */
  readonly placementWaitSeconds: number;
}

/** The health watch's own look is a safety net: the engine's events tell a sandbox at once when its container dies (worker/container-deaths.ts). */
export const DEFAULT_HEALTH_CHECK_INTERVAL_SECONDS = 600;
