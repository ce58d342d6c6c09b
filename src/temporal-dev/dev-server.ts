import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Connection } from '@temporalio/client';
import { SandboxPlaneError } from '../domain/errors';
import { sleep, waitForFrontend } from './frontend-probe';

export interface DevServerOptions {
  /** Path of the `temporal` CLI binary. */
  readonly cliPath: string;
  readonly port: number;
  readonly uiPort: number;
  /** Persistent SQLite file of the dev server; history survives restarts. */
  readonly dbFile: string;
  readonly namespace: string;
  /** The frontend must answer within this long (DEV_SERVER_FAILED otherwise). */
  readonly startTimeoutMs?: number;
  /** Extra ports so that several servers can run side by side (tests). */
  readonly httpPort?: number;
  readonly metricsPort?: number;
  /** The codec server the Web UI sends payloads to for display (`--ui-codec-endpoint`). */
  readonly uiCodecEndpoint?: string;
  /** Every line the server prints, for the launcher to forward. */
  readonly onOutput?: (line: string) => void;
  /** Called as soon as the process exists, so a stop during start-up can still stop it. */
  readonly onSpawn?: (server: DevServer) => void;
}

/**
 * Worker Versioning (DESIGN §16), which server 1.29 turns on by default: said here so a
 * later default cannot take it away. The caps are raised because every test plane on a
 * dev server is a deployment of its own, with queues that are never forgotten.
 */
const WORKER_VERSIONING_CONFIG = [
  'system.enableDeploymentVersions=true',
  'frontend.workerVersioningWorkflowAPIs=true',
  'matching.maxDeployments=10000',
  'matching.maxTaskQueuesInDeploymentVersion=1000',
] as const;

const OUTPUT_TAIL_LINES = 40;
const STOP_GRACE_MS = 10_000;

/** `temporal server start-dev` as a child process we own from start to stop. */
export class DevServer {
  private readonly outputTail: string[] = [];
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private readonly exited: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    readonly address: string,
    readonly uiUrl: string,
    private readonly onOutput?: (line: string) => void,
  ) {
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        resolve();
      });
    });
    for (const stream of [child.stdout, child.stderr]) {
      let partial = '';
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => {
        const lines = (partial + chunk).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) this.record(line);
      });
    }
  }

  /** Starts the server and resolves once its frontend answers and the namespace exists. */
  static async start(options: DevServerOptions): Promise<{ server: DevServer; connection: Connection }> {
    fs.mkdirSync(path.dirname(options.dbFile), { recursive: true });
    const args = [
      'server',
      'start-dev',
      '--ip',
      '127.0.0.1',
      '--port',
      String(options.port),
      '--ui-port',
      String(options.uiPort),
      '--db-filename',
      options.dbFile,
      '--namespace',
      options.namespace,
      '--log-level',
      'warn',
      // An activity on the worker's own queue rides back with the workflow task that
      // scheduled it: a lifecycle runs five of them (docs/development.md, Benchmarks).
      '--dynamic-config-value',
      'system.enableActivityEagerExecution=true',
      ...WORKER_VERSIONING_CONFIG.flatMap((value) => ['--dynamic-config-value', value]),
    ];
    if (options.httpPort !== undefined) args.push('--http-port', String(options.httpPort));
    if (options.metricsPort !== undefined) args.push('--metrics-port', String(options.metricsPort));
    if (options.uiCodecEndpoint !== undefined) args.push('--ui-codec-endpoint', options.uiCodecEndpoint);
    // Own process group: a terminal's Ctrl-C reaches only us, and we stop the server last.
    const child = spawn(options.cliPath, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const address = `127.0.0.1:${options.port}`;
    const server = new DevServer(child, address, `http://127.0.0.1:${options.uiPort}`, options.onOutput);
    options.onSpawn?.(server);
    const spawnError = new Promise<Error>((resolve) => child.once('error', resolve));

    const timeoutMs = options.startTimeoutMs ?? 30_000;
    const ready = await Promise.race([waitForFrontend(address, options.namespace, Date.now() + timeoutMs, () => server.running), spawnError]);
    if (ready instanceof Error) {
      throw new SandboxPlaneError('DEV_SERVER_FAILED', `cannot run ${options.cliPath}: ${ready.message}`, { cause: ready });
    }
    if (ready === undefined) {
      const why = server.running ? `did not answer on ${address} within ${Math.round(timeoutMs / 1000)} s` : `exited (${server.exitDescription}) before it answered on ${address}`;
      await server.stop();
      throw new SandboxPlaneError('DEV_SERVER_FAILED', `temporal server start-dev ${why}. Its last output:\n${server.tail()}`, {
        details: { address },
      });
    }
    return { server, connection: ready };
  }

  get running(): boolean {
    return this.exitInfo === undefined;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Resolves when the process exits for any reason (a crash, a stop). */
  whenExited(): Promise<void> {
    return this.exited;
  }

  get exitDescription(): string {
    if (this.exitInfo === undefined) return 'still running';
    return this.exitInfo.signal !== null ? `signal ${this.exitInfo.signal}` : `exit code ${this.exitInfo.code}`;
  }

  tail(): string {
    return this.outputTail.join('\n');
  }

  /** SIGTERM, then SIGKILL if it has not gone within the grace period. Safe to call twice. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGTERM');
    const gone = await Promise.race([this.exited.then(() => true), sleep(STOP_GRACE_MS).then(() => false)]);
    if (!gone) {
      this.child.kill('SIGKILL');
      await this.exited;
    }
  }

  /**
   * Lets this process exit while the server still runs (its `exit` handler then kills
   * it): for a server that lives as long as the process, like a test file's own.
   */
  unrefProcess(): void {
    this.child.unref();
    for (const stream of [this.child.stdout, this.child.stderr]) (stream as { unref?: () => void } | null)?.unref?.();
  }

  /** Last-resort, synchronous kill for `process.on('exit')`, where nothing can be awaited. */
  killNow(): void {
    if (this.running) this.child.kill('SIGKILL');
  }

  private record(line: string): void {
    if (line.trim() === '') return;
    this.outputTail.push(line);
    if (this.outputTail.length > OUTPUT_TAIL_LINES) this.outputTail.shift();
    this.onOutput?.(line);
  }
}
