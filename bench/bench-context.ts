import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import type { SandboxClient } from '../src/client/sandbox-client';
import type { TestDevServer } from '../test/harness/test-temporal';
import type { BenchOptions, FigureId } from './bench-options';
import type { FigureRow } from './bench-report';
import { benchPlaneId } from './bench-containers';

/** The engine and images of the run, or why each is missing. */
export interface DockerSetup {
  /** The engine's DOCKER_HOST; undefined when none answers (then `engineMissing` says why). */
  readonly dockerHost: string | undefined;
  readonly engineMissing: string | null;
  /** The busybox test image by id (P4's cheap managed containers). */
  readonly testImage: string | undefined;
  readonly motoImage: string | undefined;
  readonly motoMissing: string | null;
}

/**
 * Runs work with its undo registered, so an interrupted bench (Ctrl-C) still stops what
 * it started and removes what it created; the undo also runs when the work ends.
 */
export class BenchCleanup {
  private readonly pending = new Map<symbol, { what: string; undo: () => Promise<void> }>();

  async guard<T>(what: string, undo: () => Promise<void>, work: () => Promise<T>): Promise<T> {
    const key = Symbol(what);
    // Once only: an interruption and the work's own end may both ask for it, at once.
    let undone: Promise<void> | undefined;
    const once = () => (undone ??= undo());
    this.pending.set(key, { what, undo: once });
    try {
      return await work();
    } finally {
      await once();
      this.pending.delete(key);
    }
  }

  /** The undos still registered, newest first; each failure is reported, the rest still run. */
  async runAll(report: (message: string) => void): Promise<void> {
    for (const { what, undo } of [...this.pending.values()].reverse()) {
      await undo().catch((err: unknown) => report(`clean-up of ${what} failed: ${String(err)}`));
    }
  }
}

/**
 * `sandboxctl worker` (the compiled CLI, all roles, memory adapter on) in a child process
 * of its own, as an operator runs it: its CPU and resident memory are read apart from the
 * bench's clients and the Temporal server.
 */
export interface MeasuredWorker {
  readonly pid: number;
  readonly taskQueue: string;
  /** The environment a `sandboxctl` child needs to reach this worker. */
  readonly env: Record<string, string>;
  readonly client: Client;
  readonly sandboxes: SandboxClient;
  stop(): Promise<void>;
}

/** What every figure gets from the entry point. */
export interface BenchContext {
  readonly options: BenchOptions;
  /** Unique to this run: in workflow ids, plane ids and container labels. */
  readonly runId: string;
  readonly server: TestDevServer;
  /** The dev server's process, for CPU readings; undefined when it could not be found. */
  readonly serverPid: number | undefined;
  readonly docker: DockerSetup;
  readonly cleanup: BenchCleanup;
  /** A line on stderr (stdout is the table or the JSON document). */
  progress(message: string): void;
  /** The worker P1, P3 and CLI measure: `sandboxctl worker` in a child process, started on first use. */
  measuredWorker(): Promise<MeasuredWorker>;
}

/** What a figure measured; the entry point adds its id, title and status. */
export interface FigureOutcome {
  readonly rows: readonly FigureRow[];
  readonly profile: Readonly<Record<string, unknown>> | null;
  readonly lifecycleFailures?: number;
  readonly failures?: readonly string[];
}

/** One figure of the suite. */
export interface Figure {
  readonly id: FigureId;
  readonly title: string;
  /** Besides the dev server; a figure whose needs are missing is skipped with the reason. */
  readonly needs: readonly ('docker' | 'moto')[];
  /** Set up when they can be had, but the figure runs without them (on memory sandboxes, say). */
  readonly wants?: readonly ('docker' | 'moto')[];
  run(context: BenchContext): Promise<FigureOutcome>;
}

/** Principal of every bench sandbox; the bench workers' policy allows it. */
export const BENCH_PRINCIPAL = 'bench';

/**
 * The environment every bench worker shares: a plane and a deployment of its own (so no
 * sweep of one judges another's containers), no scheduled sweep racing the measurements, and room
 * on the host and in the plane's cap for every agent of a burst (admission is not what is measured).
 */
export function benchWorkerEnv(context: BenchContext, purpose: string): Record<string, string> {
  return {
    SANDBOXPLANE_PLANE_ID: benchPlaneId(context.runId, purpose),
    // A Worker Versioning deployment of its own too: bench planes of the compiled and the source build share the namespace.
    SANDBOXPLANE_DEPLOYMENT: benchPlaneId(context.runId, purpose),
    SANDBOXPLANE_SWEEP_INTERVAL: '1d',
    SANDBOXPLANE_HOST_CAPACITY: '10000',
    SANDBOXPLANE_MAX_SANDBOXES: '10000',
    ...(context.docker.dockerHost === undefined ? {} : { DOCKER_HOST: context.docker.dockerHost }),
  };
}

/** The pid of the engine scripts/docker-engine.sh started (its pidfile beside its socket), for CPU readings. */
export function enginePid(dockerHost: string | undefined): number | undefined {
  if (dockerHost?.startsWith('unix://') !== true) return undefined;
  try {
    const pid = Number(fs.readFileSync(path.join(path.dirname(dockerHost.slice('unix://'.length)), 'dockerd.pid'), 'utf8').trim());
    return Number.isInteger(pid) && fs.existsSync(`/proc/${pid}`) ? pid : undefined;
  } catch {
    return undefined;
  }
}
