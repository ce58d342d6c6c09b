import {
  DEFAULT_HOST_MEMORY_OVERCOMMIT,
  DEFAULT_MAX_SANDBOXES,
  defaultEmulatorStartConcurrency,
  EMULATOR_STARTS_PER_CPU,
  hostIdSchema,
  MAX_EMULATOR_START_CONCURRENCY,
} from '../domain/hosts';
import { parseByteSize } from '../domain/byte-size';
import { DEFAULT_CONTAINER_LOG_FILES, DEFAULT_CONTAINER_LOG_MAX, logFileBytes, MAX_CONTAINER_LOG_FILES, MIN_CONTAINER_LOG_FILE_BYTES, type ContainerLogLimit } from '../domain/container-log';
import { DEFAULT_HOST_ID, WORKER_ROLES, type WorkerRole } from '../domain/task-queues';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { SandboxPlaneError } from '../domain/errors';
import { FEATURE_FLAG_NAMES, FLAG_ENV_PREFIX, flagEnvName, isFeatureFlag, parseFlagValue, type FeatureFlag, type FeatureFlags } from '../domain/feature-flags';
import { PLANE_ID_PATTERN } from '../domain/docker-labels';
import { buildIdSchema, DEFAULT_DEPLOYMENT, deploymentNameSchema } from '../domain/deployment';
import { principalSchema } from '../domain/sandbox-request';
import { DEFAULT_FORK_MAX, DEFAULT_SNAPSHOT_QUOTA, type SnapshotQuota } from '../domain/snapshots';
import { DEFAULT_SWEEP_REMOVE_CONCURRENCY } from '../domain/leaks';
import { parseWarmPoolTargets, pooledSlots, type WarmPoolTargets } from '../domain/warm-pool';
import { DEFAULT_NETWORK_POOL_SIZE, MAX_NETWORK_POOL_SIZE } from '../domain/network-pool';
import { formatDuration, parseDuration } from '../domain/duration';
import { isPinnedImage } from '../domain/image-reference';
import { DEFAULT_HEALTH_CHECK_INTERVAL_SECONDS, type LifecycleSettings } from '../domain/lifecycle-settings';
import { parseCodecKeys, readCodecKeysFile, type CodecKey } from '../codec/codec-keys';
import type { CodecSettings } from '../codec/codec-settings';
import { DEFAULT_CODEC_KEYS_PATH, DEFAULT_STORE_PATH } from './paths';
import { resolveTemporalTls, temporalTlsEnvShape, type TemporalTlsSettings } from './temporal-tls';

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The whole configuration, validated once and frozen. */
export interface Config {
  readonly temporalAddress: string;
  readonly temporalNamespace: string;
  readonly taskQueue: string;
  readonly storePath: string;
  /**
   * `SANDBOXPLANE_STORE_KEY_FILE`: the key the store role seals approvers' TOTP secrets
   * with (created on first use); by default beside the SQLite file, `<db>.key`.
   */
  readonly storeKeyPath: string;
  /** `undefined` means the engine's default socket. */
  readonly dockerHost: string | undefined;
  readonly logLevel: LogLevel;
  /** Explicit path to a `temporal` CLI; otherwise the project's tools folder, then PATH. */
  readonly temporalCliPath: string | undefined;
  readonly flags: FeatureFlags;
  readonly lifecycle: LifecycleSettings;
  readonly emulators: EmulatorSettings;
  /** How often the Temporal Schedule `sandboxplane-cleanup` runs the sweep. */
  readonly sweepIntervalSeconds: number;
  /** `SANDBOXPLANE_SWEEP_REMOVE_CONCURRENCY`: how many orphans a host's sweep removes at once (read by the docker role). */
  readonly sweepRemoveConcurrency: number;
  /**
   * `SANDBOXPLANE_PLANE_ID`, the value of every container's `io.sandboxplane.plane`
   * label; `undefined` means derived from Temporal's cluster and namespace ids at start.
   */
  readonly planeId: string | undefined;
  /**
   * `SANDBOXPLANE_PRINCIPAL`: who the CLI and the MCP server act as (DESIGN §12); unset,
   * the CLI acts as an operator and the MCP server refuses to start.
   */
  readonly principal: string | undefined;
  /** The roles `sandboxctl worker` runs (DESIGN §10); all three by default. */
  readonly workerRoles: readonly WorkerRole[];
  /**
   * The docker role's host: its id (which names its queue), how many sandboxes it takes,
   * and the warm pools it keeps (DESIGN §13; their idle containers count against capacity).
   */
  readonly host: { readonly id: string; readonly capacity: number; readonly warmPool: WarmPoolTargets; readonly memoryFraction: number; readonly memoryOvercommit: number };
  /** `SANDBOXPLANE_MAX_SANDBOXES`: live sandbox containers the whole plane allows (read by the store role). */
  readonly maxSandboxes: number;
  /** `SANDBOXPLANE_NETWORK_POOL`: pre-made sealed networks the docker role's host keeps (DESIGN §12). */
  readonly networkPool: number;
  /** What each principal may keep of snapshots, and for how long (the store role and its sweep enforce it). */
  readonly snapshotQuota: SnapshotQuota;
  /**
   * Where snapshot content is kept (SANDBOXPLANE_SNAPSHOT_DIR, shared by the store and every
   * docker host), the most one holds (SANDBOXPLANE_SNAPSHOT_MAX_BYTES, read where it is
   * taken), and the most sandboxes one fork makes (SANDBOXPLANE_FORK_MAX, read by clients).
   */
  readonly snapshots: { readonly dir: string; readonly maxBytes: number; readonly forkMax: number };
  /**
   * `SANDBOXPLANE_WORKFLOW_CACHE_SIZE`: workflow runs the lifecycle role keeps in memory
   * (the SDK's `maxCachedWorkflows`); a run evicted from it replays on its next task.
   */
  readonly workflowCacheSize: number;
  /** The payload codec's keys (SANDBOXPLANE_CODEC_KEYS, _KEYS_FILE, or the default file .data/codec-keys). */
  readonly codec: CodecSettings;
  /**
   * Worker Versioning (DESIGN §16): the deployment lifecycle workers belong to
   * (`SANDBOXPLANE_DEPLOYMENT`) and their build id (`SANDBOXPLANE_BUILD_ID`); `undefined`
   * means derived from the workflow code the worker runs.
   */
  readonly deployment: { readonly name: string; readonly buildId: string | undefined };
  /** Traces and metrics (DESIGN §17); both off unless configured. */
  readonly telemetry: TelemetrySettings;
  /** mTLS to Temporal (DESIGN §18, `SANDBOXPLANE_TEMPORAL_TLS_*`); `undefined`: plain gRPC, as to the dev server. */
  readonly temporalTls: TemporalTlsSettings | undefined;
}

/** What the standard OpenTelemetry variables and SANDBOXPLANE_METRICS_ADDRESS ask for. */
export interface TelemetrySettings {
  /** Where spans go over OTLP; `undefined`: no tracing, and nothing of OpenTelemetry is loaded. */
  readonly traces: TraceExportSettings | undefined;
  /** `host:port` to serve Prometheus metrics on; `undefined`: none served. */
  readonly metricsAddress: string | undefined;
}

export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

export interface TraceExportSettings {
  /** The full traces URL (`…/v1/traces` added to OTEL_EXPORTER_OTLP_ENDPOINT, as the specification says). */
  readonly url: string;
  readonly protocol: OtlpProtocol;
  /** OTEL_SERVICE_NAME: overrides the name each process gives itself (sandboxplane-worker, sandboxplane-client). */
  readonly serviceName: string | undefined;
}

/** Container-backed emulators; an adapter whose image is not configured is not offered. */
export interface EmulatorSettings {
  /** The moto image by id (`sha256:…`), as scripts/build-moto-image.sh prints it. */
  readonly motoImage: string | undefined;
  /** The Floci image by id (`sha256:…`, one built here) or digest (`[host[:port]/]floci/floci@sha256:…`). */
  readonly flociImage: string | undefined;
  readonly healthTimeoutSeconds: number;
  /** How many emulators the docker role starts at once (`SANDBOXPLANE_EMULATOR_START_CONCURRENCY`). */
  readonly startConcurrency: number;
  /** How much of its log every container keeps on disk (`SANDBOXPLANE_CONTAINER_LOG_MAX`, `_FILES`). */
  readonly containerLog: ContainerLogLimit;
}

export interface ConfigIssue {
  readonly key: string;
  readonly message: string;
}

/** One error for every bad key at once, so a person fixes them in one go. */
export class ConfigError extends SandboxPlaneError {
  override readonly name = 'ConfigError';
  readonly issues: readonly ConfigIssue[];

  constructor(issues: readonly ConfigIssue[]) {
    const lines = issues.map((issue) => `  ${issue.key}: ${issue.message}`);
    super('CONFIG_INVALID', `Invalid configuration (${issues.length} bad ${issues.length === 1 ? 'key' : 'keys'}):\n${lines.join('\n')}`, {
      details: { keys: issues.map((issue) => issue.key) },
    });
    this.issues = Object.freeze([...issues]);
  }
}

const HOST_PORT = /^(?<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?):(?<port>\d{1,5})$/;

const hostAndPort = z.string().refine(
  (value) => {
    const port = Number(HOST_PORT.exec(value)?.groups?.port ?? NaN);
    return Number.isInteger(port) && port >= 1 && port <= 65535;
  },
  (value) => ({ message: `must be host:port with a port from 1 to 65535 (e.g. 127.0.0.1:7233), got '${value}'` }),
);

const httpUrl = z
  .string()
  .url()
  .refine((value) => /^https?:\/\//.test(value), 'must be an http:// or https:// URL (e.g. http://127.0.0.1:4318)');

// Read as the OpenTelemetry specification reads them: leniently (these are often inherited
// from a shell set up for other programs); only a protocol we cannot speak, asked for with
// an endpoint set, is refused (traceExportSettings).
const otelText = z.string().max(1000);

const identifier = (example: string) => z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/, `must be letters, digits, '.', '_' or '-' (e.g. ${example})`);

const planeId = z.string().regex(PLANE_ID_PATTERN, "must start with a letter or digit and hold at most 128 letters, digits, '.', '_', '-', '@' or ':' (e.g. ci-job-42)");

const dockerHost = z.string().regex(/^(unix|tcp):\/\/\S+$/, 'must be a URL such as unix:///var/run/docker.sock or tcp://127.0.0.1:2375');

const nonEmptyPath = z.string().trim().min(1, 'must not be empty when set');

const MAX_DURATION_SECONDS = 365 * 86_400;

/** A duration such as 90s, 30m, 2h or 1d, as seconds (at most a year: dates past that stop being dates). */
const duration = (fallbackSeconds: number) =>
  z
    .string()
    .transform((text, ctx) => {
      const seconds = parseDuration(text);
      if (seconds !== undefined && seconds > MAX_DURATION_SECONDS) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `must be at most 365d, got '${text}'` });
        return z.NEVER;
      }
      if (seconds === undefined) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `must be a duration such as 90s, 30m, 2h or 1d, got '${text}'` });
        return z.NEVER;
      }
      return seconds;
    })
    .default(formatDuration(fallbackSeconds));

/** The broker's own pinning rule (domain/image-reference.ts), so the settings accept exactly what it runs. */
const pinnedImage = z.string().refine(isPinnedImage, {
  message: 'must be an image id (sha256:<64 hex>) or a digest reference ([host[:port]/]name@sha256:<64 hex>); a tag can move',
});

/** `all`, or a comma-separated list of roles (DESIGN §10), as a sorted list without repeats. */
const workerRoles = z
  .string()
  .transform((text, ctx) => {
    const names = text
      .split(',')
      .map((name) => name.trim().toLowerCase())
      .filter((name) => name !== '');
    if (names.length === 1 && names[0] === 'all') return [...WORKER_ROLES];
    const unknown = names.filter((name) => !(WORKER_ROLES as readonly string[]).includes(name));
    if (names.length === 0 || unknown.length > 0) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `must be all or a comma-separated list of ${WORKER_ROLES.join(', ')}; got '${text}'` });
      return z.NEVER;
    }
    return WORKER_ROLES.filter((role) => names.includes(role));
  })
  .default('all');

const positiveCount = z
  .string()
  .regex(/^[1-9][0-9]{0,5}$/, 'must be a whole number from 1 to 999999')
  .transform(Number);

/**
 * The lifecycle role's workflow cache, chosen by measurement (docs/performance.md, P5): each
 * cached run holds its own copy of the workflow modules, about 1.2 MB with its garbage, so this many runs
 * bound the worker's memory; a run past it replays from its history on its next task.
 */
export const DEFAULT_WORKFLOW_CACHE_SIZE = 100;

/** At least 2: the SDK raises a smaller cache to 2 (0, no cache, is for tests of determinism: the option of `createPlaneWorker`). */
const workflowCacheSize = z
  .string()
  .regex(/^([2-9]|[1-9][0-9]{1,5})$/, 'must be a whole number from 2 to 999999')
  .transform(Number);

/** A size such as 10m, 512k or 1g (powers of 1024), or bytes. */
const byteSize = (fallback: string) =>
  z
    .string()
    .transform((text, ctx) => {
      const bytes = parseByteSize(text);
      if (bytes === undefined) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `must be a size such as 10m, 512k or 1g (or bytes), got '${text}'` });
        return z.NEVER;
      }
      return bytes;
    })
    .default(fallback);

const logFiles = z
  .string()
  .regex(/^[0-9]{1,2}$/, `must be a whole number from 1 to ${MAX_CONTAINER_LOG_FILES}`)
  .transform(Number)
  .refine((files) => files >= 1 && files <= MAX_CONTAINER_LOG_FILES, `must be a whole number from 1 to ${MAX_CONTAINER_LOG_FILES}`)
  .default(String(DEFAULT_CONTAINER_LOG_FILES));

/** A fraction of the engine's memory: above 0, at most 1. */
const memoryFraction = z
  .string()
  .regex(/^(0?\.[0-9]+|1(\.0*)?|0)$/, 'must be a number above 0 and at most 1, e.g. 0.9')
  .transform(Number)
  .refine((fraction) => fraction > 0 && fraction <= 1, 'must be a number above 0 and at most 1, e.g. 0.9')
  .default('0.9');

/** How far the memory limits may add up past the allocatable memory: 1 (never over) to 10. */
const memoryOvercommit = z
  .string()
  .regex(/^[0-9]+(\.[0-9]+)?$/, 'must be a number from 1 to 10, e.g. 2')
  .transform(Number)
  .refine((factor) => factor >= 1 && factor <= 10, 'must be a number from 1 to 10, e.g. 2')
  .default(String(DEFAULT_HOST_MEMORY_OVERCOMMIT));

/** `SANDBOXPLANE_WARM_POOL`: `moto=2` (a comma list of adapter=count); unset means no pool. */
const warmPool = z
  .string()
  .transform((text, ctx) => {
    try {
      return parseWarmPoolTargets(text);
    } catch (err) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `${(err as Error).message}; got '${text}'` });
      return z.NEVER;
    }
  })
  .default('');

/** `SANDBOXPLANE_NETWORK_POOL`: pre-made sealed networks each docker host keeps, 0 to {@link MAX_NETWORK_POOL_SIZE}. */
const networkPool = z
  .string()
  .regex(/^[0-9]{1,2}$/, `must be a whole number from 0 to ${MAX_NETWORK_POOL_SIZE}`)
  .transform(Number)
  .refine((count) => count <= MAX_NETWORK_POOL_SIZE, `must be a whole number from 0 to ${MAX_NETWORK_POOL_SIZE}`)
  .default(String(DEFAULT_NETWORK_POOL_SIZE));

const CODEC_KEYS_ENV = 'SANDBOXPLANE_CODEC_KEYS';
const CODEC_KEYS_FILE_ENV = 'SANDBOXPLANE_CODEC_KEYS_FILE';

/** The payload codec's two variables, as zod fields of the configuration's schema. */
const codecEnvShape = {
  [CODEC_KEYS_ENV]: z
    .string()
    .transform((value, ctx) => {
      try {
        return parseCodecKeys(value, CODEC_KEYS_ENV);
      } catch (err) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: (err as Error).message.replace(`${CODEC_KEYS_ENV} `, '') });
        return z.NEVER;
      }
    })
    .optional()
    .describe('payload encryption keys, keyId:base64key, comma-separated, the first encrypts'),
  [CODEC_KEYS_FILE_ENV]: nonEmptyPath.optional().describe('a file of such keys, one a line (default .data/codec-keys, made by the first npm start or sandboxctl worker)'),
} as const;

type CodecEnvValues = {
  readonly [CODEC_KEYS_ENV]?: readonly CodecKey[];
  readonly [CODEC_KEYS_FILE_ENV]?: string;
};

/**
 * The codec settings from already-parsed values: the keys of SANDBOXPLANE_CODEC_KEYS, or of
 * SANDBOXPLANE_CODEC_KEYS_FILE (which must exist), or of the default file when it exists.
 * Returns the issues instead of throwing, for one report of every bad key.
 */
function resolveCodecSettings(values: CodecEnvValues): { settings?: CodecSettings; issues: ConfigIssue[] } {
  const inline = values[CODEC_KEYS_ENV];
  const file = values[CODEC_KEYS_FILE_ENV];
  if (inline !== undefined && file !== undefined) {
    return { issues: [{ key: CODEC_KEYS_ENV, message: `set either ${CODEC_KEYS_ENV} or ${CODEC_KEYS_FILE_ENV}, not both` }] };
  }
  if (inline !== undefined) return { settings: Object.freeze({ keys: inline, keysFile: undefined }), issues: [] };
  const keysFile = file ?? DEFAULT_CODEC_KEYS_PATH;
  if (file === undefined && !fs.existsSync(keysFile)) return { settings: Object.freeze({ keys: undefined, keysFile }), issues: [] };
  try {
    return { settings: Object.freeze({ keys: readCodecKeysFile(keysFile), keysFile }), issues: [] };
  } catch (err) {
    return { issues: [{ key: CODEC_KEYS_FILE_ENV, message: (err as Error).message }] };
  }
}

const envSchema = z.object({
  TEMPORAL_ADDRESS: hostAndPort.default('127.0.0.1:7233').describe('Temporal frontend host:port (default 127.0.0.1:7233)'),
  TEMPORAL_NAMESPACE: identifier('default').default('default').describe('Temporal namespace (default "default")'),
  SANDBOXPLANE_TASK_QUEUE: identifier('sandboxplane').default('sandboxplane').describe('task queue of the workers (default "sandboxplane")'),
  SANDBOXPLANE_DB: nonEmptyPath.default(DEFAULT_STORE_PATH).describe('SQLite projection file of the store role (default .data/sandboxplane.sqlite)'),
  DOCKER_HOST: dockerHost.optional().describe("Docker engine of the docker role's sandboxes (default the engine's socket)"),
  SANDBOXPLANE_LOG_LEVEL: z.enum(LOG_LEVELS).default('info').describe('trace|debug|info|warn|error|fatal|silent (default info)'),
  SANDBOXPLANE_TEMPORAL_CLI: nonEmptyPath.optional().describe('the Temporal CLI `sandboxctl dev` runs (default .tools/bin/temporal, then PATH)'),
  SANDBOXPLANE_DEFAULT_TTL: duration(30 * 60).describe('TTL of a request that names none (default 30m; durations such as 90s, 30m, 2h)'),
  SANDBOXPLANE_TTL_CEILING: duration(4 * 3600).describe('no TTL or extension reaches further than this from now (default 4h)'),
  SANDBOXPLANE_MAX_LIFETIME: duration(24 * 3600).describe('no sandbox lives longer in total (default 24h)'),
  SANDBOXPLANE_APPROVAL_TIMEOUT: duration(3600).describe('how long a sandbox waits for an approver (default 1h)'),
  SANDBOXPLANE_EXPIRY_WARNING: duration(5 * 60).describe("how long before expiry the 'expiring' event is recorded (default 5m)"),
  SANDBOXPLANE_HEALTH_INTERVAL: duration(DEFAULT_HEALTH_CHECK_INTERVAL_SECONDS).describe(
    "how often the health watch looks at a READY sandbox's emulator on its own, a safety net: the docker worker tells a sandbox at once when the engine says its container died (default 10m)",
  ),
  SANDBOXPLANE_MOTO_IMAGE: pinnedImage.optional().describe('moto image id (sha256:...), set by npm start; unset, no moto adapter'),
  SANDBOXPLANE_FLOCI_IMAGE: pinnedImage.optional().describe('Floci image by digest (floci/floci@sha256:...); unset, no Floci adapter'),
  SANDBOXPLANE_EMULATOR_HEALTH_TIMEOUT: duration(60).describe('how long an emulator may take to pass its health check (default 60s)'),
  SANDBOXPLANE_EMULATOR_START_CONCURRENCY: positiveCount
    .refine((count) => count <= MAX_EMULATOR_START_CONCURRENCY, `must be a whole number from 1 to ${MAX_EMULATOR_START_CONCURRENCY}`)
    .optional()
    .describe(`how many emulators a docker host starts at once; the others wait their turn, their health timeout not yet running (default ${EMULATOR_STARTS_PER_CPU} per CPU)`),
  SANDBOXPLANE_SWEEP_INTERVAL: duration(5 * 60).describe('how often the cleanup schedule runs the leak sweep (default 5m)'),
  SANDBOXPLANE_SWEEP_REMOVE_CONCURRENCY: positiveCount
    .default(String(DEFAULT_SWEEP_REMOVE_CONCURRENCY))
    .describe(`how many orphaned containers a docker host's sweep removes at once (default ${DEFAULT_SWEEP_REMOVE_CONCURRENCY})`),
  SANDBOXPLANE_PLANE_ID: planeId.optional().describe("every container's io.sandboxplane.plane label (default derived from Temporal's cluster and namespace)"),
  SANDBOXPLANE_WORKER_ROLES: workerRoles.describe('all, or a comma list of lifecycle, store, docker, targets (default all; docs/deploy.md)'),
  SANDBOXPLANE_HOST_ID: hostIdSchema.default(DEFAULT_HOST_ID).describe("the docker role's host id; its queue is <task queue>-docker-<id> (default local)"),
  SANDBOXPLANE_HOST_CAPACITY: positiveCount.default('100').describe("how many sandboxes the docker role's host takes at once (default 100)"),
  SANDBOXPLANE_MAX_SANDBOXES: positiveCount.default(String(DEFAULT_MAX_SANDBOXES)).describe('live sandbox containers the whole plane allows, warm pools included (default 500)'),
  SANDBOXPLANE_SNAPSHOT_QUOTA: positiveCount
    .default(String(DEFAULT_SNAPSHOT_QUOTA.count))
    .describe(`snapshots each principal may keep; past it a snapshot or pause is QUOTA_EXCEEDED (default ${DEFAULT_SNAPSHOT_QUOTA.count})`),
  SANDBOXPLANE_SNAPSHOT_QUOTA_BYTES: byteSize('256m').describe("the bytes each principal's snapshots may hold, compressed, as `snapshots` lists them (default 256m)"),
  SANDBOXPLANE_SNAPSHOT_DIR: nonEmptyPath
    .optional()
    .describe('where snapshot content is kept, sealed, one file per digest; the store and every docker host must share it (default: beside SANDBOXPLANE_DB, in snapshots/)'),
  SANDBOXPLANE_SNAPSHOT_MAX_BYTES: byteSize('32m').describe('the most one snapshot may hold, compressed; past it SNAPSHOT_TOO_LARGE (default 32m)'),
  SANDBOXPLANE_FORK_MAX: positiveCount.default(String(DEFAULT_FORK_MAX)).describe(`the most sandboxes one fork makes at once (\`fork --count\`; default ${DEFAULT_FORK_MAX})`),
  SANDBOXPLANE_SNAPSHOT_MAX_AGE: duration(DEFAULT_SNAPSHOT_QUOTA.maxAgeSeconds).describe(
    'how old a snapshot grows before the sweep deletes it, unless a PAUSED sandbox resumes from it (default 30d)',
  ),
  SANDBOXPLANE_WORKFLOW_CACHE_SIZE: workflowCacheSize
    .default(String(DEFAULT_WORKFLOW_CACHE_SIZE))
    .describe(
      `workflow runs the lifecycle role keeps in memory, about 1.2 MB each; one evicted replays on its next task, so memory stays flat however many sandboxes live (default ${DEFAULT_WORKFLOW_CACHE_SIZE})`,
    ),
  SANDBOXPLANE_PLACEMENT_WAIT: duration(120).describe('how long a sandbox waits for a host with room before NO_CAPACITY (default 2m)'),
  SANDBOXPLANE_WARM_POOL: warmPool.describe('idle emulator containers each docker host keeps, e.g. moto=2 (default none)'),
  SANDBOXPLANE_NETWORK_POOL: networkPool.describe(
    `empty sealed networks each docker host makes ahead, so a cold create need not make its own; each holds one of the engine's address ranges, 0 turns it off (default ${DEFAULT_NETWORK_POOL_SIZE})`,
  ),
  SANDBOXPLANE_HOST_MEMORY_FRACTION: memoryFraction.describe("the share of the engine's memory the memory requests of the docker role's containers may add up to (default 0.9)"),
  SANDBOXPLANE_HOST_MEMORY_OVERCOMMIT: memoryOvercommit.describe(
    `how far the memory limits of the docker role's containers may add up past the share their requests may (1 to 10; default ${DEFAULT_HOST_MEMORY_OVERCOMMIT})`,
  ),
  SANDBOXPLANE_CONTAINER_LOG_MAX: byteSize(DEFAULT_CONTAINER_LOG_MAX).describe("disk each container's log may take, all its files together, e.g. 20m (default 10m)"),
  SANDBOXPLANE_CONTAINER_LOG_FILES: logFiles.describe(`files each container's log rotates through, 1 to ${MAX_CONTAINER_LOG_FILES} (default ${DEFAULT_CONTAINER_LOG_FILES})`),
  SANDBOXPLANE_PRINCIPAL: principalSchema.optional().describe('who the CLI and sandboxctl mcp act as (an agent); unset, the CLI acts as an operator'),
  SANDBOXPLANE_STORE_KEY_FILE: nonEmptyPath.optional().describe("the store role's key for approvers' TOTP secrets (default the SQLite file's path + .key)"),
  SANDBOXPLANE_DEPLOYMENT: deploymentNameSchema.default(DEFAULT_DEPLOYMENT).describe('the Worker Deployment of the lifecycle workers (default sandboxplane)'),
  SANDBOXPLANE_BUILD_ID: buildIdSchema.optional().describe("the lifecycle workers' build id (default derived from the workflow code)"),
  SANDBOXPLANE_METRICS_ADDRESS: hostAndPort.optional().describe('host:port a worker serves Prometheus metrics on at /metrics, e.g. 127.0.0.1:9464 (default none)'),
  OTEL_EXPORTER_OTLP_ENDPOINT: httpUrl.optional().describe('OTLP/HTTP endpoint traces go to, e.g. http://127.0.0.1:4318 (default none: no tracing)'),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: httpUrl.optional().describe('the full OTLP traces URL; overrides the one above (…/v1/traces)'),
  OTEL_EXPORTER_OTLP_PROTOCOL: otelText.optional().describe('http/protobuf (default) or http/json'),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otelText.optional().describe("the traces exporter's protocol; overrides the one above"),
  OTEL_SERVICE_NAME: z.string().min(1).max(255).optional().describe('service name on spans (default sandboxplane-worker or sandboxplane-client)'),
  OTEL_SDK_DISABLED: otelText.optional().describe('true (any case) turns tracing off whatever else is set'),
  OTEL_TRACES_EXPORTER: otelText.optional().describe('a comma list; tracing is on only if it names otlp (default otlp when an endpoint is set)'),
  ...codecEnvShape,
  ...temporalTlsEnvShape,
});

/**
 * Every variable {@link loadConfig} reads besides the flags (those are
 * `SANDBOXPLANE_FLAG_<NAME>`, see `flagEnvName`): what `.env.example` must document.
 */
export const CONFIG_ENV_KEYS: readonly string[] = Object.freeze(Object.keys(envSchema.shape));

/** One line on each of {@link CONFIG_ENV_KEYS} (its field's `.describe()`), for `sandboxctl --help`; `.env.example` says more. */
export const CONFIG_ENV_DESCRIPTIONS: Readonly<Record<string, string>> = Object.freeze(
  Object.fromEntries(Object.entries(envSchema.shape).map(([key, field]) => [key, field.description ?? ''])),
);

type Env = Readonly<Record<string, string | undefined>>;

/** Empty strings count as unset, as shells make `FOO= cmd` easy to type by accident. */
function withoutEmpty(env: Env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value !== undefined && value !== '') out[key] = value;
  }
  return out;
}

function parseFlags(env: Env, issues: ConfigIssue[]): FeatureFlags {
  const flags = Object.fromEntries(FEATURE_FLAG_NAMES.map((flag) => [flag, false])) as Record<FeatureFlag, boolean>;
  for (const [key, raw] of Object.entries(env)) {
    if (!key.startsWith(FLAG_ENV_PREFIX) || raw === undefined) continue;
    const name = key.slice(FLAG_ENV_PREFIX.length);
    if (!isFeatureFlag(name)) {
      issues.push({ key, message: `is not a known flag; known flags: ${FEATURE_FLAG_NAMES.map(flagEnvName).join(', ')}` });
      continue;
    }
    const value = parseFlagValue(raw);
    if (value === undefined) {
      issues.push({ key, message: `must be one of 1, 0, true, false, on, off, yes, no; got '${raw}'` });
      continue;
    }
    flags[name] = value;
  }
  return Object.freeze(flags);
}

/**
 * Reads the configuration from `env` (the process environment unless a test passes
 * its own). Throws one {@link ConfigError} naming every bad key.
 */
export function loadConfig(env: Env = process.env): Config {
  const issues: ConfigIssue[] = [];
  const parsed = envSchema.safeParse(withoutEmpty(env));
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      issues.push({ key: issue.path.join('.'), message: issue.message });
    }
  }
  const flags = parseFlags(env, issues);
  if (parsed.success) {
    const pooled = pooledSlots(parsed.data.SANDBOXPLANE_WARM_POOL);
    if (pooled >= parsed.data.SANDBOXPLANE_HOST_CAPACITY) {
      issues.push({
        key: 'SANDBOXPLANE_WARM_POOL',
        message: `its ${pooled} idle containers would take all ${parsed.data.SANDBOXPLANE_HOST_CAPACITY} of SANDBOXPLANE_HOST_CAPACITY; keep fewer or raise the capacity`,
      });
    }
    const log = { maxBytes: parsed.data.SANDBOXPLANE_CONTAINER_LOG_MAX, files: parsed.data.SANDBOXPLANE_CONTAINER_LOG_FILES };
    if (logFileBytes(log) < MIN_CONTAINER_LOG_FILE_BYTES) {
      issues.push({
        key: 'SANDBOXPLANE_CONTAINER_LOG_MAX',
        message: `must give each of the ${log.files} log files (SANDBOXPLANE_CONTAINER_LOG_FILES) at least 64k, got ${log.maxBytes} bytes`,
      });
    }
  }
  const codec = parsed.success ? resolveCodecSettings(parsed.data) : undefined;
  issues.push(...(codec?.issues ?? []));
  const traces = parsed.success ? traceExportSettings(parsed.data) : undefined;
  issues.push(...(traces?.issues ?? []));
  const temporalTls = parsed.success ? resolveTemporalTls(parsed.data) : undefined;
  issues.push(...(temporalTls?.issues ?? []));
  if (!parsed.success || codec?.settings === undefined || traces === undefined || issues.length > 0) throw new ConfigError(issues);

  const values = parsed.data;
  return Object.freeze({
    temporalAddress: values.TEMPORAL_ADDRESS,
    temporalNamespace: values.TEMPORAL_NAMESPACE,
    taskQueue: values.SANDBOXPLANE_TASK_QUEUE,
    storePath: values.SANDBOXPLANE_DB,
    storeKeyPath: values.SANDBOXPLANE_STORE_KEY_FILE ?? `${values.SANDBOXPLANE_DB}.key`,
    dockerHost: values.DOCKER_HOST,
    logLevel: values.SANDBOXPLANE_LOG_LEVEL,
    temporalCliPath: values.SANDBOXPLANE_TEMPORAL_CLI,
    flags,
    lifecycle: Object.freeze({
      defaultTtlSeconds: values.SANDBOXPLANE_DEFAULT_TTL,
      ttlCeilingSeconds: values.SANDBOXPLANE_TTL_CEILING,
      maxLifetimeSeconds: values.SANDBOXPLANE_MAX_LIFETIME,
      approvalTimeoutSeconds: values.SANDBOXPLANE_APPROVAL_TIMEOUT,
      expiryWarningSeconds: values.SANDBOXPLANE_EXPIRY_WARNING,
      healthCheckIntervalSeconds: values.SANDBOXPLANE_HEALTH_INTERVAL,
      placementWaitSeconds: values.SANDBOXPLANE_PLACEMENT_WAIT,
    }),
    emulators: Object.freeze({
      motoImage: values.SANDBOXPLANE_MOTO_IMAGE,
      flociImage: values.SANDBOXPLANE_FLOCI_IMAGE,
      healthTimeoutSeconds: values.SANDBOXPLANE_EMULATOR_HEALTH_TIMEOUT,
      startConcurrency: values.SANDBOXPLANE_EMULATOR_START_CONCURRENCY ?? defaultEmulatorStartConcurrency(os.availableParallelism()),
      containerLog: Object.freeze({ maxBytes: values.SANDBOXPLANE_CONTAINER_LOG_MAX, files: values.SANDBOXPLANE_CONTAINER_LOG_FILES }),
    }),
    sweepIntervalSeconds: values.SANDBOXPLANE_SWEEP_INTERVAL,
    sweepRemoveConcurrency: values.SANDBOXPLANE_SWEEP_REMOVE_CONCURRENCY,
    planeId: values.SANDBOXPLANE_PLANE_ID,
    principal: values.SANDBOXPLANE_PRINCIPAL,
    workerRoles: Object.freeze(values.SANDBOXPLANE_WORKER_ROLES),
    host: Object.freeze({
      id: values.SANDBOXPLANE_HOST_ID,
      capacity: values.SANDBOXPLANE_HOST_CAPACITY,
      warmPool: Object.freeze(values.SANDBOXPLANE_WARM_POOL),
      memoryFraction: values.SANDBOXPLANE_HOST_MEMORY_FRACTION,
      memoryOvercommit: values.SANDBOXPLANE_HOST_MEMORY_OVERCOMMIT,
    }),
    maxSandboxes: values.SANDBOXPLANE_MAX_SANDBOXES,
    networkPool: values.SANDBOXPLANE_NETWORK_POOL,
    snapshots: Object.freeze({
      dir: values.SANDBOXPLANE_SNAPSHOT_DIR ?? path.join(path.dirname(values.SANDBOXPLANE_DB), 'snapshots'),
      maxBytes: values.SANDBOXPLANE_SNAPSHOT_MAX_BYTES,
      forkMax: values.SANDBOXPLANE_FORK_MAX,
    }),
    snapshotQuota: Object.freeze({
      count: values.SANDBOXPLANE_SNAPSHOT_QUOTA,
      bytes: values.SANDBOXPLANE_SNAPSHOT_QUOTA_BYTES,
      maxAgeSeconds: values.SANDBOXPLANE_SNAPSHOT_MAX_AGE,
    }),
    workflowCacheSize: values.SANDBOXPLANE_WORKFLOW_CACHE_SIZE,
    codec: codec.settings,
    deployment: Object.freeze({ name: values.SANDBOXPLANE_DEPLOYMENT, buildId: values.SANDBOXPLANE_BUILD_ID }),
    telemetry: Object.freeze({ traces: traces.settings, metricsAddress: values.SANDBOXPLANE_METRICS_ADDRESS }),
    temporalTls: temporalTls?.settings,
  });
}

const TRACE_ENV_KEYS = {
  OTEL_EXPORTER_OTLP_ENDPOINT: true,
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: true,
  OTEL_EXPORTER_OTLP_PROTOCOL: true,
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: true,
  OTEL_SERVICE_NAME: true,
  OTEL_SDK_DISABLED: true,
  OTEL_TRACES_EXPORTER: true,
} as const;

type TraceEnvValues = Pick<z.output<typeof envSchema>, keyof typeof TRACE_ENV_KEYS>;

/**
 * Only the tracing variables from `env`: what a CLI command reads before it runs, so that
 * a command with tracing off loads nothing of OpenTelemetry. Throws ConfigError on a bad value.
 */
export function loadTraceExportSettings(env: Env = process.env): TraceExportSettings | undefined {
  const parsed = envSchema.pick(TRACE_ENV_KEYS).safeParse(withoutEmpty(env));
  if (!parsed.success) throw new ConfigError(parsed.error.issues.map((issue) => ({ key: issue.path.join('.'), message: issue.message })));
  const { settings, issues } = traceExportSettings(parsed.data);
  if (issues.length > 0) throw new ConfigError(issues);
  return settings;
}

/**
 * The OpenTelemetry specification's reading of its variables, for traces over OTLP/HTTP:
 * off when OTEL_SDK_DISABLED is true (in any case), when OTEL_TRACES_EXPORTER names no
 * `otlp`, or when no endpoint is set; an issue only for a protocol other than ours with an
 * endpoint set.
 */
function traceExportSettings(values: TraceEnvValues): { settings: TraceExportSettings | undefined; issues: ConfigIssue[] } {
  const off = { settings: undefined, issues: [] };
  if (values.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return off;
  const exporters = values.OTEL_TRACES_EXPORTER?.split(',').map((name) => name.trim().toLowerCase());
  if (exporters !== undefined && !exporters.includes('otlp')) return off;
  const base = values.OTEL_EXPORTER_OTLP_ENDPOINT;
  const url = values.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (base === undefined ? undefined : `${base.replace(/\/+$/, '')}/v1/traces`);
  if (url === undefined) return off;
  const key = values.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = values[key] ?? 'http/protobuf';
  if (!isOtlpProtocol(protocol)) {
    return { settings: undefined, issues: [{ key, message: `must be ${OTLP_PROTOCOLS.join(' or ')} (got '${protocol}'; grpc is not offered: use http/protobuf with port 4318)` }] };
  }
  return { settings: Object.freeze({ url, protocol, serviceName: values.OTEL_SERVICE_NAME }), issues: [] };
}

function isOtlpProtocol(value: string): value is OtlpProtocol {
  return (OTLP_PROTOCOLS as readonly string[]).includes(value);
}

/** Only the codec's variables from `env`: what the SDK reads when it is given no codec. */
export function loadCodecSettings(env: Env = process.env): CodecSettings {
  const parsed = z.object(codecEnvShape).safeParse(withoutEmpty(env));
  const resolved = parsed.success ? resolveCodecSettings(parsed.data) : { issues: parsed.error.issues.map((issue) => ({ key: issue.path.join('.'), message: issue.message })) };
  if (resolved.settings === undefined || resolved.issues.length > 0) {
    throw new SandboxPlaneError('CONFIG_INVALID', `Invalid payload codec configuration:\n${resolved.issues.map((issue) => `  ${issue.key}: ${issue.message}`).join('\n')}`, {
      details: { keys: resolved.issues.map((issue) => issue.key) },
    });
  }
  return resolved.settings;
}

/**
 * Only the `SANDBOXPLANE_TEMPORAL_TLS_*` variables from `env`: what the SDK reads when it is
 * given no TLS settings. Throws ConfigError (CONFIG_INVALID) naming each bad variable.
 */
export function loadTemporalTlsSettings(env: Env = process.env): TemporalTlsSettings | undefined {
  const parsed = z.object(temporalTlsEnvShape).safeParse(withoutEmpty(env));
  if (!parsed.success) throw new ConfigError(parsed.error.issues.map((issue) => ({ key: issue.path.join('.'), message: issue.message })));
  const { settings, issues } = resolveTemporalTls(parsed.data);
  if (issues.length > 0) throw new ConfigError(issues);
  return settings;
}

/** A copy of `config` with some fields replaced, still frozen (CLI flags override env). */
export function overrideConfig(config: Config, changes: Partial<Config>): Config {
  return Object.freeze({ ...config, ...changes, flags: Object.freeze({ ...config.flags, ...changes.flags }) });
}
