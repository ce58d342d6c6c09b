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
 * A docker host's memory as its worker measured it (DESIGN §12): the memory limits of the
 * plane's containers there must add up to no more than `capacityBytes`.
 */
export const hostMemorySchema = z.object({
  /** The engine's memory (`docker info` MemTotal). */
  engineBytes: z.number().int().positive(),
  /** `engineBytes` × SANDBOXPLANE_HOST_MEMORY_FRACTION: what the containers' memory limits may add up to. */
  capacityBytes: z.number().int().positive(),
  /** The memory limit one sandbox (or warm pool container) of each adapter holds there; 0 for one that runs no container. */
  perSandboxBytes: z.record(z.enum(ADAPTER_NAMES), z.number().int().nonnegative()),
});
export type HostMemory = z.output<typeof hostMemorySchema>;

/** The default of SANDBOXPLANE_HOST_MEMORY_FRACTION: the rest is the engine's, the worker's and the system's. */
export const DEFAULT_HOST_MEMORY_FRACTION = 0.9;

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
  /** What the memory limits of its containers may add up to (SANDBOXPLANE_HOST_MEMORY_FRACTION of the engine's); null when not measured. */
  readonly memoryCapacityBytes: number | null;
  /** The memory limits its live sandboxes and warm pool containers hold. */
  readonly memoryUsedBytes: number;
  readonly engineId: string | null;
  readonly registeredAt: string;
}

/** Where a sandbox runs: the workflow routes every runtime activity to `taskQueue`. */
export interface Placement {
  readonly hostId: string;
  readonly taskQueue: string;
}
