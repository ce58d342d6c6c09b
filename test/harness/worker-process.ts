import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { cliEnv, collectOutput, REPO_ROOT, type CliResult } from './cli';

const SANDBOXCTL = path.join(REPO_ROOT, 'bin', 'sandboxctl.js');
const OUTPUT_TAIL_CHARS = 8_000;
const STOP_GRACE_MS = 15_000;

/** `sandboxctl worker` as a process of its own: what a fault test kills with a real SIGKILL. */
export interface WorkerProcess {
  readonly pid: number;
  /** The last lines the worker printed, for a failure message. */
  output(): string;
  /** Whether the process has exited (for any reason). */
  readonly exited: boolean;
  /** SIGKILL: no drain, no goodbye; resolves once the process is gone. */
  kill(): Promise<void>;
  /** SIGTERM (a graceful drain), then SIGKILL if it has not gone within 15 s. Safe to call twice. */
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

/** A test that dies must not leave workers polling its task queue. */
function killAllOnExit(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const child of running) child.kill('SIGKILL');
  });
}

function gone(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/**
 * Runs the compiled `sandboxctl` (`node bin/sandboxctl.js ARGS`) to completion: the same
 * build as the worker processes, so both agree on the store's schema even while the
 * sources under test/ and src/ are newer than dist/.
 */
export async function runSandboxctl(args: readonly string[], env: Record<string, string>, options: { timeoutMs?: number } = {}): Promise<CliResult> {
  await untilBuilt();
  return collectOutput(spawn(process.execPath, [SANDBOXCTL, ...args], { cwd: REPO_ROOT, env: cliEnv(env), stdio: ['ignore', 'pipe', 'pipe'] }), options.timeoutMs);
}

/** Written by scripts/setup.sh once dist/ is compiled; absent while it rebuilds (it removes dist/ first). */
const BUILD_STAMP = path.join(REPO_ROOT, 'dist', '.build-stamp');
const BUILD_WAIT_MS = 180_000;

function buildStampMs(): number | undefined {
  try {
    return fs.statSync(BUILD_STAMP).mtimeMs;
  } catch {
    return undefined;
  }
}

/** Another `npm test` on this machine may be rebuilding dist/ right now: wait until it is done. */
async function untilBuilt(): Promise<number> {
  const deadline = Date.now() + BUILD_WAIT_MS;
  for (;;) {
    const stamp = buildStampMs();
    if (stamp !== undefined) return stamp;
    if (Date.now() > deadline) throw new Error(`${BUILD_STAMP} did not appear within ${BUILD_WAIT_MS} ms; run \`npm run setup\``);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/**
 * Starts `node bin/sandboxctl.js worker` (the compiled CLI, as an operator runs it) with
 * `env` as its whole plane configuration (TEMPORAL_*, SANDBOXPLANE_*, DOCKER_HOST; see
 * src/config/config.ts), and resolves once it logs `worker ready`. A start that fails
 * because dist/ was rebuilt under it (a concurrent `npm test` elsewhere on the machine)
 * is tried once more; once ready, the worker needs nothing more from dist/.
 */
export async function startWorkerProcess(
  env: Record<string, string>,
  options: {
    readyTimeoutMs?: number;
    /** Flags after `worker`, e.g. `['--role', 'docker', '--host-id', 'b']`. */
    args?: readonly string[];
    /** Flags for node itself, before the script, e.g. `['--cpu-prof']` (not all are allowed in NODE_OPTIONS). */
    nodeArgs?: readonly string[];
  } = {},
): Promise<WorkerProcess> {
  killAllOnExit();
  const built = await untilBuilt();
  const args = [...(options.nodeArgs ?? []), SANDBOXCTL, 'worker', ...(options.args ?? [])];
  try {
    return await attemptStart(env, args, options.readyTimeoutMs ?? 120_000);
  } catch (err) {
    if (buildStampMs() === built) throw err;
    await untilBuilt();
    return attemptStart(env, args, options.readyTimeoutMs ?? 120_000);
  }
}

/** `args` are node's: its own flags, the script, then the script's. */
async function attemptStart(env: Record<string, string>, args: readonly string[], timeoutMs: number): Promise<WorkerProcess> {
  const child = spawn(process.execPath, args, {
    cwd: REPO_ROOT,
    env: cliEnv({ ...env, SANDBOXPLANE_LOG_LEVEL: 'info' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  let tail = '';
  const record = (chunk: Buffer) => {
    tail = (tail + chunk.toString()).slice(-OUTPUT_TAIL_CHARS);
  };
  child.stdout?.on('data', record);
  child.stderr?.on('data', record);

  const worker: WorkerProcess = {
    pid: child.pid ?? -1,
    output: () => tail,
    get exited() {
      return child.exitCode !== null || child.signalCode !== null;
    },
    kill: async () => {
      child.kill('SIGKILL');
      await gone(child);
    },
    stop: async () => {
      if (worker.exited) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
      await gone(child);
      clearTimeout(timer);
    },
  };

  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`sandboxctl worker was not ready within ${timeoutMs} ms; its output:\n${tail}`)), timeoutMs);
      const onData = () => {
        if (!tail.includes('"msg":"worker ready"')) return;
        clearTimeout(timer);
        resolve();
      };
      child.stderr?.on('data', onData);
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`sandboxctl worker exited (${signal ?? code}) before it was ready; its output:\n${tail}`));
      });
      child.once('error', reject);
    });
  } catch (err) {
    await worker.kill();
    throw err;
  }
  return worker;
}
