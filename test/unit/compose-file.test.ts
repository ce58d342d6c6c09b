import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { CONFIG_ENV_KEYS } from '../../src/config/config';
import { FEATURE_FLAG_NAMES, flagEnvName } from '../../src/domain/feature-flags';
import { REPO_ROOT } from '../helpers/cli';

// The invariants of docker-compose.yml, .env.example and the Dockerfile (issue 7, part 3).
// The images cannot be pulled here, so the files are checked as text and structure.

interface LongVolume {
  type?: string;
  source?: string;
  target?: string;
}
interface LongPort {
  host_ip?: string;
  published?: string | number;
  target?: string | number;
}
interface Service {
  image?: string;
  build?: string | { context?: string; dockerfile?: string };
  volumes?: (string | LongVolume)[];
  ports?: (string | number | LongPort)[];
  healthcheck?: { test?: string | string[]; disable?: boolean };
  depends_on?: string[] | Record<string, { condition?: string }>;
  environment?: Record<string, string | number | boolean | null> | string[];
  network_mode?: string;
}
interface ComposeFile {
  services: Record<string, Service>;
}

const compose = parse(fs.readFileSync(path.join(REPO_ROOT, 'docker-compose.yml'), 'utf8')) as ComposeFile;
const composeText = fs.readFileSync(path.join(REPO_ROOT, 'docker-compose.yml'), 'utf8');
const envExamplePath = path.join(REPO_ROOT, '.env.example');
const envExampleText = fs.existsSync(envExamplePath) ? fs.readFileSync(envExamplePath, 'utf8') : '';

/** `KEY=value` lines of .env.example; documented-only lines (`# KEY=value`) are `documented`. */
function envExample(): { set: Map<string, string>; documented: Set<string> } {
  const set = new Map<string, string>();
  const documented = new Set<string>();
  for (const line of envExampleText.split('\n')) {
    const active = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (active?.[1] !== undefined) {
      set.set(active[1], (active[2] ?? '').trim());
      documented.add(active[1]);
      continue;
    }
    const commented = /^#\s*([A-Z][A-Z0-9_]*)=/.exec(line.trim());
    if (commented?.[1] !== undefined) documented.add(commented[1]);
  }
  return { set, documented };
}

const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}/g;

/** Resolves `${VAR:-default}` and `${VAR-default}` to their defaults; `${VAR}` and `${VAR:?…}` stay unresolved. */
function resolveDefaults(text: string): { value: string; unresolved: string[]; variables: string[] } {
  const unresolved: string[] = [];
  const variables: string[] = [];
  const value = text.replace(VARIABLE, (whole, name: string, operator: string | undefined, fallback: string | undefined) => {
    variables.push(name);
    if (operator === ':-' || operator === '-') return fallback ?? '';
    unresolved.push(name);
    return whole;
  });
  return { value, unresolved, variables };
}

function services(): [string, Service][] {
  return Object.entries(compose.services);
}

/** A mount's source and target, from the short (`src:dst[:mode]`) or long syntax. */
function mounts(service: Service): { source: string; target: string }[] {
  return (service.volumes ?? []).map((volume) => {
    if (typeof volume === 'string') {
      const [source = '', target = ''] = resolveDefaults(volume).value.split(':');
      return { source, target };
    }
    return { source: resolveDefaults(volume.source ?? '').value, target: resolveDefaults(volume.target ?? '').value };
  });
}

/** The Docker socket, or a directory holding it, or the host's root. */
function reachesDockerSocket(mountPath: string): boolean {
  const normalised = mountPath.replace(/\/+$/, '') || '/';
  return /docker\.sock$/.test(normalised) || ['/', '/var', '/run', '/var/run'].includes(normalised);
}

/** The host address a `ports` entry publishes on; `undefined` means every interface. */
function hostIpOf(entry: string | number | LongPort): { hostIp: string | undefined; raw: string; variables: string[] } {
  if (typeof entry === 'object') {
    const resolved = resolveDefaults(String(entry.host_ip ?? ''));
    return { hostIp: resolved.value === '' ? undefined : resolved.value, raw: JSON.stringify(entry), variables: resolved.variables };
  }
  const raw = String(entry);
  const resolved = resolveDefaults(raw);
  const parts = resolved.value.replace(/\/(tcp|udp|sctp)$/, '').split(':');
  // ip:host:container has three parts; host:container and container alone publish on every interface.
  return { hostIp: parts.length === 3 ? parts[0] : undefined, raw, variables: resolved.variables };
}

function imageIsPinned(image: string): boolean {
  if (/@sha256:[0-9a-f]{64}$/.test(image)) return true;
  const tag = /:([^/:@]+)$/.exec(image)?.[1];
  return tag !== undefined && tag !== 'latest' && /\d/.test(tag);
}

describe('docker-compose.yml', () => {
  test('has PostgreSQL, the Temporal server, the Temporal UI and the worker', () => {
    for (const name of ['postgresql', 'temporal', 'temporal-ui', 'worker']) assert.ok(compose.services[name], `service ${name}`);
  });

  test('pins every image it does not build (a tag with a version, or a digest; never latest)', () => {
    for (const [name, service] of services()) {
      if (service.build !== undefined) continue;
      assert.ok(service.image, `${name} has an image`);
      assert.equal(resolveDefaults(service.image).variables.length, 0, `${name}: the image is written out, not taken from a variable`);
      assert.ok(imageIsPinned(service.image), `${name}: ${service.image} is not pinned`);
    }
    assert.match(compose.services.temporal?.image ?? '', /^temporalio\/(auto-setup|server):1\.29\.\d+$/, 'the server version the CLI v1.5.1 embeds');
  });

  test('mounts the Docker socket into the worker and into no other service', () => {
    for (const [name, service] of services()) {
      const socketMounts = mounts(service).filter((mount) => reachesDockerSocket(mount.source) || reachesDockerSocket(mount.target));
      if (name === 'worker') {
        assert.deepEqual(socketMounts.map((mount) => mount.target), ['/var/run/docker.sock'], 'the worker mounts the socket itself, nothing above it');
      } else {
        assert.deepEqual(socketMounts, [], `${name} must not reach the Docker socket`);
      }
    }
    const naming = services()
      .filter(([, service]) => JSON.stringify(service).includes('docker.sock'))
      .map(([name]) => name);
    assert.deepEqual(naming, ['worker'], 'no other service even names the socket');
  });

  test('publishes every port on 127.0.0.1 only, also with the defaults .env.example sets', () => {
    const { set } = envExample();
    let published = 0;
    for (const [name, service] of services()) {
      for (const entry of service.ports ?? []) {
        published += 1;
        const { hostIp, raw, variables } = hostIpOf(entry);
        assert.equal(hostIp, '127.0.0.1', `${name}: ports entry ${raw} must publish on 127.0.0.1`);
        for (const variable of variables) {
          const fallback = new RegExp(`\\$\\{${variable}:?-([^}]*)\\}`).exec(raw)?.[1];
          assert.notEqual(fallback, undefined, `${name}: ${variable} in ${raw} needs a default`);
          assert.equal(set.get(variable), fallback, `.env.example must set ${variable}=${fallback}, the default ${raw} is tested with`);
        }
      }
    }
    assert.ok(published >= 2, 'the Temporal frontend and the UI are published');
    assert.deepEqual(compose.services.worker?.ports ?? [], [], 'the worker listens on no port');
  });

  test('gives every service a healthcheck', () => {
    for (const [name, service] of services()) {
      assert.ok(service.healthcheck, `${name} has a healthcheck`);
      assert.notEqual(service.healthcheck.disable, true, `${name}: healthcheck disabled`);
      const probe = [service.healthcheck.test ?? []].flat();
      assert.ok(probe.length > 0 && probe[0] !== 'NONE', `${name}: healthcheck without a test`);
    }
  });

  test('starts a service only after what it needs is healthy', () => {
    const needs: Record<string, string> = { temporal: 'postgresql', 'temporal-ui': 'temporal', worker: 'temporal' };
    for (const [name, service] of services()) {
      const dependsOn = service.depends_on ?? {};
      assert.ok(!Array.isArray(dependsOn), `${name}: depends_on in the long form, with a condition`);
      for (const [dependency, { condition }] of Object.entries(dependsOn)) {
        assert.ok(
          condition === 'service_healthy' || condition === 'service_completed_successfully',
          `${name} → ${dependency}: condition ${String(condition)}`,
        );
      }
      if (needs[name] !== undefined) assert.equal((dependsOn as Record<string, { condition?: string }>)[needs[name]]?.condition, 'service_healthy', `${name} waits for ${needs[name]}`);
    }
  });

  test('builds the worker from a Dockerfile in this repository and runs `sandboxctl worker` on the host network', () => {
    const worker = compose.services.worker as Service;
    assert.ok(worker.build, 'the worker is built');
    const build = typeof worker.build === 'string' ? { context: worker.build } : worker.build;
    const dockerfile = path.join(REPO_ROOT, build.context ?? '.', build.dockerfile ?? 'Dockerfile');
    assert.ok(fs.existsSync(dockerfile), `${dockerfile} exists`);
    assert.ok(fs.existsSync(path.join(REPO_ROOT, build.context ?? '.', '.dockerignore')), '.dockerignore keeps node_modules and local state out');
    // Emulator ports are published on the host's 127.0.0.1, where the worker health-checks them.
    assert.equal(worker.network_mode, 'host');
  });

  test("passes the worker every variable its configuration reads, and .env.example documents them", () => {
    const worker = compose.services.worker as Service;
    assert.ok(worker.environment && !Array.isArray(worker.environment), 'the worker environment is a map');
    const passed = Object.keys(worker.environment);
    const flags = FEATURE_FLAG_NAMES.map(flagEnvName);
    const expected = [...CONFIG_ENV_KEYS.filter((key) => key !== 'SANDBOXPLANE_TEMPORAL_CLI'), ...flags];
    assert.deepEqual(expected.filter((key) => !passed.includes(key)), [], 'every configuration variable reaches the worker');

    assert.ok(envExampleText !== '', '.env.example exists');
    const { set, documented } = envExample();
    assert.deepEqual([...CONFIG_ENV_KEYS, ...flags].filter((key) => !documented.has(key)), [], '.env.example names every variable');
    const referenced = [...new Set(resolveDefaults(composeText).variables)];
    assert.deepEqual(referenced.filter((key) => !documented.has(key)), [], '.env.example names every ${VAR} of the compose file');

    for (const flag of ['CLOUD_SANDBOX', 'IAC_LOCAL', 'ADAPTER_MOTO'] as const) assert.equal(set.get(flagEnvName(flag)), '1', `${flag} on`);
    for (const flag of ['STAGING_APPLY', 'PRODUCTION_APPLY'] as const) assert.equal(set.get(flagEnvName(flag)), '0', `${flag} off`);
  });
});

describe('Dockerfile', () => {
  const text = fs.readFileSync(path.join(REPO_ROOT, 'Dockerfile'), 'utf8');
  const instructions = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));

  test('pins every base image', () => {
    const stages = new Set<string>();
    const froms = instructions.filter((line) => /^FROM\s/i.test(line));
    assert.ok(froms.length > 0);
    for (const from of froms) {
      const [, image = '', , alias] = /^FROM\s+(?:--platform=\S+\s+)?(\S+)(\s+AS\s+(\S+))?/i.exec(from) ?? [];
      if (!stages.has(image)) assert.ok(imageIsPinned(image), `${from}: base image not pinned`);
      if (alias !== undefined) stages.add(alias);
    }
  });

  test('installs with npm ci and runs as a non-root user', () => {
    assert.ok(instructions.some((line) => /^RUN\s.*\bnpm ci\b/.test(line)), 'npm ci, from the lock file');
    const lastFrom = instructions.map((line) => /^FROM\s/i.test(line)).lastIndexOf(true);
    const users = instructions.slice(lastFrom).filter((line) => /^USER\s/i.test(line));
    const user = users.at(-1)?.split(/\s+/)[1];
    assert.ok(user !== undefined, 'the final stage sets USER');
    assert.ok(!['root', '0', '0:0'].includes(user), `runs as ${user}`);
    assert.match(instructions.join('\n'), /sandboxctl\.js/);
  });
});
