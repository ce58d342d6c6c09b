import { z } from 'zod';
import { isSandboxPlaneError, SandboxPlaneError } from '../domain/errors';
import type { ErrorCode } from '../domain/error-codes';
import type { SandboxStatus } from '../domain/lifecycle-messages';
import { isTerminal } from '../domain/sandbox-states';
import { parseOrThrow } from '../domain/validation';
import { toSandboxError } from './client-errors';

/**
 * Fork many and trees (DESIGN §15): one snapshot into N sandboxes at once, and a family
 * listed, extended and destroyed as one. Each member is an ordinary sandbox (its own
 * workflow, screening, placement and quota); this module only fans out and gathers.
 */

/** What one sandbox of a fork or a tree came to: its status (READY, or ended with its error), or the error that kept it from starting or changing. */
export type FamilyOutcome = SandboxStatus | { readonly id: string; readonly error: { readonly code: ErrorCode; readonly message: string } };

/** `sandboxctl fork --count`, SDK `fork(snapshotId, { count })`: every fork's outcome, in the order asked. */
export interface ForkResult {
  readonly sandboxes: FamilyOutcome[];
}

/** `sandboxctl tree`: the root's id and every sandbox of its family, the root first, ended ones too. */
export interface SandboxTree {
  readonly root: string;
  readonly sandboxes: FamilyOutcome[];
}

/** What the fan-out needs of a sandbox client: one sandbox at a time. */
export interface FamilyMembers {
  createOne(id: string): Promise<SandboxStatus>;
  get(id: string): Promise<SandboxStatus | undefined>;
}

export function forkCountSchema(forkMax: number) {
  return z
    .number()
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(forkMax, `must be at most ${forkMax} (SANDBOXPLANE_FORK_MAX): fork in batches, or ask the operator for a higher limit`);
}

/** N forks at once, each under an id of its own; each READY (or as far as `wait` asked) or its own failure named. */
export async function forkMany(members: FamilyMembers, count: number, forkMax: number, newId: () => string): Promise<ForkResult> {
  parseOrThrow(forkCountSchema(forkMax), count, 'count');
  const ids = Array.from({ length: count }, newId);
  return { sandboxes: await Promise.all(ids.map((id) => outcomeOf(id, members.createOne(id), members))) };
}

/**
 * The outcome of `work` on sandbox `id`: its status, or, when it failed, the sandbox's
 * status if it ended (its own error says why) or else the failure itself.
 */
export async function outcomeOf(id: string, work: Promise<SandboxStatus>, members: Pick<FamilyMembers, 'get'>): Promise<FamilyOutcome> {
  try {
    return await work;
  } catch (err) {
    const status = await members.get(id).catch(() => undefined);
    if (status !== undefined && isTerminal(status.state) && status.error !== null) return status;
    // Whatever failed (a connection lost mid-way too), the others' outcomes are still told.
    const failure = isSandboxPlaneError(err) ? err : toSandboxError(err, id);
    return { id, error: { code: failure.code, message: failure.message } };
  }
}

/** Whether an outcome is a failure: an error, or a sandbox that ended other than DESTROYED. */
export function failedOutcome(outcome: FamilyOutcome): { code: ErrorCode; message: string } | undefined {
  if ('error' in outcome && !('state' in outcome)) return outcome.error;
  const status = outcome as SandboxStatus;
  return status.error ?? undefined;
}

/**
 * The first failure among `outcomes`, as an error whose code is that failure's (the CLI's
 * exit class), for a caller that prints them all first. For a fork every sandbox that did
 * not come up failed; for an act on a tree (`acted`), only what the act itself could not
 * do: a member that had ended before, DENIED or EXPIRED, is no failure of a teardown.
 */
export function firstFailure(outcomes: readonly FamilyOutcome[], what: string, options: { acted?: boolean } = {}): SandboxPlaneError | undefined {
  const counted = (outcome: FamilyOutcome) => options.acted !== true || !('state' in outcome) || outcome.state === 'DESTROY_FAILED';
  const failures = outcomes
    .filter(counted)
    .map((outcome) => ({ id: outcome.id, failure: failedOutcome(outcome) }))
    .filter((entry) => entry.failure !== undefined);
  const first = failures[0];
  if (first?.failure === undefined) return undefined;
  return new SandboxPlaneError(first.failure.code, `${failures.length} of ${outcomes.length} ${what} failed; ${first.id}: ${first.failure.message}`);
}
