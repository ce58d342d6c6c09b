import type { IacStackClaim } from '../domain/iac/iac-run';

/** One stack's turn: the run that changes it now, and those that wait, oldest first. */
interface StackLock {
  holder: IacStackClaim;
  waiting: IacStackClaim[];
}

/** What a lifecycle hands to its next run when it continues as new. */
export type CarriedIacLocks = readonly { readonly stack: string; readonly holder: IacStackClaim; readonly waiting: readonly IacStackClaim[] }[];

/** Claims beyond this many waiting for one sandbox are refused: a flood must not grow the lifecycle's state. */
const WAITING_LIMIT = 50;

export type ClaimOutcome = { readonly granted: true } | { readonly granted: false; readonly behind: IacStackClaim } | { readonly full: true };

/**
 * The turns of a sandbox's stacks (DESIGN §14: one run at a time changes a given stack;
 * another waits its turn), kept by the sandbox's lifecycle. A holder whose lease ran out
 * (its run's workflow timed out, or was terminated and its deadline passed) loses its
 * turn the next time anyone claims.
 */
export class IacStackLocks {
  private readonly locks = new Map<string, StackLock>();

  constructor(carried: CarriedIacLocks = []) {
    for (const { stack, holder, waiting } of carried) this.locks.set(stack, { holder, waiting: [...waiting] });
  }

  carried(): CarriedIacLocks {
    return [...this.locks].map(([stack, lock]) => ({ stack, holder: lock.holder, waiting: [...lock.waiting] }));
  }

  /** Whether any run holds or waits for a stack. */
  get busy(): boolean {
    return this.locks.size > 0;
  }

  /**
   * A run asks for its stack: granted when it is free, already the run's, or its holder's
   * lease ran out and no one waits before it; else the run waits behind the holder. A
   * run that claims again (its wait for an expired lease ended) keeps its place.
   */
  claim(claim: IacStackClaim, nowMs: number): ClaimOutcome {
    const lock = this.locks.get(claim.stack);
    if (lock === undefined) {
      this.locks.set(claim.stack, { holder: claim, waiting: [] });
      return { granted: true };
    }
    if (lock.holder.runId === claim.runId) return { granted: true };
    if (!lock.waiting.some((waiting) => waiting.runId === claim.runId)) {
      if (lock.waiting.length >= WAITING_LIMIT) return { full: true };
      lock.waiting.push(claim);
    }
    if (lock.holder.leaseUntilMs <= nowMs) this.passOn(claim.stack, lock, nowMs);
    const now = this.locks.get(claim.stack) as StackLock;
    return now.holder.runId === claim.runId ? { granted: true } : { granted: false, behind: now.holder };
  }

  /** The run is done with its stack: the next waiting run (whose lease still runs) gets it, and is returned to be told. */
  release(runId: string, stack: string, nowMs: number): IacStackClaim | undefined {
    const lock = this.locks.get(stack);
    if (lock === undefined) return undefined;
    if (lock.holder.runId !== runId) {
      lock.waiting = lock.waiting.filter((waiting) => waiting.runId !== runId);
      return undefined;
    }
    return this.passOn(stack, lock, nowMs);
  }

  private passOn(stack: string, lock: StackLock, nowMs: number): IacStackClaim | undefined {
    const next = lock.waiting.filter((waiting) => waiting.leaseUntilMs > nowMs);
    const holder = next.shift();
    if (holder === undefined) {
      this.locks.delete(stack);
      return undefined;
    }
    this.locks.set(stack, { holder, waiting: next });
    return holder;
  }

  /** Every run that holds or waits for a stack, forgotten: the sandbox is ending, and each is told so. */
  drain(): IacStackClaim[] {
    const all = [...this.locks.values()].flatMap((lock) => [lock.holder, ...lock.waiting]);
    this.locks.clear();
    return all;
  }
}
