import type { ContainerSpecInput } from './container-spec';

/** Every engine state, mapped onto one vocabulary (DESIGN §5). */
export const ContainerState = Object.freeze({
  CREATED: 'created',
  RUNNING: 'running',
  PAUSED: 'paused',
  RESTARTING: 'restarting',
  REMOVING: 'removing',
  EXITED: 'exited',
  DEAD: 'dead',
  /** A state this broker does not know; treated as "not running". */
  UNKNOWN: 'unknown',
} as const);
export type ContainerState = (typeof ContainerState)[keyof typeof ContainerState];

const KNOWN_STATES = new Set<string>(Object.values(ContainerState));

/** Maps an engine state string (`running`, `exited`, …) onto {@link ContainerState}. */
export function toContainerState(engineState: string | undefined): ContainerState {
  const normalized = (engineState ?? '').trim().toLowerCase();
  return KNOWN_STATES.has(normalized) ? (normalized as ContainerState) : ContainerState.UNKNOWN;
}

/** One published port as the engine reports it. */
export interface PublishedPort {
  readonly containerPort: number;
  readonly protocol: string;
  /** `undefined` while the container is not running (nothing is bound then). */
  readonly hostIp: string | undefined;
  readonly hostPort: number | undefined;
}

/** What `list` returns for each container. */
export interface ContainerSummary {
  readonly id: string;
  /** Name without the leading slash. */
  readonly name: string;
  readonly image: string;
  readonly state: ContainerState;
  readonly labels: Readonly<Record<string, string>>;
  readonly ports: readonly PublishedPort[];
  /** ISO 8601. */
  readonly createdAt: string;
  /** The networks the container is attached to: name → network id. */
  readonly networks: Readonly<Record<string, string>>;
}

/** What `run` and `inspect` return. */
export interface ContainerInfo extends ContainerSummary {
  readonly imageId: string;
  readonly exitCode: number | null;
  readonly oomKilled: boolean;
  /** ISO 8601, or null when the container never started. */
  readonly startedAt: string | null;
  /** ISO 8601, or null while it has not finished. */
  readonly finishedAt: string | null;
  readonly limits: { readonly memoryBytes: number; readonly pidsLimit: number | null };
}

/** One network of ours, as `listNetworks` returns it. */
export interface NetworkSummary {
  readonly id: string;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  /** When the engine made it (ISO 8601), where the engine says. */
  readonly createdAt?: string;
}

/** What `stats` reads of a container (DESIGN §19): cumulative CPU, and its memory's peak (or current use, where the engine keeps no peak). */
export interface ContainerStats {
  /** CPU time used since the container started, in nanoseconds. */
  readonly cpuNanos: number;
  /** Memory in use now, in bytes. */
  readonly memoryBytes: number;
  /** cgroup v1's `max_usage`; on cgroup v2 the engine keeps none, so this is `memoryBytes` and the store keeps the highest it reads. */
  readonly memoryPeakBytes: number;
}

/** Outcome of `removeNetwork`: `already_gone` is absorbed; `in_use` means a container still holds it. */
export type NetworkRemoveOutcome = 'removed' | 'already_gone' | 'in_use';

/** Outcome of `stop`; `already_stopped` is the absorbed, harmless case. */
export type StopOutcome = 'stopped' | 'already_stopped';

/** Outcome of `remove`; `already_gone` is the absorbed, harmless case. */
export type RemoveOutcome = 'removed' | 'already_gone';

export interface StopOptions {
  /** Seconds the engine waits after SIGTERM before SIGKILL. Default 10. */
  readonly timeoutSeconds?: number;
}

export interface RemoveOptions {
  /** Kill a running container first. Default true. */
  readonly force?: boolean;
  /**
   * What a `list` of managed containers just answered for this one (labels, networks):
   * the broker then removes it without inspecting it first, as the sweep does with the
   * orphans of its own listing. Ignored unless it is this id and carries our managed-by label.
   */
  readonly listed?: ContainerSummary;
}

/**
 * The verbs of the Docker broker (DESIGN §5: run, inspect, list, stop, remove; and
 * rename, with which a sandbox claims a warm pool's container, DESIGN §13). Every spec is validated before the
 * engine sees it; failures are {@link SandboxPlaneError}s from the project taxonomy.
 */
export interface ContainerBroker {
  /**
   * Validates the spec, creates the sandbox's own network (sealed, DESIGN §12) or takes a
   * pre-made one (DockerContainerBroker.useNetworkPool), then the container on it, and starts it. A retried run with the same `name` and the same
   * sandbox labels returns the container the first try made.
   */
  run(spec: ContainerSpecInput): Promise<ContainerInfo>;
  /**
   * Throws CONTAINER_NOT_FOUND when the container does not exist. `mayBeAbsent`: the
   * caller asks whether it exists, so an absence is an answer, not a failed engine call
   * (in its span and metrics).
   */
  inspect(id: string, options?: { readonly mayBeAbsent?: boolean }): Promise<ContainerInfo>;
  /** A managed container's resource use, read once (not streamed); CONTAINER_NOT_FOUND when it does not exist. */
  stats(id: string): Promise<ContainerStats>;
  /** Every container, in any state, carrying all of `labels`. */
  list(labels: Readonly<Record<string, string>>): Promise<ContainerSummary[]>;
  /** Throws CONTAINER_NOT_FOUND when the container does not exist. */
  stop(id: string, options?: StopOptions): Promise<StopOutcome>;
  /** Removes the container, then the network it was given (when no other container holds it). */
  remove(id: string, options?: RemoveOptions): Promise<RemoveOutcome>;
  /** Every network carrying our managed-by label and all of `labels`. */
  listNetworks(labels: Readonly<Record<string, string>>): Promise<NetworkSummary[]>;
  /** Removes one of our networks, by name or id. */
  removeNetwork(nameOrId: string): Promise<NetworkRemoveOutcome>;
  /**
   * Renames a managed container, addressed by its current name or id. Addressed by name
   * it is a compare-and-swap: once renamed, the old name is CONTAINER_NOT_FOUND to the
   * next caller. A taken `newName` is CONTAINER_CONFLICT.
   */
  rename(current: string, newName: string): Promise<void>;
  /** The engine's version and where it was reached; DOCKER_UNREACHABLE when it does not answer. */
  ping(): Promise<EngineIdentity>;
  /**
   * The engine's own ID (`docker info`), read once and then remembered: a runtime handle
   * records it, so teardown can tell "gone" from "on another engine".
   */
  engineId(): Promise<string>;
  /** The memory of the engine's machine (`docker info` MemTotal), which the plane's container limits add up against. */
  engineMemoryBytes(): Promise<number>;
}

export interface EngineIdentity {
  readonly version: string;
  readonly endpoint: string;
}
