import { z } from 'zod';
import { isSandboxPlaneError } from '../domain/errors';
import type { SandboxStatus } from '../domain/lifecycle-messages';
import { isTerminal } from '../domain/sandbox-states';
import { parseOrThrow } from '../domain/validation';
import { toSandboxError } from './client-errors';
import type { FamilyOutcome, ForkResult } from './family-outcome';

export { failedOutcome, firstFailure, type FamilyOutcome, type ForkResult, type SandboxTree } from './family-outcome';

/**
 * Fork many and trees (DESIGN §15): one snapshot into N sandboxes at once, and a family
 * listed, extended and destroyed as one. Each member is an ordinary sandbox (its own
 * workflow, screening, placement and quota); this module only fans out and gathers.
 */

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
