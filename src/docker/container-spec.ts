import { z } from 'zod';

/**
 * The container spec callers hand the broker. The shape is checked here (unknown keys
 * are refused, so nothing reaches the engine unseen); the safety rules live in
 * spec-rules.ts. Fields that only exist to be refused (`privileged`, `capAdd`, host
 * namespaces, `devices`) are accepted by the shape so that the refusal can name them.
 */

export const CONTAINER_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$/;

/** Ports are typed loosely on purpose: a string port is refused by a rule that names it. */
const portNumber = z.union([z.number(), z.string()]);

export const portSpecSchema = z
  .object({
    containerPort: portNumber,
    /** 0 or absent: the engine picks a free port. */
    hostPort: portNumber.optional(),
    /** Absent means 127.0.0.1; anything else is refused. */
    hostIp: z.string().optional(),
    protocol: z.enum(['tcp', 'udp']).default('tcp'),
  })
  .strict();

export const containerLimitsSchema = z
  .object({
    memoryBytes: z.number().int().optional(),
    pidsLimit: z.number().int().optional(),
    /** CPU quota in billionths of a CPU (1e9 = one CPU); required. */
    nanoCpus: z.number().int().optional(),
    /** Bytes the container's log may take on the host's disk, all its files together; required. */
    logMaxBytes: z.number().int().optional(),
    /** Files the log rotates through (the engine drops the oldest); required. */
    logFiles: z.number().int().optional(),
  })
  .strict();

export const restartPolicySchema = z
  .object({
    name: z.string(),
    maximumRetryCount: z.number().int().nonnegative().optional(),
  })
  .strict();

export const containerSpecSchema = z
  .object({
    /** Container name; lets a retried run find the container it already created. */
    name: z.string().regex(CONTAINER_NAME, 'must be 1-128 of letters, digits, _ . - starting with a letter or digit').optional(),
    image: z.string().min(1),
    command: z.array(z.string()).optional(),
    entrypoint: z.array(z.string()).optional(),
    env: z.record(z.string().regex(/^[^=\0]+$/, 'names must not contain = or NUL'), z.string()).optional(),
    labels: z.record(z.string(), z.string()).default({}),
    user: z.string().min(1).optional(),
    workingDir: z.string().startsWith('/').optional(),
    ports: z.array(portSpecSchema).default([]),
    /** Docker's `source:target[:mode]` strings; mode is `ro` or `rw`. */
    binds: z.array(z.string()).default([]),
    limits: containerLimitsSchema.optional(),
    readonlyRootfs: z.boolean().optional(),
    privileged: z.boolean().optional(),
    capAdd: z.array(z.string()).optional(),
    capDrop: z.array(z.string()).optional(),
    networkMode: z.string().optional(),
    pidMode: z.string().optional(),
    ipcMode: z.string().optional(),
    utsMode: z.string().optional(),
    devices: z.array(z.unknown()).optional(),
    restartPolicy: restartPolicySchema.optional(),
  })
  .strict();

/** What a caller may pass to `run` (before defaults). */
export type ContainerSpecInput = z.input<typeof containerSpecSchema>;

/** A spec that passed the shape check, defaults applied, rules not yet checked. */
export type ContainerSpecShape = z.output<typeof containerSpecSchema>;

/** A published port after validation: numbers only, loopback only. */
export interface ValidatedPort {
  readonly containerPort: number;
  /** 0 means the engine chooses. */
  readonly hostPort: number;
  readonly hostIp: '127.0.0.1';
  readonly protocol: 'tcp' | 'udp';
}

/** A bind after validation: an absolute, normalised host path that is allowed. */
export interface ValidatedBind {
  readonly source: string;
  readonly target: string;
  readonly readOnly: boolean;
}

/** A spec that passed every rule: fully filled-in and frozen. Only this reaches the engine. */
export interface ValidatedContainerSpec {
  readonly name: string | undefined;
  readonly image: string;
  readonly command: readonly string[] | undefined;
  readonly entrypoint: readonly string[] | undefined;
  readonly env: Readonly<Record<string, string>>;
  readonly labels: Readonly<Record<string, string>>;
  readonly user: string | undefined;
  readonly workingDir: string | undefined;
  readonly ports: readonly ValidatedPort[];
  readonly binds: readonly ValidatedBind[];
  readonly limits: {
    readonly memoryBytes: number;
    readonly pidsLimit: number;
    readonly nanoCpus: number;
    readonly logMaxBytes: number;
    readonly logFiles: number;
  };
  readonly readonlyRootfs: boolean;
  /** Always includes `ALL`. */
  readonly capDrop: readonly string[];
  /** The sandbox's own network (see `ownNetworkName`), which the broker creates before the container. */
  readonly networkMode: string;
}
