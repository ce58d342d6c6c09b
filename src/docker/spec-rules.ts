import type { ZodIssue } from 'zod';
import { logFileBytes, MAX_CONTAINER_LOG_FILES, MIN_CONTAINER_LOG_FILE_BYTES } from '../domain/container-log';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, SANDBOX_ID_LABEL, ADAPTER_LABEL, PLANE_LABEL, sandboxNetworkName } from '../domain/docker-labels';
import { isPinnedImage } from '../domain/image-reference';
import { SANDBOX_ID_PATTERN } from '../domain/sandbox-id';
import { POOL_LABEL, POOL_SLOT_ID_PATTERN } from '../domain/warm-pool';
import { checkBindSource, classifyHostPath, isAbsoluteContainerPath, parseBind } from './bind-path';
import { containerSpecSchema, type ContainerSpecShape, type ValidatedBind, type ValidatedContainerSpec, type ValidatedPort } from './container-spec';
import { SpecRefusedError, type SpecRefusalCode, type SpecViolation } from './spec-refused-error';

/** What the rules need to know about this installation. */
export interface SpecPolicy {
  /** Exact image references allowed without a digest (e.g. `local/sandboxplane-testhttp:1`). */
  readonly imageAllowlist?: readonly string[];
  /** Host paths protected beyond the built-in list: the engine's socket, its data root. */
  readonly extraForbiddenPaths?: readonly string[];
  /**
   * Resolves symbolic links in an absolute POSIX host path. Given only where the engine
   * shares this machine's file system; without it, paths are judged as written.
   */
  readonly resolveHostPath?: (path: string) => string;
}

/** The engine refuses less; below this a container cannot even start. */
export const MIN_MEMORY_BYTES = 6 * 1024 * 1024;

export const LOOPBACK_HOST_IP = '127.0.0.1';

/** The engine refuses a CPU quota below 0.01 CPU. */
export const MIN_NANO_CPUS = 10_000_000;

/** Every capability: a sandbox keeps none (DESIGN §12). */
export const DROP_ALL_CAPABILITIES = 'ALL';

const ADAPTER_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const NETWORK_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const BIND_MODES = new Set(['ro', 'rw']);

type Report = (code: SpecRefusalCode, field: string, message: string) => void;

function fieldPath(path: readonly (string | number)[]): string {
  return path.reduce<string>((acc, part) => (typeof part === 'number' ? `${acc}[${part}]` : acc === '' ? part : `${acc}.${part}`), '');
}

function shapeViolations(issues: readonly ZodIssue[]): SpecViolation[] {
  return issues.map((issue) => {
    const field = fieldPath(issue.path) || '(spec)';
    return { code: 'SPEC_INVALID', field, message: `${field}: ${issue.message}` };
  });
}

function checkImage(spec: ContainerSpecShape, policy: SpecPolicy, report: Report): void {
  if (isPinnedImage(spec.image) || (policy.imageAllowlist ?? []).includes(spec.image)) return;
  report('SPEC_IMAGE_NOT_PINNED', 'image', `image ${spec.image} is not pinned (name@sha256:<digest> or sha256:<image id>) and not on the image allowlist`);
}

function checkPrivileges(spec: ContainerSpecShape, report: Report): void {
  if (spec.privileged === true) report('SPEC_PRIVILEGED', 'privileged', 'privileged must be false or absent, got true');
  if (spec.capAdd !== undefined && spec.capAdd.length > 0) {
    report('SPEC_CAPABILITY_ADDED', 'capAdd', `capAdd must be empty, got ${spec.capAdd.join(', ')}`);
  }
  if (spec.capDrop !== undefined && !spec.capDrop.some((cap) => cap.trim().toUpperCase() === DROP_ALL_CAPABILITIES)) {
    report(
      'SPEC_CAPABILITIES_NOT_DROPPED',
      'capDrop',
      `capDrop must include '${DROP_ALL_CAPABILITIES}' (or be left out, which drops all), got ${spec.capDrop.length === 0 ? 'nothing' : spec.capDrop.join(', ')}`,
    );
  }
  if (spec.devices !== undefined && spec.devices.length > 0) {
    report('SPEC_DEVICES', 'devices', `devices must be empty, got ${spec.devices.length} device(s)`);
  }
}

function sharesOutsideNamespace(mode: string): boolean {
  const normalized = mode.trim().toLowerCase();
  return normalized === 'host' || normalized.startsWith('container:');
}

/** The network the spec's container gets to itself: named after its owner and plane, so it is never another's. */
export function ownNetworkName(labels: Readonly<Record<string, string>>): string | undefined {
  const owner = labels[SANDBOX_ID_LABEL];
  return owner === undefined ? undefined : sandboxNetworkName(labels[PLANE_LABEL], owner);
}

function checkNamespaces(spec: ContainerSpecShape, report: Report): void {
  if (spec.networkMode !== undefined) {
    const own = ownNetworkName(spec.labels);
    if (sharesOutsideNamespace(spec.networkMode)) {
      report('SPEC_HOST_NAMESPACE', 'networkMode', `networkMode must not share another network namespace, got '${spec.networkMode}'`);
    } else if (!NETWORK_NAME.test(spec.networkMode)) {
      report('SPEC_INVALID', 'networkMode', `networkMode must be the sandbox's own network name, got '${spec.networkMode}'`);
    } else if (spec.networkMode !== own) {
      report(
        'SPEC_NETWORK_NOT_SEALED',
        'networkMode',
        `networkMode must be the sandbox's own network${own === undefined ? '' : ` ${own}`} (or left out), got '${spec.networkMode}': ` +
          'a shared network (or none) lets sandboxes reach each other and the outside, or serves nothing',
      );
    }
  }
  const privateModes: ReadonlyArray<readonly ['pidMode' | 'ipcMode' | 'utsMode', readonly string[]]> = [
    ['pidMode', ['']],
    ['ipcMode', ['', 'private', 'none', 'shareable']],
    ['utsMode', ['']],
  ];
  for (const [field, allowed] of privateModes) {
    const value = spec[field];
    if (value === undefined || allowed.includes(value)) continue;
    report('SPEC_HOST_NAMESPACE', field, `${field} must leave the container its own namespace (omit it), got '${value}'`);
  }
}

function checkLimits(spec: ContainerSpecShape, report: Report): void {
  const limits = spec.limits;
  if (limits === undefined) {
    report('SPEC_LIMITS_MISSING', 'limits', 'limits is required: set limits.memoryBytes, limits.pidsLimit, limits.nanoCpus, limits.logMaxBytes and limits.logFiles');
    return;
  }
  if (limits.memoryBytes === undefined) {
    report('SPEC_LIMITS_MISSING', 'limits.memoryBytes', 'limits.memoryBytes is required');
  } else if (limits.memoryBytes < MIN_MEMORY_BYTES) {
    report('SPEC_LIMITS_MISSING', 'limits.memoryBytes', `limits.memoryBytes must be at least ${MIN_MEMORY_BYTES} (6 MiB; 0 would mean unlimited), got ${limits.memoryBytes}`);
  }
  if (limits.pidsLimit === undefined) {
    report('SPEC_LIMITS_MISSING', 'limits.pidsLimit', 'limits.pidsLimit is required');
  } else if (limits.pidsLimit < 1) {
    report('SPEC_LIMITS_MISSING', 'limits.pidsLimit', `limits.pidsLimit must be at least 1 (0 or -1 would mean unlimited), got ${limits.pidsLimit}`);
  }
  if (limits.nanoCpus === undefined) {
    report('SPEC_LIMITS_MISSING', 'limits.nanoCpus', 'limits.nanoCpus is required (1e9 is one CPU)');
  } else if (limits.nanoCpus < MIN_NANO_CPUS) {
    report('SPEC_LIMITS_MISSING', 'limits.nanoCpus', `limits.nanoCpus must be at least ${MIN_NANO_CPUS} (0.01 CPU), got ${limits.nanoCpus}`);
  }
  checkLogLimits(limits, report);
}

/** A log without a size limit lets one sandbox fill the host's disk (DESIGN §12). */
function checkLogLimits(limits: NonNullable<ContainerSpecShape['limits']>, report: Report): void {
  const { logMaxBytes, logFiles } = limits;
  if (logFiles === undefined) {
    report('SPEC_LIMITS_MISSING', 'limits.logFiles', 'limits.logFiles is required (the files the log rotates through)');
  } else if (logFiles < 1 || logFiles > MAX_CONTAINER_LOG_FILES) {
    report('SPEC_LIMITS_MISSING', 'limits.logFiles', `limits.logFiles must be from 1 to ${MAX_CONTAINER_LOG_FILES}, got ${logFiles}`);
  }
  if (logMaxBytes === undefined) {
    report('SPEC_LIMITS_MISSING', 'limits.logMaxBytes', "limits.logMaxBytes is required (the bytes the container's log may take on disk)");
  } else if (logFiles !== undefined && logFiles >= 1 && logFileBytes({ maxBytes: logMaxBytes, files: logFiles }) < MIN_CONTAINER_LOG_FILE_BYTES) {
    report(
      'SPEC_LIMITS_MISSING',
      'limits.logMaxBytes',
      `limits.logMaxBytes must give each of its ${logFiles} file(s) at least ${MIN_CONTAINER_LOG_FILE_BYTES} bytes (64 KiB; 0 would mean unlimited), got ${logMaxBytes}`,
    );
  } else if (logMaxBytes < MIN_CONTAINER_LOG_FILE_BYTES) {
    report('SPEC_LIMITS_MISSING', 'limits.logMaxBytes', `limits.logMaxBytes must be at least ${MIN_CONTAINER_LOG_FILE_BYTES} (64 KiB; 0 would mean unlimited), got ${logMaxBytes}`);
  }
}

function checkRestartPolicy(spec: ContainerSpecShape, report: Report): void {
  const name = spec.restartPolicy?.name;
  if (name === undefined || name === '' || name === 'no') return;
  report('SPEC_RESTART_POLICY', 'restartPolicy.name', `restartPolicy.name must be 'no', got '${name}': the engine would restart the container outside the sandbox lifecycle`);
}

function checkLabels(spec: ContainerSpecShape, report: Report): void {
  const labels = spec.labels;
  const managedBy = labels[MANAGED_BY_LABEL];
  if (managedBy !== MANAGED_BY_VALUE) {
    report(
      'SPEC_LABELS_MISSING',
      `labels["${MANAGED_BY_LABEL}"]`,
      `labels["${MANAGED_BY_LABEL}"] must be '${MANAGED_BY_VALUE}', got ${managedBy === undefined ? 'nothing' : `'${managedBy}'`}`,
    );
  }
  // A warm pool's idle container waits under a pool slot id until a sandbox claims it.
  const ownerPattern = labels[POOL_LABEL] === undefined ? SANDBOX_ID_PATTERN : POOL_SLOT_ID_PATTERN;
  const required: ReadonlyArray<readonly [string, RegExp]> = [
    [SANDBOX_ID_LABEL, ownerPattern],
    [ADAPTER_LABEL, ADAPTER_NAME],
  ];
  for (const [label, pattern] of required) {
    const value = labels[label];
    if (value === undefined || !pattern.test(value)) {
      report('SPEC_LABELS_MISSING', `labels["${label}"]`, `labels["${label}"] must match ${pattern.source}, got ${value === undefined ? 'nothing' : `'${value}'`}`);
    }
  }
}

function describeValue(value: unknown): string {
  return typeof value === 'string' ? `'${value}'` : String(value);
}

function checkPorts(spec: ContainerSpecShape, report: Report): ValidatedPort[] {
  const ports: ValidatedPort[] = [];
  const containerPorts = new Set<string>();
  const hostPorts = new Set<string>();
  spec.ports.forEach((port, index) => {
    const at = `ports[${index}]`;
    let ok = true;
    const { containerPort, hostPort = 0, hostIp = LOOPBACK_HOST_IP, protocol } = port;
    if (typeof containerPort !== 'number' || !Number.isInteger(containerPort) || containerPort < 1 || containerPort > 65535) {
      report('SPEC_PORT_INVALID', `${at}.containerPort`, `${at}.containerPort must be an integer from 1 to 65535, got ${describeValue(containerPort)}`);
      ok = false;
    }
    if (typeof hostPort !== 'number' || !Number.isInteger(hostPort) || hostPort < 0 || hostPort > 65535) {
      report('SPEC_PORT_INVALID', `${at}.hostPort`, `${at}.hostPort must be an integer from 0 (engine-assigned) to 65535, got ${describeValue(hostPort)}`);
      ok = false;
    }
    if (hostIp !== LOOPBACK_HOST_IP) {
      report('SPEC_PORT_NOT_LOOPBACK', `${at}.hostIp`, `${at}.hostIp must be ${LOOPBACK_HOST_IP}, got '${hostIp}'`);
      ok = false;
    }
    if (!ok || typeof containerPort !== 'number' || typeof hostPort !== 'number') return;
    const containerKey = `${containerPort}/${protocol}`;
    if (containerPorts.has(containerKey)) {
      report('SPEC_PORT_INVALID', `${at}.containerPort`, `${at}.containerPort ${containerKey} is published twice`);
      return;
    }
    const hostKey = `${hostPort}/${protocol}`;
    if (hostPort !== 0 && hostPorts.has(hostKey)) {
      report('SPEC_PORT_INVALID', `${at}.hostPort`, `${at}.hostPort ${hostKey} is used twice`);
      return;
    }
    containerPorts.add(containerKey);
    hostPorts.add(hostKey);
    ports.push(Object.freeze({ containerPort, hostPort, hostIp: LOOPBACK_HOST_IP, protocol }));
  });
  return ports;
}

function checkBinds(spec: ContainerSpecShape, policy: SpecPolicy, report: Report): ValidatedBind[] {
  const binds: ValidatedBind[] = [];
  const targets = new Set<string>();
  spec.binds.forEach((text, index) => {
    const at = `binds[${index}]`;
    const parsed = parseBind(text);
    if (!parsed.ok) {
      report('SPEC_INVALID', at, `${at}: '${text}' ${parsed.reason}`);
      return;
    }
    const { source, target, mode } = parsed.bind;
    const verdict = checkBindSource(source, policy);
    if (!verdict.ok) {
      report('SPEC_BIND_FORBIDDEN', at, `${at}: ${verdict.reason}`);
      return;
    }
    let hostPath = verdict.path.normalized;
    if (verdict.path.style === 'posix' && policy.resolveHostPath !== undefined) {
      const resolved = classifyHostPath(policy.resolveHostPath(hostPath)).normalized;
      if (resolved !== hostPath) {
        const again = checkBindSource(resolved, policy);
        if (!again.ok) {
          report('SPEC_BIND_FORBIDDEN', at, `${at}: source ${source} resolves to ${resolved}: ${again.reason}`);
          return;
        }
        hostPath = resolved;
      }
    }
    if (mode !== undefined && !BIND_MODES.has(mode)) {
      report('SPEC_BIND_FORBIDDEN', at, `${at}: mode '${mode}' is not allowed (only ro or rw: relabelling and mount propagation reach the host)`);
      return;
    }
    if (!isAbsoluteContainerPath(target)) {
      report('SPEC_INVALID', at, `${at}: target ${target} must be an absolute path in the container`);
      return;
    }
    if (targets.has(target)) {
      report('SPEC_INVALID', at, `${at}: target ${target} is mounted twice`);
      return;
    }
    targets.add(target);
    binds.push(Object.freeze({ source: hostPath, target, readOnly: mode === 'ro' }));
  });
  return binds;
}

function freezeRecord(record: Readonly<Record<string, string>> | undefined): Readonly<Record<string, string>> {
  return Object.freeze({ ...(record ?? {}) });
}

function freezeList(list: readonly string[] | undefined): readonly string[] | undefined {
  return list === undefined ? undefined : Object.freeze([...list]);
}

/**
 * Checks a container spec against every rule of docs/security.md, without any I/O
 * beyond `policy.resolveHostPath`. Returns the frozen spec the engine may see, or
 * throws {@link SpecRefusedError} whose code is the first broken rule's and whose
 * `violations` list all of them.
 */
export function validateContainerSpec(input: unknown, policy: SpecPolicy = {}): ValidatedContainerSpec {
  const parsed = containerSpecSchema.safeParse(input);
  if (!parsed.success) {
    const violations = shapeViolations(parsed.error.issues);
    const [first, ...rest] = violations;
    throw new SpecRefusedError(first === undefined ? [{ code: 'SPEC_INVALID', field: '(spec)', message: 'spec is invalid' }] : [first, ...rest]);
  }
  const spec = parsed.data;
  const violations: SpecViolation[] = [];
  const report: Report = (code, field, message) => violations.push({ code, field, message });

  checkImage(spec, policy, report);
  checkPrivileges(spec, report);
  checkNamespaces(spec, report);
  checkLimits(spec, report);
  checkRestartPolicy(spec, report);
  checkLabels(spec, report);
  const ports = checkPorts(spec, report);
  const binds = checkBinds(spec, policy, report);

  const [first, ...rest] = violations;
  if (first !== undefined) throw new SpecRefusedError([first, ...rest]);

  return Object.freeze({
    name: spec.name,
    image: spec.image,
    command: freezeList(spec.command),
    entrypoint: freezeList(spec.entrypoint),
    env: freezeRecord(spec.env),
    labels: freezeRecord(spec.labels),
    user: spec.user,
    workingDir: spec.workingDir,
    ports: Object.freeze(ports),
    binds: Object.freeze(binds),
    limits: Object.freeze({
      memoryBytes: spec.limits?.memoryBytes ?? 0,
      pidsLimit: spec.limits?.pidsLimit ?? 0,
      nanoCpus: spec.limits?.nanoCpus ?? 0,
      logMaxBytes: spec.limits?.logMaxBytes ?? 0,
      logFiles: spec.limits?.logFiles ?? 0,
    }),
    readonlyRootfs: spec.readonlyRootfs ?? false,
    capDrop: Object.freeze([...(spec.capDrop ?? [DROP_ALL_CAPABILITIES])]),
    networkMode: ownNetworkName(spec.labels) ?? '',
  });
}
