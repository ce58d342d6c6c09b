import { WorkflowNotFoundError, WorkflowUpdateRPCTimeoutOrCancelledError, isGrpcServiceError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { isErrorCode } from '../domain/error-codes';
import { isSandboxPlaneError, SandboxPlaneError } from '../domain/errors';

/** gRPC status codes the client turns into taxonomy codes. */
const GRPC_UNAVAILABLE = 14;
const GRPC_DEADLINE_EXCEEDED = 4;
export const GRPC_NOT_FOUND = 5;

/**
 * The one error-translation path: whatever the Temporal client (or anything else)
 * throws becomes a {@link SandboxPlaneError} with a taxonomy code, so the SDK, the CLI
 * and the MCP server report one kind of error whatever went wrong.
 */
export function toSandboxError(err: unknown, sandboxId = '(unnamed)'): SandboxPlaneError {
  if (err instanceof SandboxPlaneError) return err;
  if (isSandboxPlaneError(err)) return new SandboxPlaneError(err.code, err.message, { hint: err.hint, cause: err });
  if (err instanceof WorkflowNotFoundError) {
    return new SandboxPlaneError('NOT_FOUND', `no sandbox ${sandboxId}`, { details: { sandboxId } });
  }
  if (err instanceof ApplicationFailure && isErrorCode(err.type)) {
    return new SandboxPlaneError(err.type, err.message, { details: { ...carriedDetails(err), sandboxId }, cause: err });
  }
  if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError) {
    return new SandboxPlaneError('WAIT_TIMEOUT', `sandbox ${sandboxId} did not answer in time`, { cause: err });
  }
  if (isGrpcServiceError(err)) {
    if (err.code === GRPC_NOT_FOUND) return new SandboxPlaneError('NOT_FOUND', `no sandbox ${sandboxId}`, { details: { sandboxId } });
    if (err.code === GRPC_UNAVAILABLE) return new SandboxPlaneError('TEMPORAL_UNREACHABLE', err.details || err.message, { cause: err });
    if (err.code === GRPC_DEADLINE_EXCEEDED) return new SandboxPlaneError('WAIT_TIMEOUT', err.details || err.message, { cause: err });
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
