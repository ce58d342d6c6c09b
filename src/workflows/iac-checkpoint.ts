import { isCancellation } from '@temporalio/workflow';
import type { IacPlace } from '../activities';
import type { SnapshotContent } from '../domain/snapshots';
import { checkpointSteps } from './iac-steps';
import { failureCode } from './workflow-failures';

type SandboxPlace = Extract<IacPlace, { kind: 'sandbox' }>;

/**
 * A sandbox's state just before an apply (DESIGN §14, §15), so that a failed apply can be
 * undone: an emulator does not roll back. Its content is sealed in the snapshot directory
 * (the run's history carries its digest), not among the principal's snapshots: held by no
 * snapshot, the sweep removes it a day later. An emulator that cannot give
 * its state (Floci), or a state over the cap, means no checkpoint: the apply goes on, and
 * the run says so.
 */
export class IacCheckpoint {
  private content: SnapshotContent | undefined;
  /** Why there is no checkpoint, once taking one failed. */
  private missing: string | undefined;

  constructor(
    private readonly place: SandboxPlace,
    private readonly taskQueue: string,
  ) {}

  /** Takes the checkpoint; what the run's trail records of it, or `undefined` when there is none. */
  async take(): Promise<{ digest: string; bytes: number } | undefined> {
    try {
      this.content = await checkpointSteps(this.taskQueue).captureSnapshot({ sandboxId: this.place.sandboxId, adapter: this.place.adapter, runtime: this.place.runtime });
      return { digest: this.content.digest, bytes: this.content.bytes };
    } catch (err) {
      if (isCancellation(err)) throw err;
      const { code, message } = failureCode(err, 'INTERNAL');
      this.missing = `no checkpoint was taken (${code}: ${message})`;
      return undefined;
    }
  }

  /** What the run tells while applying: whether a failure will be undone. */
  get promise(): string {
    return this.missing === undefined ? 'The sandbox was checkpointed first: a failed apply puts it back as it was.' : `A failed apply leaves what it made: ${this.missing}.`;
  }

  /** Puts the sandbox back as it was before the apply; the sentence the run's verdict ends with, and whether it worked. */
  async putBack(): Promise<{ restored: boolean; note: string }> {
    if (this.content === undefined) return { restored: false, note: `The sandbox keeps what the apply made: ${this.missing ?? 'no checkpoint was taken'}.` };
    try {
      await checkpointSteps(this.taskQueue).restoreSnapshot({
        sandboxId: this.place.sandboxId,
        adapter: this.place.adapter,
        runtime: this.place.runtime,
        content: this.content,
        // As it was, keys included: the sandbox's key is the lifecycle's, which this run does not hold.
        target: { services: [], from: this.place.sandboxId, verbatim: true },
      });
      return {
        restored: true,
        note: 'The sandbox was put back as it was before the apply (its checkpoint): nothing the apply made remains, nor anything else changed in it since, and resources lists what the stack held when it failed.',
      };
    } catch (err) {
      if (isCancellation(err)) throw err;
      const { code, message } = failureCode(err, 'INTERNAL');
      return { restored: false, note: `Putting the sandbox back failed (${code}: ${message}): it keeps what the apply made.` };
    }
  }
}
