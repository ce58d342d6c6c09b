import os from 'node:os';
import type { Client } from '@temporalio/client';
import type { Worker, WorkerOptions } from '@temporalio/worker';
import type { SnapshotContents } from '../activities/snapshot-contents';
import type { AesGcmPayloadCodec } from '../codec/aes-gcm-codec';
import type { Config } from '../config/config';
import type { Logger } from '../logging/logger';

/** What every role's start shares: made once per process, over one connection. */
export interface RoleContext {
  readonly config: Config;
  readonly logger: Logger;
  readonly client: Client;
  readonly payloadCodec: AesGcmPayloadCodec;
  readonly contents: SnapshotContents;
  /** This process's Temporal identity, and the plane its containers belong to. */
  readonly identity: string;
  readonly planeId: string;
  /** Spread into every role's Worker.create: connection, namespace, data converter, tracing. */
  readonly workerOptions: Omit<WorkerOptions, 'taskQueue'>;
}

/** A worker's Temporal identity: `sandboxplane-<role>@<host>:<pid>`, the role's name first. */
export function workerIdentity(role: string): string {
  return `sandboxplane-${role}@${os.hostname()}:${process.pid}`;
}

/** One role started (DESIGN §10): its worker, the queue it polls, and a stop for what it runs beside the worker. */
export interface RoleStart {
  readonly worker: Worker;
  readonly queue: string;
  readonly stop?: () => Promise<void>;
  /** Run once every role's worker is made, before any polls: a docker host registers itself. */
  readonly announce?: () => Promise<void>;
}

/**
 * Starts a role that runs things beside its worker, each `beside`'s stop run last-started
 * first: at shutdown, or at once when the start fails, so a half-started role leaves nothing running.
 */
export async function startRole(start: (beside: (stop: () => unknown) => void) => Promise<Omit<RoleStart, 'stop'>>): Promise<RoleStart> {
  const stops: (() => unknown)[] = [];
  const stop = async (): Promise<void> => {
    for (const each of [...stops].reverse()) await each();
  };
  try {
    return { ...(await start((each) => stops.push(each))), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * The workers of one process's roles, run and stopped together: one that stops (a
 * fatal error, a shutdown) stops the others, so a process never serves half its roles.
 */
export class RoleWorkers {
  /**
   * @param whileRunning started once the workers poll (a lifecycle build promoting
   *   itself); told whether they still run, and never fails the run: it reports its own errors.
   */
  constructor(
    readonly workers: readonly Worker[],
    private readonly whileRunning?: (running: () => boolean) => Promise<void>,
  ) {}

  async run(): Promise<void> {
    const runs = this.workers.map((worker) =>
      worker.run().finally(() => {
        this.shutdown();
      }),
    );
    const beside = this.whileRunning?.(() => ['INITIALIZED', 'RUNNING'].includes(this.getState()));
    const outcomes = await Promise.allSettled(runs);
    await beside;
    const failed = outcomes.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  }

  /** Runs until `work` settles, then shuts down and returns (or throws) what `work` did. */
  async runUntil<T>(work: Promise<T>): Promise<T> {
    const running = this.run();
    try {
      return await work;
    } finally {
      this.shutdown();
      await running;
    }
  }

  shutdown(): void {
    for (const worker of this.workers) {
      if (worker.getState() === 'RUNNING') worker.shutdown();
    }
  }

  getState(): ReturnType<Worker['getState']> {
    return this.workers[0]?.getState() ?? 'STOPPED';
  }
}
