import type { RuntimeHandle } from '../domain/lifecycle-record';
import type { AdapterName, ServiceCatalog } from '../domain/service-catalog';

/** What the lifecycle asks an adapter to provision. */
export interface ProvisionRequest {
  readonly sandboxId: string;
  readonly services: readonly string[];
  /** The sandbox's own labels (from the request), for the runtime to carry. */
  readonly labels: Readonly<Record<string, string>>;
}

/**
 * Everything needed to start the emulator, decided before anything starts: pure data,
 * never read from or written to `process.env`.
 */
export interface LaunchPlan {
  readonly adapter: AdapterName;
  readonly sandboxId: string;
  readonly services: readonly string[];
  readonly region: string;
  readonly image?: string;
  readonly environment: Readonly<Record<string, string>>;
  readonly labels: Readonly<Record<string, string>>;
}

export interface HealthReport {
  readonly healthy: boolean;
  /** Services the emulator says it has... */
  readonly registeredServices: readonly string[];
  /** ...and those that can actually serve (Docker-backed ones cannot). */
  readonly readyServices: readonly string[];
  readonly detail: string;
}

export type { ResourceListing, ResourceRef, UnlistedService } from '../domain/resources';
import type { ResourceListing } from '../domain/resources';

export interface DestroyReport {
  readonly removed: readonly string[];
  /** Runtime handles still present after teardown: a leak for the sweep. */
  readonly remaining: readonly string[];
}

/**
 * What provisioning recorded of a sandbox's runtime: teardown removes its containers
 * besides what it finds by label; the resource listing signs with its credentials.
 */
export type RecordedRuntime = Pick<RuntimeHandle, 'runtimeIds' | 'engineId' | 'credentials'>;

/** Lets a long adapter call report progress (the activity heartbeats) and notice cancellation. */
export interface AdapterContext {
  heartbeat(details?: unknown): void;
  readonly cancelled?: AbortSignal;
}

/**
 * How the plane reaches a sandbox's emulator as itself, for infrastructure as code
 * (DESIGN §14): plans, applies and their checks. Never leaves the activity that asked:
 * `headers` hold the container's operator token.
 */
export interface IacAccess {
  readonly endpoint: string;
  readonly region: string;
  /** Headers that make each call the plane's own rather than the agent's. */
  readonly headers: Readonly<Record<string, string>>;
  /** The CloudFormation resource types this emulator really creates; every other type is `unsupported` in a plan. */
  readonly supportedTypes: ReadonlySet<string>;
}

/** The emulator SPI of DESIGN §4. Every method may be retried: each must be idempotent. */
export interface CloudEmulatorAdapter {
  readonly name: AdapterName;
  readonly catalog: ServiceCatalog;
  launchPlan(request: ProvisionRequest): LaunchPlan;
  provision(plan: LaunchPlan, context: AdapterContext): Promise<RuntimeHandle>;
  /**
   * Whether the sandbox's emulator serves; `recorded` (what provisioning recorded) is
   * looked at besides what is found by label. A runtime this adapter cannot reach is an
   * error (unknown), never "unhealthy".
   */
  health(sandboxId: string, recorded?: RecordedRuntime | null): Promise<HealthReport>;
  /**
   * What the sandbox holds, service by service: each of `services` is either listed or
   * named in `unlisted` with its reason, never an empty list that was not observed.
   * Throws RESOURCE_DISCOVERY_FAILED when it cannot ask at all (no emulator running).
   */
  listResources(sandboxId: string, services: readonly string[], recorded?: RecordedRuntime | null): Promise<ResourceListing>;
  /**
   * Tears down everything of the sandbox: what it finds by label and what provisioning
   * `recorded`. Destroying what is gone is a success; a runtime recorded somewhere this
   * adapter cannot reach is an error, never "nothing found".
   */
  destroy(sandboxId: string, context: AdapterContext, recorded?: RecordedRuntime | null): Promise<DestroyReport>;
  /**
   * Where the plane plans and applies CloudFormation in the sandbox; absent on an adapter
   * whose emulator has none. Throws RESOURCE_DISCOVERY_FAILED when no emulator runs.
   */
  iacAccess?(sandboxId: string, recorded?: RecordedRuntime | null): Promise<IacAccess>;
}

export type AdapterRegistry = Readonly<Partial<Record<AdapterName, CloudEmulatorAdapter>>>;
