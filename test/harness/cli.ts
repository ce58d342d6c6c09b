import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export const REPO_ROOT = path.resolve(__dirname, '..', '..');
const CLI_ENTRY = path.join(REPO_ROOT, 'src', 'cli', 'main.ts');

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Env for a CLI child: ours minus anything that would point it at the developer's setup.
 * A plane of its own task queue is a Worker Versioning deployment of its own too, as
 * {@link planeDeployment} says.
 */
export function cliEnv(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const base = { ...process.env };
  for (const key of Object.keys(base)) {
    if (key.startsWith('SANDBOXPLANE_') || key.startsWith('TEMPORAL_')) delete base[key];
  }
  return { ...base, SANDBOXPLANE_LOG_LEVEL: 'warn', ...planeDeployment(env), ...env };
}

/**
 * `SANDBOXPLANE_DEPLOYMENT` named after the plane's task queue, when it has one of its
 * own: test planes built from the sources and from dist/ (two builds) share the dev
 * server's namespaces, and a deployment's current build is current on all its queues.
 */
export function planeDeployment(env: Record<string, string | undefined>): { SANDBOXPLANE_DEPLOYMENT?: string } {
  const taskQueue = env.SANDBOXPLANE_TASK_QUEUE;
  return taskQueue === undefined ? {} : { SANDBOXPLANE_DEPLOYMENT: taskQueue };
}

/** Starts `sandboxctl` from the sources (through tsx), as a user would run it. */
export function spawnCli(args: readonly string[], env: Record<string, string | undefined>): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', CLI_ENTRY, ...args], {
    cwd: REPO_ROOT,
    env: cliEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs `sandboxctl` to completion and collects its output. */
export function runCli(args: readonly string[], env: Record<string, string | undefined> = {}): Promise<CliResult> {
  return collectOutput(spawnCli(args, env));
}

/**
 * Collects a child's stdout and stderr until it closes; with `timeoutMs`, a child still
 * running then is SIGKILLed (a command that should have ended must not hang the test).
 */
export function collectOutput(child: ChildProcess, timeoutMs?: number): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = timeoutMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Collects a child's stdout and resolves once a line matching `pattern` appears. */
export function waitForOutput(child: ChildProcess, pattern: RegExp, timeoutMs: number): Promise<string> {
  let seen = '';
  let errors = '';
  child.stderr?.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${pattern} within ${timeoutMs} ms; stdout:\n${seen}\nstderr:\n${errors.slice(-4000)}`)), timeoutMs);
    child.stdout?.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (pattern.test(seen)) {
        clearTimeout(timer);
        resolve(seen);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before ${pattern}; stdout:\n${seen}\nstderr:\n${errors.slice(-4000)}`));
    });
  });
}

/** Sends `signal` and resolves with the exit code (null if killed by a signal). */
export function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.kill(signal);
  });
}
