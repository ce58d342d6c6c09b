import type { WorkflowService } from '@temporalio/client';
import { SandboxPlaneError } from '../domain/errors';
import { sha256Hex } from '../domain/sha256';
import { lastPoll, queuePollers } from '../client/queue-pollers';
import { workerIdentity } from './role-workers';

const STORE_IDENTITY = /^sandboxplane-store@(?<host>[^:]+):(?<pid>\d+):(?<file>[0-9a-f]+)$/;

/** The store worker's Temporal identity: which machine, process and SQLite file answer `<tq>-store`. */
export function storeWorkerIdentity(storePath: string): string {
  return `${workerIdentity('store')}:${sha256Hex(storePath).slice(0, 12)}`;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Refuses to start a second store worker on a queue another one serves: two would split
 * the projection (each with its own file) and let two placements take one host's last
 * slot. A store worker of this machine and file whose process is gone (a crash, a
 * restart) is no rival: its poll record lingers in Temporal for a while.
 */
export async function refuseSecondStoreWorker(input: { service: WorkflowService; namespace: string; taskQueue: string; identity: string }): Promise<void> {
  const mine = STORE_IDENTITY.exec(input.identity)?.groups;
  const pollers = await queuePollers(input.service, input.namespace, input.taskQueue);
  for (const poller of pollers) {
    if (poller.identity === input.identity || !lastPoll([poller]).live) continue;
    const theirs = STORE_IDENTITY.exec(poller.identity)?.groups;
    const sameHome = theirs !== undefined && mine !== undefined && theirs.host === mine.host && theirs.file === mine.file;
    if (sameHome && !isAlive(Number(theirs.pid))) continue;
    throw new SandboxPlaneError(
      'STORE_CONFLICT',
      `another store worker (${poller.identity}) polled ${input.taskQueue} at ${poller.lastAccessTime?.toISOString() ?? 'an unknown time'}; exactly one store worker may serve a plane`,
      {
        hint: `Stop it, or run this worker without the store role (--role lifecycle,docker). A store worker that died counts as gone once its queue has been silent for 90 s.`,
      },
    );
  }
}
