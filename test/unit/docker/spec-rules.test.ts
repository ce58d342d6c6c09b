import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { loadConfig } from '../../../src/config/config';
import { ADAPTER_LABEL, MANAGED_BY_LABEL, SANDBOX_ID_LABEL, sandboxContainerLabels } from '../../../src/domain/docker-labels';
import { ERROR_CODES } from '../../../src/domain/error-codes';
import { isSandboxPlaneError } from '../../../src/domain/errors';
import { sandboxIdSchema } from '../../../src/domain/sandbox-request';
import { FORBIDDEN_POSIX_PATHS, FORBIDDEN_WINDOWS_PATHS, SpecRefusedError, validateContainerSpec, type ContainerSpecInput, type SpecRefusalCode } from '../../../src/docker';
import { MIB, PINNED_IMAGE_ID, TEST_LOG_LIMITS, validSpec } from '../../docker/docker-test-support';

function refusal(spec: unknown, policy = {}): SpecRefusedError {
  try {
    validateContainerSpec(spec, policy);
  } catch (err) {
    assert.ok(err instanceof SpecRefusedError, `expected a SpecRefusedError, got ${String(err)}`);
    return err;
  }
  assert.fail('the spec was accepted');
}

function assertRefused(spec: unknown, code: SpecRefusalCode, field: string, message: string | RegExp): void {
  const err = refusal(spec);
  assert.equal(err.code, code);
  assert.equal(err.field, field);
  if (typeof message === 'string') assert.equal(err.message, message);
  else assert.match(err.message, message);
  assert.equal(err.retryable, false);
  assert.equal(ERROR_CODES[err.code].category, 'refused');
  assert.ok(isSandboxPlaneError(JSON.parse(JSON.stringify({ ...err.toJSON() }))), 'survives serialisation as a taxonomy error');
}

describe('validateContainerSpec accepts', () => {
  test('a complete spec, filled in and frozen', () => {
    const spec = validateContainerSpec(validSpec({ ports: [{ containerPort: 8080 }, { containerPort: 9000, hostPort: 19000, protocol: 'udp' }], binds: ['/srv/x/../data/:/data:ro'] }));
    assert.deepEqual(spec.ports, [
      { containerPort: 8080, hostPort: 0, hostIp: '127.0.0.1', protocol: 'tcp' },
      { containerPort: 9000, hostPort: 19000, hostIp: '127.0.0.1', protocol: 'udp' },
    ]);
    assert.deepEqual(spec.binds, [{ source: '/srv/data', target: '/data', readOnly: true }]);
    assert.equal(spec.networkMode, 'sandboxplane-net-sb-test', "the sandbox's own network");
    assert.deepEqual(spec.capDrop, ['ALL'], 'every capability dropped when capDrop is left out');
    assert.equal(spec.limits.nanoCpus, 500_000_000);
    assert.ok(Object.isFrozen(spec) && Object.isFrozen(spec.ports) && Object.isFrozen(spec.labels) && Object.isFrozen(spec.limits));
  });

  test('an image by digest, by id, or on the allowlist', () => {
    const digest = `registry.local:5000/floci/floci:1.2@sha256:${'b'.repeat(64)}`;
    for (const image of [digest, PINNED_IMAGE_ID, 'c'.repeat(64)]) validateContainerSpec(validSpec({ image }));
    validateContainerSpec(validSpec({ image: 'local/sandboxplane-testhttp:1' }), { imageAllowlist: ['local/sandboxplane-testhttp:1'] });
  });

  test('judges a bind source after resolving links when a resolver is given', () => {
    const policy = { resolveHostPath: (path: string) => (path === '/srv/link' ? '/etc' : path) };
    const err = refusal(validSpec({ binds: ['/srv/link:/x'] }), policy);
    assert.equal(err.code, 'SPEC_BIND_FORBIDDEN');
    assert.equal(err.message, 'binds[0]: source /srv/link resolves to /etc: source /etc is the forbidden path /etc');
  });
});

describe('validateContainerSpec refuses', () => {
  test('SPEC_INVALID: bad shape, naming every bad key at once', () => {
    const err = refusal({ ...validSpec(), HostConfig: { Privileged: true }, command: 'sh -c x', limits: { memoryBytes: '1g', pidsLimit: 5 } });
    assert.equal(err.code, 'SPEC_INVALID');
    assert.deepEqual(err.violations.map((violation) => violation.field).sort(), ['(spec)', 'command', 'limits.memoryBytes']);
    assert.match(err.message, /HostConfig/);
    assertRefused(null, 'SPEC_INVALID', '(spec)', /Expected object/);
  });

  test('SPEC_IMAGE_NOT_PINNED', () => {
    assertRefused(
      validSpec({ image: 'floci/floci:latest' }),
      'SPEC_IMAGE_NOT_PINNED',
      'image',
      'image floci/floci:latest is not pinned (name@sha256:<digest> or sha256:<image id>) and not on the image allowlist',
    );
    assertRefused(validSpec({ image: `floci@sha256:${'a'.repeat(63)}` }), 'SPEC_IMAGE_NOT_PINNED', 'image', /is not pinned/);
  });

  test('SPEC_PRIVILEGED', () => {
    assertRefused(validSpec({ privileged: true }), 'SPEC_PRIVILEGED', 'privileged', 'privileged must be false or absent, got true');
  });

  test('SPEC_CAPABILITY_ADDED', () => {
    assertRefused(validSpec({ capAdd: ['NET_ADMIN', 'SYS_ADMIN'] }), 'SPEC_CAPABILITY_ADDED', 'capAdd', 'capAdd must be empty, got NET_ADMIN, SYS_ADMIN');
  });

  test('SPEC_HOST_NAMESPACE for network, PID, IPC and UTS', () => {
    assertRefused(validSpec({ networkMode: 'host' }), 'SPEC_HOST_NAMESPACE', 'networkMode', "networkMode must not share another network namespace, got 'host'");
    assertRefused(validSpec({ networkMode: 'container:abc' }), 'SPEC_HOST_NAMESPACE', 'networkMode', /container:abc/);
    assertRefused(validSpec({ pidMode: 'host' }), 'SPEC_HOST_NAMESPACE', 'pidMode', "pidMode must leave the container its own namespace (omit it), got 'host'");
    assertRefused(validSpec({ ipcMode: 'host' }), 'SPEC_HOST_NAMESPACE', 'ipcMode', /ipcMode .* got 'host'/);
    assertRefused(validSpec({ utsMode: 'host' }), 'SPEC_HOST_NAMESPACE', 'utsMode', /utsMode .* got 'host'/);
  });

  test('SPEC_DEVICES', () => {
    assertRefused(validSpec({ devices: [{ PathOnHost: '/dev/kvm' }] }), 'SPEC_DEVICES', 'devices', 'devices must be empty, got 1 device(s)');
  });

  test('SPEC_LIMITS_MISSING', () => {
    assertRefused(
      validSpec({ limits: undefined }),
      'SPEC_LIMITS_MISSING',
      'limits',
      'limits is required: set limits.memoryBytes, limits.pidsLimit, limits.nanoCpus, limits.logMaxBytes and limits.logFiles',
    );
    assertRefused(validSpec({ limits: { pidsLimit: 10, nanoCpus: 1e9, ...TEST_LOG_LIMITS } }), 'SPEC_LIMITS_MISSING', 'limits.memoryBytes', 'limits.memoryBytes is required');
    assertRefused(validSpec({ limits: { memoryBytes: 0, pidsLimit: 10, ...TEST_LOG_LIMITS } }), 'SPEC_LIMITS_MISSING', 'limits.memoryBytes', /at least 6291456 .* got 0/);
    assertRefused(validSpec({ limits: { memoryBytes: 64 * MIB, pidsLimit: -1, nanoCpus: 1e9, ...TEST_LOG_LIMITS } }), 'SPEC_LIMITS_MISSING', 'limits.pidsLimit', /got -1/);
    assertRefused(
      validSpec({ limits: { memoryBytes: 64 * MIB, pidsLimit: 10, ...TEST_LOG_LIMITS } }),
      'SPEC_LIMITS_MISSING',
      'limits.nanoCpus',
      'limits.nanoCpus is required (1e9 is one CPU)',
    );
    assertRefused(validSpec({ limits: { memoryBytes: 64 * MIB, pidsLimit: 10, nanoCpus: 0, ...TEST_LOG_LIMITS } }), 'SPEC_LIMITS_MISSING', 'limits.nanoCpus', /at least 10000000 .* got 0/);
  });

  test('SPEC_LIMITS_MISSING for the log: without a size and a file count, or unbounded, it is refused', () => {
    const limits = { memoryBytes: 64 * MIB, pidsLimit: 10, nanoCpus: 1e9 };
    assertRefused(
      validSpec({ limits: { ...limits, logFiles: 2 } }),
      'SPEC_LIMITS_MISSING',
      'limits.logMaxBytes',
      "limits.logMaxBytes is required (the bytes the container's log may take on disk)",
    );
    assertRefused(validSpec({ limits: { ...limits, logMaxBytes: 10 * MIB } }), 'SPEC_LIMITS_MISSING', 'limits.logFiles', 'limits.logFiles is required (the files the log rotates through)');
    assertRefused(validSpec({ limits: { ...limits, logMaxBytes: 0, logFiles: 2 } }), 'SPEC_LIMITS_MISSING', 'limits.logMaxBytes', /at least 65536 bytes .*0 would mean unlimited.*got 0/);
    assertRefused(validSpec({ limits: { ...limits, logMaxBytes: 100 * 1024, logFiles: 2 } }), 'SPEC_LIMITS_MISSING', 'limits.logMaxBytes', /each of its 2 file\(s\) at least 65536/);
    assertRefused(validSpec({ limits: { ...limits, logMaxBytes: 10 * MIB, logFiles: 0 } }), 'SPEC_LIMITS_MISSING', 'limits.logFiles', 'limits.logFiles must be from 1 to 20, got 0');
    assertRefused(validSpec({ limits: { ...limits, logMaxBytes: 10 * MIB, logFiles: 21 } }), 'SPEC_LIMITS_MISSING', 'limits.logFiles', 'limits.logFiles must be from 1 to 20, got 21');
    const spec = validateContainerSpec(validSpec({ limits: { ...limits, logMaxBytes: 10 * MIB, logFiles: 2 } }));
    assert.deepEqual([spec.limits.logMaxBytes, spec.limits.logFiles], [10 * MIB, 2]);
  });

  test("SPEC_NETWORK_NOT_SEALED: the default bridge, no network, another sandbox's network, any shared name", () => {
    for (const networkMode of ['bridge', 'none', 'sandboxplane-net-other', 'shared-net']) {
      assertRefused(validSpec({ networkMode }), 'SPEC_NETWORK_NOT_SEALED', 'networkMode', new RegExp(`must be the sandbox's own network sandboxplane-net-sb-test .*got '${networkMode}'`));
    }
    assert.equal(validateContainerSpec(validSpec({ networkMode: 'sandboxplane-net-sb-test' })).networkMode, 'sandboxplane-net-sb-test');
    const planed = validSpec({ labels: { ...validSpec().labels, 'io.sandboxplane.plane': 'plane-a' } });
    assert.match(validateContainerSpec(planed).networkMode, /^sandboxplane-net-[0-9a-f]{8}-sb-test$/, 'two planes on one engine never share a network name');
  });

  test('SPEC_CAPABILITIES_NOT_DROPPED: capDrop that keeps any capability', () => {
    assertRefused(validSpec({ capDrop: [] }), 'SPEC_CAPABILITIES_NOT_DROPPED', 'capDrop', "capDrop must include 'ALL' (or be left out, which drops all), got nothing");
    assertRefused(validSpec({ capDrop: ['NET_RAW', 'MKNOD'] }), 'SPEC_CAPABILITIES_NOT_DROPPED', 'capDrop', /got NET_RAW, MKNOD/);
    assert.deepEqual(validateContainerSpec(validSpec({ capDrop: ['all'] })).capDrop, ['all']);
  });

  test('SPEC_RESTART_POLICY', () => {
    for (const name of ['always', 'unless-stopped', 'on-failure']) {
      assertRefused(validSpec({ restartPolicy: { name } }), 'SPEC_RESTART_POLICY', 'restartPolicy.name', new RegExp(`must be 'no', got '${name}'`));
    }
    validateContainerSpec(validSpec({ restartPolicy: { name: 'no' } }));
  });

  test('SPEC_LABELS_MISSING', () => {
    const without = (label: string) => {
      const labels: Record<string, string> = { ...validSpec().labels };
      delete labels[label];
      return validSpec({ labels });
    };
    assertRefused(without(MANAGED_BY_LABEL), 'SPEC_LABELS_MISSING', `labels["${MANAGED_BY_LABEL}"]`, /must be 'cloud-sandbox-plane', got nothing/);
    assertRefused(without(SANDBOX_ID_LABEL), 'SPEC_LABELS_MISSING', `labels["${SANDBOX_ID_LABEL}"]`, /got nothing/);
    assertRefused(without(ADAPTER_LABEL), 'SPEC_LABELS_MISSING', `labels["${ADAPTER_LABEL}"]`, /got nothing/);
    assertRefused(validSpec({ labels: {} }), 'SPEC_LABELS_MISSING', `labels["${MANAGED_BY_LABEL}"]`, /and 2 more/);
    for (const id of ['Sandbox-1', 'sb_1', 'sb.1', 'sb:1', '-sb', 'a'.repeat(64)]) {
      assertRefused(
        validSpec({ labels: { ...sandboxContainerLabels(id, 'moto') } }),
        'SPEC_LABELS_MISSING',
        `labels["${SANDBOX_ID_LABEL}"]`,
        `labels["${SANDBOX_ID_LABEL}"] must match ^[a-z0-9][a-z0-9-]{0,62}$, got '${id}'`,
      );
    }
  });

  test('SPEC_PORT_INVALID', () => {
    assertRefused(
      validSpec({ ports: [{ containerPort: '8080/tcp' }] }),
      'SPEC_PORT_INVALID',
      'ports[0].containerPort',
      "ports[0].containerPort must be an integer from 1 to 65535, got '8080/tcp'",
    );
    assertRefused(validSpec({ ports: [{ containerPort: 0 }] }), 'SPEC_PORT_INVALID', 'ports[0].containerPort', /got 0/);
    assertRefused(validSpec({ ports: [{ containerPort: 80, hostPort: 70000 }] }), 'SPEC_PORT_INVALID', 'ports[0].hostPort', /got 70000/);
    assertRefused(validSpec({ ports: [{ containerPort: 80, hostPort: '8080' }] }), 'SPEC_PORT_INVALID', 'ports[0].hostPort', /got '8080'/);
    assertRefused(validSpec({ ports: [{ containerPort: 80 }, { containerPort: 80 }] }), 'SPEC_PORT_INVALID', 'ports[1].containerPort', 'ports[1].containerPort 80/tcp is published twice');
  });

  test('SPEC_PORT_NOT_LOOPBACK', () => {
    for (const hostIp of ['0.0.0.0', '', '::', '192.168.1.10', 'localhost', '127.0.0.2']) {
      assertRefused(validSpec({ ports: [{ containerPort: 8080, hostIp }] }), 'SPEC_PORT_NOT_LOOPBACK', 'ports[0].hostIp', `ports[0].hostIp must be 127.0.0.1, got '${hostIp}'`);
    }
  });

  test('SPEC_BIND_FORBIDDEN, naming the bind and the path', () => {
    assertRefused(
      validSpec({ binds: ['/srv/ok:/ok', 'C:\\Users\\me:/workspace'] }),
      'SPEC_BIND_FORBIDDEN',
      'binds[1]',
      'binds[1]: source C:\\Users\\me is inside the forbidden path C:\\Users',
    );
    assertRefused(
      validSpec({ binds: ['/var/run/docker.sock:/var/run/docker.sock'] }),
      'SPEC_BIND_FORBIDDEN',
      'binds[0]',
      'binds[0]: source /var/run/docker.sock is the forbidden path /var/run/docker.sock',
    );
    assertRefused(validSpec({ binds: ['\\\\.\\pipe\\docker_engine:\\\\.\\pipe\\docker_engine'] }), 'SPEC_BIND_FORBIDDEN', 'binds[0]', /Docker engine pipe/);
    assertRefused(validSpec({ binds: ['/:/host'] }), 'SPEC_BIND_FORBIDDEN', 'binds[0]', 'binds[0]: source / is the root of the host file system');
    assertRefused(validSpec({ binds: ['myvolume:/data'] }), 'SPEC_BIND_FORBIDDEN', 'binds[0]', /not an absolute host path/);
    assertRefused(validSpec({ binds: ['/srv/data:/data:rshared'] }), 'SPEC_BIND_FORBIDDEN', 'binds[0]', /mode 'rshared' is not allowed/);
    assertRefused(validSpec({ binds: ['/srv/data'] }), 'SPEC_INVALID', 'binds[0]', /has no target/);
  });

  test('the socket of the engine in use, given as an extra forbidden path', () => {
    const err = refusal(validSpec({ binds: ['/run/sandboxplane-docker:/x'] }), { extraForbiddenPaths: ['/run/sandboxplane-docker/docker.sock'] });
    assert.equal(err.code, 'SPEC_BIND_FORBIDDEN');
  });
});

const forbiddenSource = fc.oneof(
  fc.constantFrom(...FORBIDDEN_POSIX_PATHS, ...FORBIDDEN_WINDOWS_PATHS, '/', 'C:\\', '\\\\.\\pipe\\docker_engine', '//./pipe/docker_engine'),
  fc.tuple(fc.constantFrom(...FORBIDDEN_POSIX_PATHS.filter((path) => !path.endsWith('.sock'))), fc.stringMatching(/^[a-z0-9_-]{1,8}$/)).map(([root, child]) => `${root}/${child}/`),
  fc.tuple(fc.constantFrom(...FORBIDDEN_WINDOWS_PATHS), fc.stringMatching(/^[a-z0-9_-]{1,8}$/)).map(([root, child]) => `${root.toLowerCase()}/${child}`),
);
const nonLoopbackIp = fc.oneof(fc.ipV4(), fc.ipV6(), fc.constantFrom('', '0.0.0.0', 'localhost')).filter((ip) => ip !== '127.0.0.1');
const capability = fc.constantFrom('SYS_ADMIN', 'NET_ADMIN', 'NET_RAW', 'SYS_PTRACE', 'ALL');

type Danger = { code: SpecRefusalCode; apply: (spec: ContainerSpecInput) => ContainerSpecInput };
const danger: fc.Arbitrary<Danger> = fc.oneof(
  forbiddenSource.map((source) => ({ code: 'SPEC_BIND_FORBIDDEN' as const, apply: (spec: ContainerSpecInput) => ({ ...spec, binds: [...(spec.binds ?? []), `${source}:/mnt/x`] }) })),
  fc.constant({ code: 'SPEC_PRIVILEGED' as const, apply: (spec: ContainerSpecInput) => ({ ...spec, privileged: true }) }),
  fc.array(capability, { minLength: 1, maxLength: 3 }).map((caps) => ({ code: 'SPEC_CAPABILITY_ADDED' as const, apply: (spec: ContainerSpecInput) => ({ ...spec, capAdd: caps }) })),
  nonLoopbackIp.map((hostIp) => ({
    code: 'SPEC_PORT_NOT_LOOPBACK' as const,
    apply: (spec: ContainerSpecInput) => ({ ...spec, ports: [...(spec.ports ?? []), { containerPort: 9999, hostIp }] }),
  })),
);

/** Specs that pass on their own: varied ports, binds and limits. */
const harmlessSpec: fc.Arbitrary<ContainerSpecInput> = fc
  .record({
    ports: fc.uniqueArray(fc.integer({ min: 1, max: 9000 }), { maxLength: 3 }),
    binds: fc.uniqueArray(fc.stringMatching(/^[a-z0-9_-]{1,8}$/), { maxLength: 3 }),
    memoryBytes: fc.integer({ min: 6 * MIB, max: 4096 * MIB }),
    pidsLimit: fc.integer({ min: 1, max: 4096 }),
  })
  .map(({ ports, binds, memoryBytes, pidsLimit }) =>
    validSpec({
      ports: ports.map((containerPort) => ({ containerPort })),
      binds: binds.map((name) => `/srv/sandboxes/${name}:/mnt/${name}:ro`),
      limits: { memoryBytes, pidsLimit, nanoCpus: 1e9, ...TEST_LOG_LIMITS },
    }),
  );

/** Which spec-rule codes a spec breaks; none when it is accepted. */
function refusalCodes(spec: ContainerSpecInput): Set<SpecRefusalCode> {
  try {
    validateContainerSpec(spec);
    return new Set();
  } catch (err) {
    assert.ok(err instanceof SpecRefusedError, String(err));
    return new Set(err.violations.map((violation) => violation.code));
  }
}

function configAccepts(env: Record<string, string>): boolean {
  try {
    loadConfig(env);
    return true;
  } catch {
    return false;
  }
}

const hex = (length: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${length}}$`));
const imageName = fc.oneof(
  fc.constantFrom('floci/floci', 'registry.local:5000/floci/floci', 'localhost:5000/a__b', 'floci/floci:1.2', 'ghcr.io/x/y-z'),
  fc.stringMatching(/^[A-Za-z0-9._:/-]{1,24}$/),
);
const image = fc.oneof(
  fc.tuple(fc.constantFrom('sha256:', ''), fc.oneof(hex(64), hex(63))).map(([prefix, digits]) => `${prefix}${digits}`),
  fc.tuple(imageName, fc.oneof(hex(64), hex(63), fc.constant('A'.repeat(64)))).map(([name, digits]) => `${name}@sha256:${digits}`),
  imageName,
);

describe('the broker and the rest of the plane judge by the same rules', () => {
  test('a sandbox id is a valid container label exactly when the request schema takes it', () => {
    const id = fc.oneof(fc.stringMatching(/^[a-z0-9-]{1,64}$/), fc.stringMatching(/^[A-Za-z0-9_.:-]{0,70}$/));
    fc.assert(
      fc.property(id, (candidate) => {
        const labelled = !refusalCodes(validSpec({ labels: { ...sandboxContainerLabels(candidate, 'moto') } })).has('SPEC_LABELS_MISSING');
        assert.equal(labelled, sandboxIdSchema.safeParse(candidate).success, `'${candidate}'`);
      }),
      { numRuns: 500 },
    );
  });

  test('an image the configuration takes as pinned is one the spec rules run, and the other way round', () => {
    fc.assert(
      fc.property(image, (candidate) => {
        const runs = !refusalCodes(validSpec({ image: candidate })).has('SPEC_IMAGE_NOT_PINNED');
        assert.equal(configAccepts({ SANDBOXPLANE_MOTO_IMAGE: candidate }), runs, `'${candidate}'`);
        if (configAccepts({ SANDBOXPLANE_FLOCI_IMAGE: candidate })) assert.ok(runs, `'${candidate}' is pinned by digest`);
      }),
      { numRuns: 500 },
    );
  });
});

describe('spec properties', () => {
  test('generated harmless specs pass', () => {
    fc.assert(
      fc.property(harmlessSpec, (spec) => {
        validateContainerSpec(spec);
      }),
      { numRuns: 200 },
    );
  });

  test('no spec with a forbidden bind, privilege, capability or non-loopback port passes', () => {
    fc.assert(
      fc.property(harmlessSpec, fc.array(danger, { minLength: 1, maxLength: 4 }), (base, dangers) => {
        const spec = dangers.reduce((acc, item) => item.apply(acc), base);
        const err = refusal(spec);
        const codes = new Set(err.violations.map((violation) => violation.code));
        for (const item of dangers) assert.ok(codes.has(item.code), `${item.code} missing from ${[...codes].join(', ')}`);
      }),
      { numRuns: 500 },
    );
  });
});
