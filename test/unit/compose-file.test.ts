import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { CONFIG_ENV_KEYS } from '../../src/config/config';
import { FEATURE_FLAG_NAMES, flagEnvName } from '../../src/domain/feature-flags';
import { REPO_ROOT } from '../harness/cli';

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
  profiles?: string[];
  restart?: string;
  deploy?: { replicas?: number };
  command?: string | string[];
  build?: string | { context?: string; dockerfile?: string };
  volumes?: (string | LongVolume)[];
  ports?: (string | number | LongPort)[];
  healthcheck?: { test?: string | string[]; disable?: boolean };
  depends_on?: string[] | Record<string, { condition?: string }>;
  environment?: Record<string, string | number | boolean | null> | string[];
  network_mode?: string;
  networks?: string[] | Record<string, unknown>;
}
interface ComposeFile {
  services: Record<string, Service>;
}

// Merge keys (`<<: *anchor`): the file shares settings between services the way compose does.
const compose = parse(fs.readFileSync(path.join(REPO_ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as ComposeFile;
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

/** A plane worker's role, from the SANDBOXPLANE_WORKER_ROLES it is given; `undefined` for other services. */
function roleOf(service: Service): string | undefined {
  const env = service.environment;
  if (env === undefined || Array.isArray(env)) return undefined;
  const roles = env.SANDBOXPLANE_WORKER_ROLES;
  return roles === undefined || roles === null ? undefined : resolveDefaults(String(roles)).value;
}

function planeServices(): [string, Service][] {
  return services().filter(([, service]) => roleOf(service) !== undefined);
}

function environmentOf(service: Service): Record<string, string> {
  const env = service.environment;
  assert.ok(env !== undefined && !Array.isArray(env), 'the environment is a map');
  return Object.fromEntries(Object.entries(env).map(([key, value]) => [key, resolveDefaults(String(value ?? '')).value]));
}

/** One-shot set-up jobs: run once to completion, waited on with service_completed_successfully. */
function isOneShot(service: Service): boolean {
  return service.restart === 'no';
}

const TEMPORAL_SERVICES = ['temporal-history', 'temporal-matching', 'temporal-frontend', 'temporal-worker'];

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
  test('has PostgreSQL, its set-up jobs, the Temporal server as four services, the UI and the plane by role', () => {
    for (const name of ['postgresql', 'temporal-schema', 'temporal-namespace', ...TEMPORAL_SERVICES, 'temporal-ui']) assert.ok(compose.services[name], `service ${name}`);
    assert.deepEqual(
      planeServices()
        .map(([, service]) => roleOf(service))
        .sort(),
      ['docker', 'docker', 'lifecycle', 'store'],
    );
  });

  test('pins every image it does not build (a tag with a version, or a digest; never latest)', () => {
    for (const [name, service] of services()) {
      if (service.build !== undefined) continue;
      assert.ok(service.image, `${name} has an image`);
      assert.equal(resolveDefaults(service.image).variables.length, 0, `${name}: the image is written out, not taken from a variable`);
      assert.ok(imageIsPinned(service.image), `${name}: ${service.image} is not pinned`);
    }
    for (const name of [...TEMPORAL_SERVICES, 'temporal-schema', 'temporal-namespace']) {
      assert.match(compose.services[name]?.image ?? '', /^temporalio\/(auto-setup|server):1\.29\.1$/, `${name}: the server version the CLI v1.5.1 embeds`);
    }
  });

  test('mounts a Docker socket into each docker worker and into no other service', () => {
    const docker = planeServices()
      .filter(([, service]) => roleOf(service) === 'docker')
      .map(([name]) => name);
    for (const [name, service] of services()) {
      const socketMounts = mounts(service).filter((mount) => reachesDockerSocket(mount.source) || reachesDockerSocket(mount.target));
      if (docker.includes(name)) {
        assert.deepEqual(
          socketMounts.map((mount) => mount.target),
          ['/var/run/docker.sock'],
          `${name} mounts the socket itself, nothing above it`,
        );
      } else {
        assert.deepEqual(socketMounts, [], `${name} must not reach the Docker socket`);
      }
    }
    const naming = services()
      .filter(([, service]) => JSON.stringify(service).includes('docker.sock'))
      .map(([name]) => name);
    assert.deepEqual(naming, docker, 'no other service even names a socket');
  });

  test('gives the SQLite projection to the store worker alone', () => {
    for (const [name, service] of planeServices()) {
      const store = roleOf(service) === 'store';
      assert.equal('SANDBOXPLANE_DB' in environmentOf(service), store, `${name}: SANDBOXPLANE_DB only for the store role`);
      assert.deepEqual(
        mounts(service)
          .map((mount) => mount.target)
          .filter((target) => target === '/data'),
        store ? ['/data'] : [],
        `${name}: the /data volume only for the store role`,
      );
    }
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
    for (const [name, service] of planeServices()) assert.deepEqual(service.ports ?? [], [], `${name} listens on no port`);
  });

  test('puts every service off the host network on the one network PostgreSQL and the server share', () => {
    for (const [name, service] of services()) {
      if (service.network_mode === 'host') continue;
      const networks = Array.isArray(service.networks) ? service.networks : Object.keys(service.networks ?? {});
      assert.deepEqual(networks, ['temporal'], `${name} is on the temporal network`);
    }
  });

  test('gives every long-running service a healthcheck; one-shot jobs are waited on to complete', () => {
    for (const [name, service] of services()) {
      if (isOneShot(service)) {
        const waiters = services().filter(([, other]) => !Array.isArray(other.depends_on) && (other.depends_on as Record<string, { condition?: string }> | undefined)?.[name] !== undefined);
        assert.ok(waiters.length > 0, `${name} is a set-up job something waits for`);
        for (const [waiter, other] of waiters) {
          assert.equal((other.depends_on as Record<string, { condition?: string }>)[name]?.condition, 'service_completed_successfully', `${waiter} waits for ${name} to complete`);
        }
        continue;
      }
      assert.ok(service.healthcheck, `${name} has a healthcheck`);
      assert.notEqual(service.healthcheck.disable, true, `${name}: healthcheck disabled`);
      const probe = [service.healthcheck.test ?? []].flat();
      assert.ok(probe.length > 0 && probe[0] !== 'NONE', `${name}: healthcheck without a test`);
    }
  });

  test('starts a service only after what it needs is healthy', () => {
    const needs: Record<string, string> = {
      'temporal-schema': 'postgresql',
      'temporal-matching': 'temporal-history',
      'temporal-frontend': 'temporal-matching',
      'temporal-worker': 'temporal-frontend',
      'temporal-namespace': 'temporal-frontend',
      'temporal-ui': 'temporal-frontend',
      ...Object.fromEntries(planeServices().map(([name]) => [name, 'temporal-frontend'])),
    };
    for (const [name, service] of services()) {
      const dependsOn = service.depends_on ?? {};
      assert.ok(!Array.isArray(dependsOn), `${name}: depends_on in the long form, with a condition`);
      for (const [dependency, { condition }] of Object.entries(dependsOn)) {
        assert.ok(condition === 'service_healthy' || condition === 'service_completed_successfully', `${name} → ${dependency}: condition ${String(condition)}`);
      }
      if (needs[name] !== undefined) assert.equal((dependsOn as Record<string, { condition?: string }>)[needs[name]]?.condition, 'service_healthy', `${name} waits for ${needs[name]}`);
    }
  });

  test('builds every plane worker from a Dockerfile in this repository and runs `sandboxctl worker` on the host network', () => {
    for (const [name, worker] of planeServices()) {
      assert.ok(worker.build, `${name} is built`);
      const build = typeof worker.build === 'string' ? { context: worker.build } : worker.build;
      const dockerfile = path.join(REPO_ROOT, build.context ?? '.', build.dockerfile ?? 'Dockerfile');
      assert.ok(fs.existsSync(dockerfile), `${dockerfile} exists`);
      assert.ok(fs.existsSync(path.join(REPO_ROOT, build.context ?? '.', '.dockerignore')), '.dockerignore keeps node_modules and local state out');
      assert.deepEqual(worker.command, ['worker']);
      // Emulator ports are published on the host's 127.0.0.1, where the docker workers health-check them.
      assert.equal(worker.network_mode, 'host', `${name} on the host network`);
    }
  });

  test('passes the plane every variable its configuration reads, and .env.example documents them', () => {
    const passed = new Set(planeServices().flatMap(([, service]) => Object.keys(environmentOf(service))));
    const flags = FEATURE_FLAG_NAMES.map(flagEnvName);
    // A worker runs no Temporal CLI, and acts as no principal (that is a caller's identity, DESIGN §12).
    const callerOnly = new Set(['SANDBOXPLANE_TEMPORAL_CLI', 'SANDBOXPLANE_PRINCIPAL']);
    const expected = [...CONFIG_ENV_KEYS.filter((key) => !callerOnly.has(key)), ...flags];
    assert.deepEqual(
      expected.filter((key) => !passed.has(key)),
      [],
      'every configuration variable reaches the workers that read it',
    );

    assert.ok(envExampleText !== '', '.env.example exists');
    const { set, documented } = envExample();
    assert.deepEqual(
      [...CONFIG_ENV_KEYS, ...flags].filter((key) => !documented.has(key)),
      [],
      '.env.example names every variable',
    );
    const referenced = [...new Set(resolveDefaults(composeText).variables)];
    assert.deepEqual(
      referenced.filter((key) => !documented.has(key)),
      [],
      '.env.example names every ${VAR} of the compose file',
    );

    for (const flag of ['CLOUD_SANDBOX', 'IAC_LOCAL', 'ADAPTER_MOTO'] as const) assert.equal(set.get(flagEnvName(flag)), '1', `${flag} on`);
    for (const flag of ['STAGING_APPLY', 'PRODUCTION_APPLY'] as const) assert.equal(set.get(flagEnvName(flag)), '0', `${flag} off`);
  });
});

/** What `bash scripts/cluster.sh topology` prints: the workers `up` starts on this machine. */
interface ClusterWorker {
  readonly name: string;
  readonly role: string;
  readonly hostId: string | null;
  readonly taskQueue: string;
  readonly env: readonly string[];
}

describe('docker-compose.yml and scripts/cluster.sh describe the same topology', () => {
  const clusterEnv = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('SANDBOXPLANE_') && !key.startsWith('TEMPORAL_')));
  const topology = execFileSync('bash', [path.join(REPO_ROOT, 'scripts', 'cluster.sh'), 'topology'], { encoding: 'utf8', env: clusterEnv })
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as ClusterWorker);
  /** Each compose worker as many times as it runs (its replicas), every profile on. */
  const composeWorkers = planeServices().flatMap(([name, service]) => Array.from({ length: service.deploy?.replicas ?? 1 }, () => ({ name, service, env: environmentOf(service) })));

  test('the same roles, as many of each, and the same docker host ids', () => {
    const roles = (list: readonly string[]) => [...list].sort();
    assert.deepEqual(roles(composeWorkers.map(({ service }) => roleOf(service) ?? '')), roles(topology.map((worker) => worker.role)));
    assert.deepEqual(
      composeWorkers
        .filter(({ service }) => roleOf(service) === 'docker')
        .map(({ env }) => env.SANDBOXPLANE_HOST_ID)
        .sort(),
      topology
        .filter((worker) => worker.role === 'docker')
        .map((worker) => worker.hostId)
        .sort(),
    );
  });

  test('the same task queue', () => {
    const queues = new Set([...composeWorkers.map(({ env }) => env.SANDBOXPLANE_TASK_QUEUE), ...topology.map((worker) => worker.taskQueue)]);
    assert.deepEqual([...queues], ['sandboxplane']);
  });

  test('every variable the cluster gives a role, compose gives that role; the role-bound ones go to that role only', () => {
    for (const worker of topology) {
      for (const { name, service, env } of composeWorkers.filter(({ service: candidate }) => roleOf(candidate) === worker.role)) {
        assert.deepEqual(
          worker.env.filter((key) => !(key in env)),
          [],
          `${name} (${roleOf(service)}) lacks what cluster.sh gives ${worker.name}`,
        );
      }
    }
    const boundTo: Record<string, string> = { SANDBOXPLANE_DB: 'store', DOCKER_HOST: 'docker', SANDBOXPLANE_HOST_ID: 'docker' };
    for (const [key, role] of Object.entries(boundTo)) {
      assert.deepEqual([...new Set(topology.filter((worker) => worker.env.includes(key)).map((worker) => worker.role))], [role], `cluster.sh: ${key} only for ${role}`);
      assert.deepEqual([...new Set(composeWorkers.filter(({ env }) => key in env).map(({ service }) => roleOf(service)))], [role], `compose: ${key} only for ${role}`);
    }
  });

  test('the same schema steps: each database migrated to the same embedded schema', () => {
    // scripts/cluster.sh and the parts it sources (scripts/cluster/*.sh).
    const parts = fs.readdirSync(path.join(REPO_ROOT, 'scripts', 'cluster')).map((file) => path.join('cluster', file));
    const script = ['cluster.sh', ...parts].map((file) => fs.readFileSync(path.join(REPO_ROOT, 'scripts', file), 'utf8')).join('\n');
    const migrations = [...script.matchAll(/^\s*migrate (\S+) (\S+)$/gm)].map((match) => `${match[1]}:${match[2]}`);
    assert.deepEqual(migrations, ['temporal:postgresql/v12/temporal', 'temporal_visibility:postgresql/v12/visibility']);
    const job = [compose.services['temporal-schema']?.command ?? []].flat().join('\n');
    for (const migration of migrations) assert.ok(job.includes(migration), `the temporal-schema job migrates ${migration}`);
    for (const step of ['create-database', 'setup-schema -v 0.0', 'update-schema --schema-name']) {
      assert.ok(job.includes(step) && script.includes(step), `both run ${step}`);
    }
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
    assert.ok(
      instructions.some((line) => /^RUN\s.*\bnpm ci\b/.test(line)),
      'npm ci, from the lock file',
    );
    const lastFrom = instructions.map((line) => /^FROM\s/i.test(line)).lastIndexOf(true);
    const users = instructions.slice(lastFrom).filter((line) => /^USER\s/i.test(line));
    const user = users.at(-1)?.split(/\s+/)[1];
    assert.ok(user !== undefined, 'the final stage sets USER');
    assert.ok(!['root', '0', '0:0'].includes(user), `runs as ${user}`);
    assert.match(instructions.join('\n'), /sandboxctl\.js/);
  });
});
