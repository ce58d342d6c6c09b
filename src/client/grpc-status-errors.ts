import { SandboxPlaneError } from '../domain/errors';
import { sandboxNotFound } from './sandbox-not-found';

/** gRPC status codes the client turns into taxonomy codes. */
export const GRPC_OK = 0;
export const GRPC_DEADLINE_EXCEEDED = 4;
export const GRPC_NOT_FOUND = 5;
export const GRPC_UNIMPLEMENTED = 12;
export const GRPC_UNAVAILABLE = 14;

const GRPC_STATUS_NAMES: Readonly<Record<number, string>> = {
  [GRPC_OK]: 'OK',
  [GRPC_DEADLINE_EXCEEDED]: 'DEADLINE_EXCEEDED',
  [GRPC_NOT_FOUND]: 'NOT_FOUND',
  [GRPC_UNIMPLEMENTED]: 'UNIMPLEMENTED',
  [GRPC_UNAVAILABLE]: 'UNAVAILABLE',
};

/** The message grpc-js gives a failed call's error (`callErrorFromStatus`): `4 DEADLINE_EXCEEDED: details`. */
export function grpcErrorMessage(code: number, details: string): string {
  return `${code} ${GRPC_STATUS_NAMES[code] ?? 'UNKNOWN'}: ${details}`;
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
