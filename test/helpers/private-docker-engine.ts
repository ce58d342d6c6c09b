import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { dockerClient } from '../harness/container-events';

const LAUNCHER = path.join(__dirname, '..', '..', 'scripts', 'private-dockerd.sh');
const READY_TIMEOUT_SECONDS = 60;
const STOP_TIMEOUT_SECONDS = 30;

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

/** scripts/private-dockerd.sh COMMAND ARGS: resolves once it exits 0; else rejects with its output (the end of dockerd's log). */
function privateDockerd(command: 'start' | 'stop' | 'clear', args: readonly string[]): Promise<void> {
  const child = spawn('bash', [LAUNCHER, command, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let output = '';
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`scripts/private-dockerd.sh ${command} exited ${code}:\n${output.slice(-3000)}`))));
  });
}

/** True when pid is a live dockerd: not a zombie, not a recycled pid of another program. */
function isLiveDockerd(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.startsWith(`${pid} (dockerd) `) && stat[stat.lastIndexOf(')') + 2] !== 'Z';
  } catch {
    return false;
  }
}

/**
 * Starts a second dockerd as root with scripts/private-dockerd.sh: `--bridge` (a bridge of
 * its own, no iptables rules of its own: the shared engine owns the DOCKER chains; published
 * loopback ports go through docker-proxy instead) and `--live-restore`.
 */
export async function startPrivateDockerEngine(): Promise<PrivateDockerEngine> {
  if (process.getuid?.() !== 0) throw new Error('a private Docker engine needs root (dockerd, ip link)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-engine-'));
  const runDir = path.join(dir, 'run');
  const dockerHost = `unix://${path.join(runDir, 'docker.sock')}`;
  const bridge = `spf${randomBytes(4).toString('hex')}`;
  const third = unusedThirdOctet();
  const where = ['--run-dir', runDir, '--home', dir];
  let pid: number | undefined;
  const isRunning = () => isLiveDockerd(pid);
  const killOnExit = () => {
    if (pid !== undefined && isLiveDockerd(pid)) process.kill(pid, 'SIGKILL');
  };
  process.once('exit', killOnExit);

  const start = async () => {
    if (isRunning()) return;
    await privateDockerd('start', [
      ...where,
      '--bridge',
      bridge,
      '--bridge-address',
      `172.31.${third}.1/24`,
      // A sealed network per sandbox (docs/security.md#sealed-sandboxes) from a pool of its own (see SHARED_ENGINE_THIRD_OCTET).
      '--address-pool',
      `base=10.${third}.0.0/16,size=28`,
      '--wait-seconds',
      String(READY_TIMEOUT_SECONDS),
    ]);
    pid = Number(fs.readFileSync(path.join(runDir, 'dockerd.pid'), 'utf8').trim());
  };

  const stop = async () => {
    if (!isRunning()) return;
    await privateDockerd('stop', [...where, '--term-seconds', String(STOP_TIMEOUT_SECONDS)]);
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
      await privateDockerd('clear', [...where, '--bridge', bridge]);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  };

  try {
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
