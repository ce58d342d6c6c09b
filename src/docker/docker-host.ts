import { z } from 'zod';
import { SandboxPlaneError } from '../domain/errors';

/** Where the engine listens. */
export type DockerEndpoint =
  { readonly kind: 'unix'; readonly socketPath: string } | { readonly kind: 'npipe'; readonly socketPath: string } | { readonly kind: 'tcp'; readonly host: string; readonly port: number };

export const DEFAULT_DOCKER_SOCKET = '/var/run/docker.sock';

const unixHost = z
  .string()
  .regex(/^unix:\/\/(\/.*)?$/)
  .transform((value): DockerEndpoint => ({ kind: 'unix', socketPath: value.slice('unix://'.length) || DEFAULT_DOCKER_SOCKET }));

const npipeHost = z
  .string()
  .regex(/^npipe:\/\/.+$/)
  .transform((value): DockerEndpoint => ({ kind: 'npipe', socketPath: value.slice('npipe://'.length) }));

const TCP_HOST = /^tcp:\/\/(?:\[(?<ipv6>[0-9A-Fa-f:.]+)\]|(?<name>[A-Za-z0-9.-]+)):(?<port>\d{1,5})\/?$/;

const tcpHost = z.string().transform((value, ctx): DockerEndpoint | typeof z.NEVER => {
  const groups = TCP_HOST.exec(value)?.groups;
  const port = Number(groups?.port ?? NaN);
  const host = groups?.ipv6 ?? groups?.name;
  if (host === undefined || !Number.isInteger(port) || port < 1 || port > 65535) {
    ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'must be tcp://host:port with a port from 1 to 65535' });
    return z.NEVER;
  }
  return { kind: 'tcp', host, port };
});

const dockerHostSchema = z.union([unixHost, npipeHost, tcpHost]);

/**
 * Parses DOCKER_HOST: `unix:///path`, `npipe:////./pipe/name`, `tcp://host:port`
 * (plain HTTP), or absent for the default socket. Anything else is CONFIG_INVALID.
 */
export function parseDockerHost(value: string | undefined): DockerEndpoint {
  if (value === undefined || value.trim() === '') return { kind: 'unix', socketPath: DEFAULT_DOCKER_SOCKET };
  const parsed = dockerHostSchema.safeParse(value.trim());
  if (parsed.success) return parsed.data;
  throw new SandboxPlaneError('CONFIG_INVALID', `DOCKER_HOST must be unix:///path/to/docker.sock, npipe:////./pipe/docker_engine or tcp://host:port, got '${value}'`, {
    details: { key: 'DOCKER_HOST' },
  });
}

/** The DOCKER_HOST form of an endpoint, for messages and logs. */
export function formatDockerEndpoint(endpoint: DockerEndpoint): string {
  switch (endpoint.kind) {
    case 'unix':
      return `unix://${endpoint.socketPath}`;
    case 'npipe':
      return `npipe://${endpoint.socketPath}`;
    case 'tcp':
      return `tcp://${endpoint.host.includes(':') ? `[${endpoint.host}]` : endpoint.host}:${endpoint.port}`;
  }
}
