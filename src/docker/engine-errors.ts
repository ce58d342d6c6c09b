import { SandboxPlaneError, isSandboxPlaneError } from '../domain/errors';

/** What the broker was doing when the engine failed; goes into messages and details. */
export interface EngineCallContext {
  readonly operation: string;
  readonly endpoint: string;
  readonly containerId?: string;
  readonly image?: string;
}

/** Socket-level failures: nobody answers at DOCKER_HOST (yet). */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ENOENT', 'EACCES', 'EPERM', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

interface EngineErrorShape {
  readonly statusCode?: unknown;
  readonly code?: unknown;
  readonly json?: unknown;
  readonly message?: unknown;
}

/** The HTTP status of an engine answer, or undefined for a transport failure. */
export function engineStatusCode(err: unknown): number | undefined {
  const status = (err as EngineErrorShape | null)?.statusCode;
  return typeof status === 'number' ? status : undefined;
}

/** The engine's own message (`{"message": "..."}` body), falling back to the error text. */
export function engineMessage(err: unknown): string {
  const shape = err as EngineErrorShape | null;
  const json = shape?.json;
  if (typeof json === 'object' && json !== null && typeof (json as { message?: unknown }).message === 'string') {
    return (json as { message: string }).message;
  }
  return typeof shape?.message === 'string' ? shape.message.trim() : String(err);
}

/**
 * Maps a dockerode/engine failure onto the taxonomy: unreachable engine and engine
 * 5xx are retryable; a missing image, a missing container, a conflict or a rejected
 * request are not. Errors already in the taxonomy pass through.
 */
export function mapEngineError(err: unknown, context: EngineCallContext): SandboxPlaneError {
  if (isSandboxPlaneError(err)) return err as SandboxPlaneError;
  const details = { ...context };
  const status = engineStatusCode(err);
  const text = engineMessage(err);
  if (status === undefined) {
    const code = (err as EngineErrorShape | null)?.code;
    if (typeof code === 'string' && UNREACHABLE_CODES.has(code)) {
      return new SandboxPlaneError('DOCKER_UNREACHABLE', `Docker engine at ${context.endpoint} is unreachable during ${context.operation} (${code})`, {
        details: { ...details, errno: code },
        cause: err,
      });
    }
    return new SandboxPlaneError('DOCKER_ENGINE_ERROR', `Docker ${context.operation} failed: ${text}`, { details, cause: err });
  }
  const subject = context.containerId === undefined ? '' : ` for container ${context.containerId}`;
  if (status === 404 && /no such image/i.test(text)) {
    return new SandboxPlaneError('DOCKER_IMAGE_MISSING', `Image ${context.image ?? '(unknown)'} is not on the engine at ${context.endpoint}: ${text}`, {
      details,
      cause: err,
    });
  }
  if (status === 404) {
    return new SandboxPlaneError('CONTAINER_NOT_FOUND', `Docker ${context.operation}${subject}: ${text}`, { details, cause: err });
  }
  if (status === 409) {
    return new SandboxPlaneError('CONTAINER_CONFLICT', `Docker ${context.operation}${subject} conflicts: ${text}`, { details, cause: err });
  }
  if (status === 400) {
    return new SandboxPlaneError('DOCKER_REQUEST_REJECTED', `Docker ${context.operation}${subject} rejected: ${text}`, { details, cause: err });
  }
  return new SandboxPlaneError('DOCKER_ENGINE_ERROR', `Docker ${context.operation}${subject} failed (HTTP ${status}): ${text}`, {
    details: { ...details, statusCode: status },
    cause: err,
  });
}
