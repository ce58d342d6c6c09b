import { ApplicationFailure } from '@temporalio/activity';
import { isSandboxPlaneError } from '../domain/errors';

/**
 * A taxonomy error as a Temporal failure: `type` is the code (what
 * `nonRetryableErrorTypes` matches) and the retry verdict travels with it. Anything
 * else passes through unchanged and is retried by the activity's policy.
 */
export function asActivityFailure(err: unknown): unknown {
  if (!isSandboxPlaneError(err)) return err;
  return ApplicationFailure.create({
    type: err.code,
    message: err.message,
    nonRetryable: !err.retryable,
    details: [{ code: err.code, hint: err.hint, details: err.details }],
    ...(err instanceof Error ? { cause: err } : {}),
  });
}

/** Runs `work`, turning a taxonomy error into its Temporal failure. */
export async function withTaxonomy<T>(work: () => Promise<T> | T): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw asActivityFailure(err);
  }
}
