/**
 * The task queues of the worker roles (DESIGN §10): lifecycle workflows on `<tq>`, the
 * projection's single writer on `<tq>-store`, one docker worker per engine on
 * `<tq>-docker-<hostId>`, and IaC against operators' targets on `<tq>-targets` (the
 * workers whose AWS credential chain reaches them). One home, so workflow code, workers
 * and callers agree.
 */

export const WORKER_ROLES = ['lifecycle', 'store', 'docker', 'targets'] as const;
export type WorkerRole = (typeof WORKER_ROLES)[number];

/** Host id of the docker worker when none is given: the single-machine default. */
export const DEFAULT_HOST_ID = 'local';

export function storeQueue(taskQueue: string): string {
  return `${taskQueue}-store`;
}

export function dockerQueue(taskQueue: string, hostId: string): string {
  return `${taskQueue}-docker-${hostId}`;
}

export function targetsQueue(taskQueue: string): string {
  return `${taskQueue}-targets`;
}
