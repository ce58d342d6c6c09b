import type { AdapterContext } from './cloud-emulator-adapter';

/** How often a start waiting for a slot heartbeats: well inside the runtime activities' 30 s heartbeat timeout. */
const WAITING_HEARTBEAT_MS = 5_000;

/**
 * How many emulators one docker host starts at once (SANDBOXPLANE_EMULATOR_START_CONCURRENCY),
 * and the queue of those that wait (issue 42, bursts). An emulator's start is CPU-bound
 * (moto imports its services, Floci boots a JVM): fifty started at once on two cores each
 * take as long as all fifty together, and every one of them then runs into its health
 * timeout at the same moment. Started a few at a time, each passes its health check in
 * about the time it takes alone, the host's CPU is as busy, and the last is READY no later.
 *
 * A slot covers what costs the emulator's CPU: the container's start, its health wait and
 * the first call into it (minting, or a warm pool container's warm-up). The health timeout
 * counts from when the slot is taken, so waiting in the queue is never a death. Waits are
 * served in arrival order, and a start whose activity is cancelled leaves the queue.
 */
export class StartSlots {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`start slots must be a whole number of at least 1, got ${size}`);
  }

  /** Starts now or, when every slot is taken, waits its turn (heartbeating); resolves with the slot's release. */
  async take(context: AdapterContext): Promise<() => void> {
    if (this.running < this.size && this.waiting.length === 0) {
      this.running += 1;
    } else {
      // A release hands its slot straight to the first in the queue, so none jumps it.
      await this.queue(context);
    }
    return this.releaser();
  }

  /** The starts holding a slot now and those waiting for one. */
  depth(): { running: number; waiting: number; size: number } {
    return { running: this.running, waiting: this.waiting.length, size: this.size };
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next === undefined) this.running -= 1;
      else next();
    };
  }

  private queue(context: AdapterContext): Promise<void> {
    const { cancelled } = context;
    return new Promise<void>((resolve, reject) => {
      const beat = () => context.heartbeat({ step: 'waiting for a start slot', ahead: this.waiting.indexOf(turn), running: this.running });
      const ticker = setInterval(beat, WAITING_HEARTBEAT_MS);
      const leave = () => {
        clearInterval(ticker);
        cancelled?.removeEventListener('abort', onAbort);
      };
      const turn = () => {
        leave();
        resolve();
      };
      const onAbort = () => {
        leave();
        const at = this.waiting.indexOf(turn);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(cancelled?.reason instanceof Error ? cancelled.reason : new Error('cancelled while waiting for a start slot'));
      };
      if (cancelled?.aborted === true) {
        onAbort();
        return;
      }
      cancelled?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(turn);
      beat();
    });
  }
}
