import type { SandboxCredentials } from '../domain/client-config';
import type { RuntimeHandle } from '../domain/lifecycle-record';
import type { AdapterName, ServiceCatalog } from '../domain/service-catalog';
import type { ContainerUsage } from '../domain/usage';

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
  /**
   * An unhealthy answer no second look can change: nothing of the sandbox runs (its container
   * exited, or is gone). An emulator that runs but does not answer is worth looking at again.
   */
  readonly certain?: boolean;
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
 * How the plane reaches a CloudFormation for infrastructure as code (DESIGN §14): a
 * sandbox's emulator as the plane itself, or an operator's target through the AWS SDK's
 * credential chain. Never leaves the activity that asked: `headers` hold a container's
 * operator token, and a target's credentials are resolved by the SDK inside it.
 */
export interface IacAccess {
  /** Absent for a target on AWS itself: the SDK's own endpoints. */
  readonly endpoint?: string;
  readonly region: string;
  /** Headers that make each call the plane's own rather than the agent's. */
  readonly headers: Readonly<Record<string, string>>;
  /** `operator`: the plane's own (fake) key, which an emulator does not check on its operator path; `chain`: the SDK's credential chain, with `profile` when given. */
  readonly signer: { readonly kind: 'operator' } | { readonly kind: 'chain'; readonly profile?: string };
  /** Whether the CloudFormation there really creates resources of `type`; every other type is `unsupported` in a plan. */
  supports(type: string): boolean;
  /**
   * Why this emulator cannot apply an UPDATE of a resource of `type` as CloudFormation
   * would (it has no update for the type, or drops some properties), in words a plan can
   * warn with; `undefined` when nothing is known to be lost. Absent where nothing is known.
   */
  updateGaps?(type: string, properties: readonly string[]): string | undefined;
  /** What the plan calls what it changes, e.g. `sandbox:sbx-1` or `target:staging` (an approval is for one). */
  readonly target: string;
  /** Whether the plane may seed what a CDK app's default synthesizer expects (a sandbox: yes; a target is bootstrapped by its owners). */
  readonly seedsCdkBootstrap: boolean;
  /** Who the plan's notes name as the one whose change set they compare with ("moto", "staging"). */
  readonly name: string;
}

/** Where a restored state goes (DESIGN §15). */
export interface RestoreTarget {
  /** The services the sandbox was granted: a fork's own key is allowed these. */
  readonly services: readonly string[];
  /** The sandbox the state was taken from: another than the one restored into makes it a fork, with credentials of its own. */
  readonly from: string;
  /** The sandbox's credentials now, which a restore into the same sandbox keeps. */
  readonly credentials?: SandboxCredentials;
  /** Put the state back as it was, keys included, and check nothing (an IaC checkpoint): the sandbox's credentials stay what they were. */
  readonly verbatim?: boolean;
}

/** How long a capture keeps the emulator serving only the plane after its read (a pause: until the container goes). */
export interface QuietHold {
  readonly seconds: number;
}

/** A captured state, and the lease of the quiet it holds, when asked to hold one and the emulator can. */
export interface CapturedState {
  readonly state: string;
  readonly quietLease?: string;
}

/** The emulator SPI of DESIGN §4. Every method may be retried: each must be idempotent. */
export interface CloudEmulatorAdapter {
  readonly name: AdapterName;
  readonly catalog: ServiceCatalog;
  /**
   * The memory limit of what one sandbox (or warm pool slot) of this adapter runs on its
   * docker host; 0 when it runs no container. Placement adds it up against the host's memory.
   */
  readonly memoryBytes: number;
  /**
   * The memory one sandbox of this adapter is expected to use, measured (its request, as
   * Kubernetes says): what placement schedules on, while `memoryBytes` stays its cap.
   */
  readonly memoryRequestBytes: number;
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
   * The usage of the sandbox's running containers (DESIGN §19): cumulative CPU and requests
   * served, and peak memory, one entry per container; none for an adapter that runs no
   * container (the memory adapter, whose sandboxes accrue live seconds only).
   */
  usage(sandboxId: string, recorded?: RecordedRuntime | null): Promise<readonly ContainerUsage[]>;
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
  /**
   * The emulator's state now, as text the plane keeps (DESIGN §15). Throws
   * SNAPSHOT_UNSUPPORTED, saying why, where the emulator has no way to give it. With
   * `hold` (a pause), an emulator that can serve only the plane does so from before the
   * read until the hold lapses or {@link endQuiet} ends it, and returns the lease it holds.
   */
  captureState(sandboxId: string, recorded?: RecordedRuntime | null, hold?: QuietHold): Promise<CapturedState>;
  /** Ends the quiet a capture held under `lease` (another lease's stays), so the emulator serves everyone again. */
  endQuiet?(sandboxId: string, lease: string, recorded?: RecordedRuntime | null): Promise<void>;
  /**
   * Replaces the emulator's state with `state` (from {@link captureState}) and returns the
   * sandbox's credentials afterwards: its own for a restore, new ones for a fork.
   */
  restoreState(sandboxId: string, state: string, target: RestoreTarget, context: AdapterContext, recorded?: RecordedRuntime | null): Promise<SandboxCredentials | undefined>;
}

export type AdapterRegistry = Readonly<Partial<Record<AdapterName, CloudEmulatorAdapter>>>;
