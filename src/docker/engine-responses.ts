import { z } from 'zod';
import { engineIdOf } from '../domain/engine-identity';
import { SandboxPlaneError } from '../domain/errors';
import { toContainerState, type ContainerInfo, type ContainerStats, type ContainerSummary, type NetworkSummary, type PublishedPort } from './container-broker';

/**
 * The parts of the engine's answers the broker relies on, checked with zod so that a
 * surprising engine fails loudly here instead of as `undefined` somewhere later.
 */

const labels = z
  .record(z.string())
  .nullish()
  .transform((value) => Object.freeze({ ...(value ?? {}) }));

/** `NetworkSettings.Networks`: name → endpoint; only the network id is kept. */
const attachedNetworks = z
  .record(
    z
      .object({ NetworkID: z.string().default('') })
      .passthrough()
      .nullable(),
  )
  .nullish()
  .transform((value) => Object.freeze(Object.fromEntries(Object.entries(value ?? {}).map(([name, endpoint]) => [name, endpoint?.NetworkID ?? '']))));

const portBinding = z.object({ HostIp: z.string().default(''), HostPort: z.string().default('') });
const portMap = z.record(z.array(portBinding).nullable()).nullish();

const inspectSchema = z.object({
  Id: z.string().min(1),
  Name: z.string(),
  Created: z.string(),
  Image: z.string(),
  Config: z.object({ Image: z.string(), Labels: labels }),
  State: z.object({
    Status: z.string(),
    ExitCode: z.number().int().optional(),
    OOMKilled: z.boolean().optional(),
    StartedAt: z.string().optional(),
    FinishedAt: z.string().optional(),
  }),
  HostConfig: z.object({
    Memory: z.number().optional(),
    PidsLimit: z.number().nullish(),
    PortBindings: portMap,
  }),
  NetworkSettings: z.object({ Ports: portMap, Networks: attachedNetworks }).nullish(),
});

const networkListSchema = z.array(z.object({ Id: z.string().min(1), Name: z.string(), Labels: labels, Created: z.string().optional() }));

const listSchema = z.array(
  z.object({
    Id: z.string().min(1),
    Names: z.array(z.string()).default([]),
    Image: z.string(),
    State: z.string(),
    Labels: labels,
    Ports: z.array(z.object({ IP: z.string().optional(), PrivatePort: z.number(), PublicPort: z.number().optional(), Type: z.string() })).default([]),
    Created: z.number(),
    NetworkSettings: z.object({ Networks: attachedNetworks }).nullish(),
  }),
);

const infoSchema = z.object({ ID: z.string().trim().min(1), Name: z.string().optional(), DockerRootDir: z.string().optional() });

const memoryInfoSchema = z.object({ MemTotal: z.number().int().positive() });

/**
 * `GET /containers/{id}/stats?stream=false`: a stopped container answers with empty
 * memory stats and zero CPU, so both are optional here and read as 0.
 */
const statsSchema = z.object({
  cpu_stats: z
    .object({
      cpu_usage: z
        .object({ total_usage: z.number().nonnegative().default(0) })
        .partial()
        .default({}),
    })
    .passthrough()
    .nullish(),
  memory_stats: z
    .object({
      usage: z.number().nonnegative().optional(),
      // cgroup v1 only; cgroup v2 has no maximum.
      max_usage: z.number().nonnegative().optional(),
    })
    .passthrough()
    .nullish(),
});

/** The engine writes the zero time for "never". */
function timestamp(value: string | undefined): string | null {
  if (value === undefined || value === '' || value.startsWith('0001-01-01')) return null;
  return value;
}

function parseOrThrow<T>(schema: z.ZodType<T, z.ZodTypeDef, unknown>, value: unknown, what: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ');
  throw new SandboxPlaneError('DOCKER_RESPONSE_INVALID', `Unexpected ${what} answer from the Docker engine: ${issues}`);
}

function portsFrom(map: z.infer<typeof portMap>): PublishedPort[] {
  const ports: PublishedPort[] = [];
  for (const [key, bindings] of Object.entries(map ?? {})) {
    const [port = '', protocol = 'tcp'] = key.split('/');
    const containerPort = Number(port);
    for (const binding of bindings ?? []) {
      const hostPort = Number(binding.HostPort);
      ports.push(
        Object.freeze({
          containerPort,
          protocol,
          hostIp: binding.HostIp === '' ? undefined : binding.HostIp,
          hostPort: Number.isInteger(hostPort) && hostPort > 0 ? hostPort : undefined,
        }),
      );
    }
  }
  return ports;
}

/** Maps `GET /containers/{id}/json` onto {@link ContainerInfo}. */
export function toContainerInfo(raw: unknown): ContainerInfo {
  const info = parseOrThrow(inspectSchema, raw, 'inspect');
  const live = portsFrom(info.NetworkSettings?.Ports);
  const ports = live.some((port) => port.hostPort !== undefined) ? live : portsFrom(info.HostConfig.PortBindings);
  return Object.freeze({
    id: info.Id,
    name: info.Name.replace(/^\//, ''),
    image: info.Config.Image,
    imageId: info.Image,
    state: toContainerState(info.State.Status),
    labels: info.Config.Labels,
    ports: Object.freeze(ports),
    createdAt: info.Created,
    exitCode: info.State.ExitCode ?? null,
    oomKilled: info.State.OOMKilled ?? false,
    startedAt: timestamp(info.State.StartedAt),
    finishedAt: timestamp(info.State.FinishedAt),
    limits: Object.freeze({ memoryBytes: info.HostConfig.Memory ?? 0, pidsLimit: info.HostConfig.PidsLimit ?? null }),
    networks: info.NetworkSettings?.Networks ?? Object.freeze({}),
  });
}

/** Maps `GET /networks` onto {@link NetworkSummary}s. */
export function toNetworkSummaries(raw: unknown): NetworkSummary[] {
  return parseOrThrow(networkListSchema, raw, 'network list').map((entry) =>
    Object.freeze({ id: entry.Id, name: entry.Name, labels: entry.Labels, ...(entry.Created === undefined ? {} : { createdAt: entry.Created }) }),
  );
}

/** The engine's ID from `GET /info`: stable for the life of the engine's data directory. */
export function toEngineId(raw: unknown): string {
  return engineIdOf(parseOrThrow(infoSchema, raw, 'info'));
}

/** The memory of the engine's machine (or VM) from `GET /info`, in bytes. */
export function toEngineMemoryBytes(raw: unknown): number {
  return parseOrThrow(memoryInfoSchema, raw, 'info').MemTotal;
}

/** Maps `GET /containers/json` onto {@link ContainerSummary}s. */
export function toContainerSummaries(raw: unknown): ContainerSummary[] {
  return parseOrThrow(listSchema, raw, 'list').map((entry) =>
    Object.freeze({
      id: entry.Id,
      name: (entry.Names[0] ?? '').replace(/^\//, ''),
      image: entry.Image,
      state: toContainerState(entry.State),
      labels: entry.Labels,
      ports: Object.freeze(entry.Ports.map((port) => Object.freeze({ containerPort: port.PrivatePort, protocol: port.Type, hostIp: port.IP, hostPort: port.PublicPort }))),
      createdAt: new Date(entry.Created * 1000).toISOString(),
      networks: entry.NetworkSettings?.Networks ?? Object.freeze({}),
    }),
  );
}

/** Maps `GET /containers/{id}/stats?stream=false` onto {@link ContainerStats}. */
export function toContainerStats(raw: unknown): ContainerStats {
  const stats = parseOrThrow(statsSchema, raw, 'stats');
  const memoryBytes = Math.round(stats.memory_stats?.usage ?? 0);
  return Object.freeze({
    cpuNanos: Math.round(stats.cpu_stats?.cpu_usage.total_usage ?? 0),
    memoryBytes,
    memoryPeakBytes: Math.max(memoryBytes, Math.round(stats.memory_stats?.max_usage ?? 0)),
  });
}
