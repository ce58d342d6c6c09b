import type { Worker } from '@temporalio/worker';

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
