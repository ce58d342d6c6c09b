import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { dockerClient } from '../harness/container-events';

const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;

/**
 * The shared engine's sandbox networks come from 10.203.0.0/16 (scripts/docker-engine.sh);
 * each private engine takes 10.N.0.0/16, N its bridge's third octet. Engines sharing one pool
 * race to the same free range when they create networks at once, and a docker-proxy then
 * forwards one sandbox's port to another's container.
 */
const SHARED_ENGINE_THIRD_OCTET = 203;

/**
 * A Docker engine of one test's own, beside the shared one that scripts/docker-engine.sh
 * starts: its own socket, data root, exec root, pidfile and bridge, so the test can stop
 * it without touching anyone else's containers.
 */
export interface PrivateDockerEngine {
  /** `unix://…/docker.sock`, for DOCKER_HOST. */
  readonly dockerHost: string;
  readonly bridge: string;
  readonly running: boolean;
  /** SIGTERM to dockerd; resolves once it has exited (containers keep running: `--live-restore`). */
  stop(): Promise<void>;
  /** Starts dockerd again on the same socket and directories; resolves once it answers. */
  start(): Promise<void>;
  /** Copies an image (by id or reference) from another engine: `docker save | docker load`. */
  copyImageFrom(sourceDockerHost: string | undefined, image: string): Promise<void>;
  /** Removes every container, stops dockerd, deletes the bridge and the directories. Safe to call twice. */
  dispose(): Promise<void>;
}

/** The third octet of a free 172.31.N.0/24 for the bridge (and so of 10.N.0.0/16 for its sandbox networks). */
function unusedThirdOctet(): number {
  const inUse = execFileSync('ip', ['-o', '-4', 'addr', 'show'], { encoding: 'utf8' });
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const third = 100 + Math.floor(Math.random() * 150);
    if (third === SHARED_ENGINE_THIRD_OCTET) continue;
    if (!inUse.includes(`172.31.${third}.`) && !inUse.includes(` 10.${third}.`)) return third;
  }
  throw new Error('no free 172.31.x.0/24 for a private Docker bridge');
}

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

/**
 * Starts a second dockerd as root: a bridge made with `ip link add NAME type bridge`,
 * `--bridge=NAME`, no iptables rules of its own (the shared engine owns the DOCKER
 * chains, and a second engine rewriting them would break its port forwards; published
 * loopback ports go through docker-proxy instead), and `--live-restore`.
 */
export async function startPrivateDockerEngine(): Promise<PrivateDockerEngine> {
  if (process.getuid?.() !== 0) throw new Error('a private Docker engine needs root (dockerd, ip link)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-engine-'));
  const runDir = path.join(dir, 'run');
  fs.mkdirSync(runDir, { mode: 0o711 });
  const socket = path.join(runDir, 'docker.sock');
  const dockerHost = `unix://${socket}`;
  const logFile = path.join(dir, 'dockerd.log');
  const bridge = `spf${randomBytes(4).toString('hex')}`;
  const third = unusedThirdOctet();
  ip('link', 'add', bridge, 'type', 'bridge');
  let bridgeUp = true;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const killOnExit = () => child?.kill('SIGKILL');
  process.once('exit', killOnExit);

  const args = [
    `--host=${dockerHost}`,
    `--data-root=${path.join(dir, 'data')}`,
    `--exec-root=${path.join(runDir, 'exec')}`,
    `--pidfile=${path.join(runDir, 'dockerd.pid')}`,
    `--bridge=${bridge}`,
    '--iptables=false',
    '--ip-masq=false',
    // A sealed network per sandbox (docs/security.md#sealed-sandboxes): small ranges, so it
    // does not run out after thirty, and a pool of its own (see SHARED_ENGINE_THIRD_OCTET).
    `--default-address-pool=base=10.${third}.0.0/16,size=28`,
    // Without it, dockerd stops every container when it exits (SIGTERM, then SIGKILL),
    // and they stay exited when it comes back (restart policy "no"): each READY sandbox
    // would lose its emulator. With it, containers run on under their shims; only the
    // engine API and the docker-proxy port forwarders (children of dockerd) are gone
    // until it returns and restores them.
    '--live-restore',
    ...ownEngineIdentity(dir),
  ];

  const isRunning = () => child !== undefined && child.exitCode === null && child.signalCode === null;

  const start = async () => {
    if (isRunning()) return;
    fs.rmSync(socket, { force: true });
    const log = fs.openSync(logFile, 'a');
    const started = spawn('dockerd', args, { stdio: ['ignore', log, log], detached: true });
    fs.closeSync(log);
    child = started;
    exited = new Promise((resolve) => started.once('exit', () => resolve()));
    const docker = dockerClient(dockerHost);
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (!isRunning()) throw new Error(`private dockerd exited before it answered; its log:\n${fs.readFileSync(logFile, 'utf8').slice(-3000)}`);
      if (
        await docker.ping().then(
          () => true,
          () => false,
        )
      )
        return;
      if (Date.now() > deadline) throw new Error(`private dockerd did not answer on ${dockerHost} within ${READY_TIMEOUT_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };

  const stop = async () => {
    if (!isRunning()) return;
    child?.kill('SIGTERM');
    const timer = setTimeout(() => child?.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  };

  const removeAllContainers = async () => {
    const docker = dockerClient(dockerHost);
    for (const container of await docker.listContainers({ all: true })) {
      await docker.getContainer(container.Id).remove({ force: true, v: true });
    }
  };

  let disposed = false;
  const dispose = async () => {
    if (disposed) return;
    disposed = true;
    try {
      // The containers outlive a stopped engine (--live-restore): bring it back to remove them.
      if (fs.existsSync(path.join(dir, 'data'))) {
        await start().catch(() => undefined);
        if (isRunning()) await removeAllContainers();
      }
    } finally {
      await stop();
      process.removeListener('exit', killOnExit);
      if (bridgeUp) {
        ip('link', 'del', bridge);
        bridgeUp = false;
      }
      unmountUnder(dir);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  };

  try {
    ip('addr', 'add', `172.31.${third}.1/24`, 'dev', bridge);
    ip('link', 'set', bridge, 'up');
    await start();
  } catch (err) {
    await dispose();
    throw err;
  }

  return {
    dockerHost,
    bridge,
    get running() {
      return isRunning();
    },
    stop,
    start,
    copyImageFrom: (sourceDockerHost, image) => copyImage(sourceDockerHost, dockerHost, image),
    dispose,
  };
}

/**
 * Before Docker 23 the engine id (`docker info` ID) comes from the trust key at
 * /etc/docker/key.json, which every dockerd of the machine shares: this engine gets a key
 * of its own, so it is told apart from the shared one as a second machine's would be.
 * From 23 on the id lives in the data root, which is already this engine's own.
 */
function ownEngineIdentity(dir: string): string[] {
  const version = /version (\d+)\./i.exec(execFileSync('dockerd', ['--version'], { encoding: 'utf8' }))?.[1];
  if (version === undefined || Number(version) >= 23) return [];
  // A setting of daemon.json only: dockerd has no flag for it.
  const configFile = path.join(dir, 'daemon.json');
  fs.writeFileSync(configFile, JSON.stringify({ 'deprecated-key-path': path.join(dir, 'key.json') }));
  return [`--config-file=${configFile}`];
}

/** dockerd leaves its data root bind-mounted on itself (and, after a crash, more): unmount, deepest first. */
function unmountUnder(dir: string): void {
  const mountPoints = fs
    .readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((point) => point === dir || point.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
  for (const point of mountPoints) execFileSync('umount', ['--lazy', point]);
}

/** `docker save IMAGE | docker load` between two engines; the image keeps its id. */
function copyImage(fromHost: string | undefined, toHost: string, image: string): Promise<void> {
  const envFor = (host: string | undefined) => ({ ...process.env, ...(host === undefined ? {} : { DOCKER_HOST: host }) });
  const save = spawn('docker', ['save', image], { env: envFor(fromHost), stdio: ['ignore', 'pipe', 'pipe'] });
  const load = spawn('docker', ['load', '--quiet'], { env: envFor(toHost), stdio: ['pipe', 'ignore', 'pipe'] });
  save.stdout.pipe(load.stdin);
  let errors = '';
  save.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  load.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  const exitOf = (child: ChildProcess) => new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return Promise.all([exitOf(save), exitOf(load)]).then(([saved, loaded]) => {
    if (saved !== 0 || loaded !== 0) throw new Error(`docker save ${image} | docker load failed (${saved}, ${loaded}): ${errors}`);
  });
}
