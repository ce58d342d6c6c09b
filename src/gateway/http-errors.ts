import type { ServerResponse } from 'node:http';
import { toSandboxError } from '../client/client-errors';
import { ERROR_CODES, type ErrorCode } from '../domain/error-codes';
import type { SandboxPlaneError } from '../domain/errors';

/** Codes whose HTTP status is not their category's. */
const STATUS_BY_CODE: Partial<Record<ErrorCode, number>> = {
  UNAUTHENTICATED: 401,
  RATE_LIMITED: 429,
  INVALID_STATE: 409,
  IDEMPOTENCY_CONFLICT: 409,
  WAIT_TIMEOUT: 504,
};

/** The HTTP status of a taxonomy code: by its category (DESIGN §6) unless {@link STATUS_BY_CODE} says otherwise. */
export function httpStatusOf(error: SandboxPlaneError): number {
  const own = STATUS_BY_CODE[error.code];
  if (own !== undefined) return own;
  switch (ERROR_CODES[error.code].category) {
    case 'invalid':
      return 400;
    case 'refused':
      return 403;
    case 'not_found':
      return 404;
    default:
      return error.retryable ? 503 : 500;
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store', ...headers });
  res.end(text);
}

/** `{"error": {"code", "message", "hint"}}` (DESIGN §11), with the sandbox's status when the error carries one; the HTTP status it answered. */
export function sendError(res: ServerResponse, err: unknown, subject: string): { status: number; code: ErrorCode } {
  const error = toSandboxError(err, subject);
  const allow = error.details.allow;
  const status = typeof allow === 'string' ? 405 : httpStatusOf(error);
  const sandbox = error.details.status;
  const retryAfter = error.details.retryAfterSeconds;
  const headers = {
    ...(typeof retryAfter === 'number' ? { 'retry-after': String(retryAfter) } : {}),
    ...(typeof allow === 'string' ? { allow } : {}),
    ...(error.code === 'UNAUTHENTICATED' ? { 'www-authenticate': 'Bearer' } : {}),
  };
  sendJson(res, status, { error: error.toJSON(), ...(sandbox !== undefined ? { status: sandbox } : {}) }, headers);
  return { status, code: error.code };
}
