import type Docker from 'dockerode';
import { logFileBytes } from '../domain/container-log';
import type { ValidatedContainerSpec } from './container-spec';

/* What the broker asks of the engine, built from what it validated: engine-responses.ts's counterpart. */

/**
 * A sandbox's own bridge (DESIGN §12, docs/security.md "Sealed sandboxes"): no traffic
 * between containers on it, and no address translation out, so nothing it sends out of
 * the host can be answered. Not `Internal`: this engine publishes no port of a container
 * whose only network is internal, and the published loopback port is how the sandbox serves.
 */
export const SEALED_BRIDGE_OPTIONS: Readonly<Record<string, string>> = Object.freeze({
  'com.docker.network.bridge.enable_icc': 'false',
  'com.docker.network.bridge.enable_ip_masquerade': 'false',
});

/** The engine's create options for a validated spec. Nothing the spec did not validate is set. */
export function toCreateOptions(spec: ValidatedContainerSpec, networkId?: string): Docker.ContainerCreateOptions {
  const exposed: Record<string, Record<string, never>> = {};
  const bindings: Record<string, Array<{ HostIp: string; HostPort: string }>> = {};
  for (const port of spec.ports) {
    const key = `${port.containerPort}/${port.protocol}`;
    exposed[key] = {};
    (bindings[key] ??= []).push({ HostIp: port.hostIp, HostPort: port.hostPort === 0 ? '' : String(port.hostPort) });
  }
  return {
    ...(spec.name === undefined ? {} : { name: spec.name }),
    Image: spec.image,
    ...(spec.command === undefined ? {} : { Cmd: [...spec.command] }),
    ...(spec.entrypoint === undefined ? {} : { Entrypoint: [...spec.entrypoint] }),
    Env: Object.entries(spec.env).map(([key, value]) => `${key}=${value}`),
    Labels: { ...spec.labels },
    ...(spec.user === undefined ? {} : { User: spec.user }),
    ...(spec.workingDir === undefined ? {} : { WorkingDir: spec.workingDir }),
    ExposedPorts: exposed,
    HostConfig: {
      Privileged: false,
      CapAdd: [],
      CapDrop: [...spec.capDrop],
      SecurityOpt: ['no-new-privileges'],
      // By id: two networks of one name (a race between processes) would make the name ambiguous.
      NetworkMode: networkId ?? spec.networkMode,
      PortBindings: bindings,
      PublishAllPorts: false,
      Mounts: spec.binds.map((bind) => ({ Type: 'bind' as const, Source: bind.source, Target: bind.target, ReadOnly: bind.readOnly })),
      Memory: spec.limits.memoryBytes,
      MemorySwap: spec.limits.memoryBytes,
      PidsLimit: spec.limits.pidsLimit,
      NanoCpus: spec.limits.nanoCpus,
      // Named, not left to the engine's default driver: a daemon set to journald or syslog would keep no bound here.
      LogConfig: {
        Type: 'json-file',
        Config: { 'max-size': String(logFileBytes({ maxBytes: spec.limits.logMaxBytes, files: spec.limits.logFiles })), 'max-file': String(spec.limits.logFiles) },
      },
      RestartPolicy: { Name: 'no' },
      AutoRemove: false,
      ReadonlyRootfs: spec.readonlyRootfs,
      Devices: [],
    },
  };
}

/** The engine's create options for a sandbox's sealed network named `name`. */
export function toSealedNetworkOptions(name: string, labels: Readonly<Record<string, string>>): Docker.NetworkCreateOptions {
  return { Name: name, CheckDuplicate: true, Driver: 'bridge', Internal: false, Attachable: false, EnableIPv6: false, Options: { ...SEALED_BRIDGE_OPTIONS }, Labels: { ...labels } };
}
