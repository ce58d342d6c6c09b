import { z } from 'zod';
import { ADAPTER_NAMES } from './service-catalog';
import { warmPoolTargetsSchema, type WarmPoolTargets } from './warm-pool';

/**
 * The plane's cap on live sandbox containers (`SANDBOXPLANE_MAX_SANDBOXES`, DESIGN §12):
 * placed sandboxes not yet over plus every host's warm pool containers, beside the
 * per-host capacity and the per-principal quotas.
 */
export const DEFAULT_MAX_SANDBOXES = 500;

/** A host id: the last part of its docker queue, `<tq>-docker-<hostId>`. */
export const hostIdSchema = z
  .string()
  .min(1, 'must not be empty')
  .max(63, 'must be at most 63 characters')
  .regex(/^[a-z0-9][a-z0-9-]*$/, 'must be lowercase letters, digits and - (it names a task queue)');

/**
 * A docker host's memory as its worker measured it (DESIGN §12), scheduled the way
 * Kubernetes schedules a node: the memory requests of the plane's containers there add up
 * to no more than `capacityBytes` (the allocatable memory), and their memory limits (each
 * container's cap, `--memory`) to no more than `capacityBytes` × `overcommit`.
 */
export const hostMemorySchema = z.object({
  /** The engine's memory (`docker info` MemTotal). */
  engineBytes: z.number().int().positive(),
  /** `engineBytes` × SANDBOXPLANE_HOST_MEMORY_FRACTION: the allocatable memory the containers' requests may add up to. */
  capacityBytes: z.number().int().positive(),
  /** The memory limit one sandbox (or warm pool container) of each adapter holds there; 0 for one that runs no container. */
  perSandboxBytes: z.record(z.enum(ADAPTER_NAMES), z.number().int().nonnegative()),
  /**
   * The memory one sandbox of each adapter is expected to use (its request, measured:
   * docs/performance.md, P6). Absent in a row a worker of an earlier build wrote: its
   * limits are its requests, as they were then.
   */
  perSandboxRequestBytes: z.record(z.enum(ADAPTER_NAMES), z.number().int().nonnegative()).optional(),
  /** SANDBOXPLANE_HOST_MEMORY_OVERCOMMIT: how far the limits may add up past `capacityBytes`; absent (an earlier build): 1. */
  overcommit: z.number().min(1).optional(),
});
export type HostMemory = z.output<typeof hostMemorySchema>;

/** The default of SANDBOXPLANE_HOST_MEMORY_FRACTION: the rest is the engine's, the worker's and the system's. */
export const DEFAULT_HOST_MEMORY_FRACTION = 0.9;

/**
 * The default of SANDBOXPLANE_HOST_MEMORY_OVERCOMMIT: the limits may add up to three times
 * the allocatable memory. A moto sandbox requests 160 MiB and is capped at 512 MiB (3.2×),
 * so on a host of moto sandboxes the requests bind just before the limits do: a 24 GiB host
 * holds 124 where reserving limits held 42, and a warm pool of 50 beside a burst of 50 fits.
 * Bounded, so a host of sandboxes all at their caps is at most three times over (the
 * kernel's OOM killer then takes the largest).
 */
export const DEFAULT_HOST_MEMORY_OVERCOMMIT = 3;

/**
 * The default of SANDBOXPLANE_EMULATOR_START_CONCURRENCY, per CPU of the worker's machine:
 * an emulator's start is CPU-bound, but part of it waits (the engine, moto's imports from
 * disk), so a few per core keep the cores busy while each start still passes its health
 * check well inside its timeout (src/adapters/start-slots.ts). Measured with P6 (50 moto
 * creates at once, 2 cores): cold p99 1.54× raw at 2 per CPU, 1.33× at 4 (docs/performance.md).
 */
export const EMULATOR_STARTS_PER_CPU = 4;

export const MAX_EMULATOR_START_CONCURRENCY = 256;

export function defaultEmulatorStartConcurrency(cpus: number): number {
  return Math.min(MAX_EMULATOR_START_CONCURRENCY, Math.max(2, EMULATOR_STARTS_PER_CPU * cpus));
}

/** What a measured host's limits may add up to: its allocatable memory × its overcommit. */
export function limitCapacity(memory: HostMemory): number {
  return Math.floor(memory.capacityBytes * (memory.overcommit ?? 1));
}

/**
 * The room rule, Kubernetes-style (DESIGN §12): one more sandbox fits when the requests
 * stay within the allocatable memory and the limits within allocatable × overcommit.
 * `undefined` when it fits (or the host was not measured: its count alone binds it), else
 * what is short, for the refusal.
 */
export function memoryShortfall(held: { limits: number; requests: number }, needed: { limit: number; request: number }, memory: HostMemory | null): 'requests' | 'limits' | undefined {
  if (memory === null) return undefined;
  if (held.requests + needed.request > memory.capacityBytes) return 'requests';
  if (held.limits + needed.limit > limitCapacity(memory)) return 'limits';
  return undefined;
}

/** What a docker worker tells the store role about itself when it starts (and again now and then). */
export const hostRegistrationSchema = z.object({
  hostId: hostIdSchema,
  taskQueue: z.string().min(1),
  adapters: z.array(z.enum(ADAPTER_NAMES)).min(1, 'a docker worker runs at least one adapter'),
  capacity: z.number().int().positive(),
  /** Idle containers the host keeps per adapter (DESIGN §13); they count against its capacity. */
  warmPool: warmPoolTargetsSchema.default({}),
  /** The Docker engine's own id (docker info), so two host ids on one engine show. */
  engineId: z.string().nullable(),
  /** The registering worker's Temporal identity. */
  identity: z.string().min(1),
  /** Null when not measured (a worker of an earlier build, or an engine that did not say): then only `capacity` bounds the host. */
  memory: hostMemorySchema.nullable().default(null),
});
/** A registration as a docker worker sends it (no warm pool: `{}`). */
export type HostRegistration = z.input<typeof hostRegistrationSchema>;

/** One host as `sandboxctl hosts` shows it (DESIGN §11). */
export interface HostView {
  readonly hostId: string;
  readonly taskQueue: string;
  readonly capacity: number;
  /** Idle containers it keeps warm per adapter; they hold capacity too. */
  readonly warmPool: WarmPoolTargets;
  /** Whether a worker polled the host's queue lately (Temporal's own record of its pollers). */
  readonly live: boolean;
  readonly adapters: readonly string[];
  /** When a worker last polled the host's queue, as Temporal tells it; null when never seen. */
  readonly lastSeenAt: string | null;
  /** Sandboxes placed on the host that are not yet over (they hold its capacity). */
  readonly liveSandboxes: number;
  /** The engine's memory (`docker info` MemTotal); null when the host's worker did not measure it. */
  readonly engineMemoryBytes: number | null;
  /** The allocatable memory its containers' requests may add up to (SANDBOXPLANE_HOST_MEMORY_FRACTION of the engine's); null when not measured. */
  readonly memoryCapacityBytes: number | null;
  /** The memory limits its live sandboxes and warm pool containers hold. */
  readonly memoryUsedBytes: number;
  /** The memory requests its live sandboxes and warm pool containers hold: what placement schedules on. */
  readonly memoryRequestedBytes: number;
  /** What the limits may add up to: `memoryCapacityBytes` × SANDBOXPLANE_HOST_MEMORY_OVERCOMMIT; null when not measured. */
  readonly memoryLimitCapacityBytes: number | null;
  readonly engineId: string | null;
  readonly registeredAt: string;
}

/** The memory a host's plane containers use now, as its docker worker read it (`sandboxctl hosts`). */
export interface HostMemoryInUse {
  readonly bytes: number;
  /** The running containers read. */
  readonly containers: number;
}

/** Every live host's memory in use, asked of its docker worker now; a host that did not answer is in `unanswered`. */
export interface HostMemoryReport {
  readonly hosts: readonly ({ readonly hostId: string } & HostMemoryInUse)[];
  readonly unanswered: readonly string[];
}

/** A host as `sandboxctl hosts` reports it: the store's view and, from its worker, the memory really used. */
export interface HostReport extends HostView {
  /** What this plane's running containers on the host use now (`docker stats`); null when its worker did not answer or is not live. */
  readonly memoryInUseBytes: number | null;
}

/** Where a sandbox runs: the workflow routes every runtime activity to `taskQueue`. */
export interface Placement {
  readonly hostId: string;
  readonly taskQueue: string;
}
