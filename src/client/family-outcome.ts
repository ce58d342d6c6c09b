import type { ErrorCode } from '../domain/error-codes';
import { SandboxPlaneError } from '../domain/errors';
import type { SandboxStatus } from '../domain/lifecycle-messages';

/**
 * What a fork of many or an act on a family came to, and its first failure: apart from
 * the fan-out (`sandbox-family.ts`) because the CLI reads these without the Temporal SDK
 * loaded (docs/performance.md#cli-start-up).
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
