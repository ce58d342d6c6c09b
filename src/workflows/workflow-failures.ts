import { ActivityFailure, ApplicationFailure, TimeoutFailure } from '@temporalio/workflow';
import type { ErrorCode } from '../domain/error-codes';
import { isErrorCode } from '../domain/error-codes';
import type { LifecycleError } from '../domain/lifecycle-record';

/** The taxonomy code of a failed activity; anything outside the taxonomy gets `fallback`. */
export function failureCode(err: unknown, fallback: ErrorCode): LifecycleError {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure && isErrorCode(cause.type)) return { code: cause.type, message: cause.message };
  if (cause instanceof TimeoutFailure) return { code: fallback, message: `the activity timed out (${cause.timeoutType})` };
  const message = cause instanceof Error ? cause.message : err instanceof Error ? err.message : String(err);
  return { code: fallback, message };
}

/** A refusal a caller sees as a typed error: update validators and handlers throw these. */
export function refusal(code: ErrorCode, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: code, message, nonRetryable: true });
}
