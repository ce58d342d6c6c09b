import { SandboxPlaneError } from '../domain/errors';

/** gRPC status codes the client turns into taxonomy codes. */
export const GRPC_DEADLINE_EXCEEDED = 4;
export const GRPC_NOT_FOUND = 5;
export const GRPC_UNAVAILABLE = 14;

/** No sandbox with this id, or none this caller may see: one message for both, so a bound caller learns nothing of others' ids. */
export function sandboxNotFound(sandboxId: string): SandboxPlaneError {
  return new SandboxPlaneError('NOT_FOUND', `no sandbox ${sandboxId}`, { details: { sandboxId } });
}

/**
 * The taxonomy error of a gRPC status the SDK's client and the CLI's lean status query both
 * meet (`details` is the status message); `undefined` for a code without one of its own.
 */
export function errorOfGrpcStatus(code: number, details: string, sandboxId: string, cause: unknown): SandboxPlaneError | undefined {
  if (code === GRPC_NOT_FOUND) return sandboxNotFound(sandboxId);
  if (code === GRPC_UNAVAILABLE) return new SandboxPlaneError('TEMPORAL_UNREACHABLE', details, { cause });
  if (code === GRPC_DEADLINE_EXCEEDED) return new SandboxPlaneError('WAIT_TIMEOUT', details, { cause });
  return undefined;
}
