import { WorkflowNotFoundError, WorkflowUpdateRPCTimeoutOrCancelledError, isGrpcServiceError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { isErrorCode } from '../domain/error-codes';
import { isSandboxPlaneError, SandboxPlaneError } from '../domain/errors';
import { errorOfGrpcStatus } from './grpc-status-errors';
import { sandboxNotFound } from './sandbox-not-found';

/**
 * The one error-translation path: whatever the Temporal client (or anything else)
 * throws becomes a {@link SandboxPlaneError} with a taxonomy code, so the SDK, the CLI
 * and the MCP server report one kind of error whatever went wrong.
 */
export function toSandboxError(err: unknown, sandboxId = '(unnamed)'): SandboxPlaneError {
  if (err instanceof SandboxPlaneError) return err;
  if (isSandboxPlaneError(err)) return new SandboxPlaneError(err.code, err.message, { hint: err.hint, cause: err });
  if (err instanceof WorkflowNotFoundError) return sandboxNotFound(sandboxId);
  if (err instanceof ApplicationFailure && isErrorCode(err.type)) {
    return new SandboxPlaneError(err.type, err.message, { details: { ...carriedDetails(err), sandboxId }, cause: err });
  }
  if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError) {
    return new SandboxPlaneError('WAIT_TIMEOUT', `sandbox ${sandboxId} did not answer in time`, { cause: err });
  }
  if (isGrpcServiceError(err)) {
    const mapped = errorOfGrpcStatus(err.code, err.details || err.message, sandboxId, err);
    if (mapped !== undefined) return mapped;
  }
  const cause = (err as { cause?: unknown } | null)?.cause;
  if (cause !== undefined && cause !== err) {
    const mapped = toSandboxError(cause, sandboxId);
    if (mapped.code !== 'INTERNAL') return mapped;
  }
  return new SandboxPlaneError('INTERNAL', err instanceof Error ? err.message : String(err), { cause: err });
}

/** The details a taxonomy failure carries (activities/activity-failure.ts puts them in its first detail), if any. */
function carriedDetails(failure: ApplicationFailure): Record<string, unknown> {
  const first: unknown = failure.details?.[0];
  const details = typeof first === 'object' && first !== null ? (first as { details?: unknown }).details : undefined;
  return typeof details === 'object' && details !== null ? { ...(details as Record<string, unknown>) } : {};
}

/** What `work` gives, or `undefined` when it fails NOT_FOUND: a `get` beside a `status`. */
export async function unlessNotFound<T>(work: Promise<T>): Promise<T | undefined> {
  try {
    return await work;
  } catch (err) {
    if (err instanceof SandboxPlaneError && err.code === 'NOT_FOUND') return undefined;
    throw err;
  }
}
