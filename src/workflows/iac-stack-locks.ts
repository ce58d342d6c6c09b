import type { IacStackClaim } from '../domain/iac/iac-run';

/** A claim that holds its stack, until `leaseUntilMs` at the latest. */
export type HeldClaim = IacStackClaim & { readonly leaseUntilMs: number };

/** One stack's turn: the run that changes it now, and those that wait, oldest first. */
interface StackLock {
  holder: HeldClaim;
  waiting: IacStackClaim[];
}

/** What a keeper hands to its next run when it continues as new. */
export type CarriedIacLocks = readonly { readonly stack: string; readonly holder: HeldClaim; readonly waiting: readonly IacStackClaim[] }[];

/** Claims beyond this many waiting for one stack are refused: a flood must not grow the keeper's state. */
const WAITING_LIMIT = 50;
/** Runs of one principal holding or waiting for one stack, at most (DESIGN §18): no principal can hold another's turn by queueing. */
export const WAITING_PER_PRINCIPAL = 3;

/** A holder whose lease ran out, and the waiter that holds the stack now (if any): both are to be told. */
export interface Handover {
  readonly passedOver: HeldClaim;
  readonly next: HeldClaim | undefined;
}

export type ClaimOutcome =
  | { readonly granted: true; readonly handover?: Handover }
  | { readonly granted: false; readonly behind: HeldClaim; readonly handover?: Handover }
  /** Refused: the stack's line is full, or the claim's principal already has its share of it in line (`principal`). */
  | { readonly full: true; readonly principal?: boolean };

/**
 * The turns of stacks (DESIGN §14: one run at a time changes a given stack; another
 * waits its turn), kept by a sandbox's lifecycle or a target's keeper. A run holds its
 * stack for the lease its claim asks for, counted from when it is granted; past that the
 * next claim (or the keeper's timer) passes the stack on and the holder is told.
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

  /** When the first lease runs out (`undefined`: no stack is held). */
  get nextExpiryMs(): number | undefined {
    const leases = [...this.locks.values()].map((lock) => lock.holder.leaseUntilMs);
    return leases.length === 0 ? undefined : Math.min(...leases);
  }

  /**
   * A run asks for its stack: granted when it is free or already the run's; else the run
   * waits behind the holder (keeping its place when it asks again). A holder whose lease
   * ran out is passed over first.
   */
  claim(claim: IacStackClaim, nowMs: number): ClaimOutcome {
    const lock = this.locks.get(claim.stack);
    if (lock === undefined) {
      this.locks.set(claim.stack, { holder: held(claim, nowMs), waiting: [] });
      return { granted: true };
    }
    if (lock.holder.runId === claim.runId) return { granted: true };
    if (!lock.waiting.some((waiting) => waiting.runId === claim.runId)) {
      if (lock.waiting.length >= WAITING_LIMIT) return { full: true };
      const own = [lock.holder, ...lock.waiting].filter((other) => other.principal === claim.principal).length;
      if (own >= WAITING_PER_PRINCIPAL) return { full: true, principal: true };
      lock.waiting.push(claim);
    }
    const handover = lock.holder.leaseUntilMs <= nowMs ? this.passOn(claim.stack, lock, nowMs) : undefined;
    const now = this.locks.get(claim.stack) as StackLock;
    const extra = handover === undefined ? {} : { handover };
    return now.holder.runId === claim.runId ? { granted: true, ...extra } : { granted: false, behind: now.holder, ...extra };
  }

  /** The run is done with its stack (or gives up waiting): the next waiting run gets it, and is returned to be told. */
  release(runId: string, stack: string, nowMs: number): HeldClaim | undefined {
    const lock = this.locks.get(stack);
    if (lock === undefined) return undefined;
    if (lock.holder.runId !== runId) {
      lock.waiting = lock.waiting.filter((waiting) => waiting.runId !== runId);
      return undefined;
    }
    return this.passOn(stack, lock, nowMs).next;
  }

  /** Passes over every holder whose lease ran out by `nowMs`: the keeper's timer, so a dead holder does not keep its stack. */
  expire(nowMs: number): Handover[] {
    const handovers: Handover[] = [];
    for (const [stack, lock] of [...this.locks]) {
      if (lock.holder.leaseUntilMs <= nowMs) handovers.push(this.passOn(stack, lock, nowMs));
    }
    return handovers;
  }

  private passOn(stack: string, lock: StackLock, nowMs: number): Handover {
    const passedOver = lock.holder;
    const [next, ...rest] = lock.waiting;
    if (next === undefined) {
      this.locks.delete(stack);
      return { passedOver, next: undefined };
    }
    const holder = held(next, nowMs);
    this.locks.set(stack, { holder, waiting: rest });
    return { passedOver, next: holder };
  }

  /** Every run that holds or waits for a stack, forgotten: the sandbox is ending, and each is told so. */
  drain(): IacStackClaim[] {
    const all = [...this.locks.values()].flatMap((lock) => [lock.holder, ...lock.waiting]);
    this.locks.clear();
    return all;
  }
}

function held(claim: IacStackClaim, nowMs: number): HeldClaim {
  return { ...claim, leaseUntilMs: nowMs + claim.leaseMs };
}
