import { ERROR_CODES, EXIT_CODE_BY_CATEGORY, isErrorCode, type ErrorCode } from './error-codes';

/** Extra, read-only facts about a failure (field names, ids); never secrets. */
export type ErrorDetails = Readonly<Record<string, unknown>>;

/**
 * The base of every error this project raises on purpose. It carries a stable
 * taxonomy code that decides retrying, the CLI exit code and the hint a person sees.
 */
export class SandboxPlaneError extends Error {
  override readonly name: string = 'SandboxPlaneError';
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly hint: string;
  readonly details: ErrorDetails;

  constructor(code: ErrorCode, message: string, options: { hint?: string; details?: ErrorDetails; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retryable = ERROR_CODES[code].retryable;
    this.hint = options.hint ?? ERROR_CODES[code].hint;
    this.details = Object.freeze({ ...(options.details ?? {}) });
  }

  get exitCode(): number {
    return EXIT_CODE_BY_CATEGORY[ERROR_CODES[this.code].category];
  }

  /** What callers print and send: the code, message and hint, and the IaC run the error is about (`runId`) as a field of its own. */
  toJSON(): { code: ErrorCode; message: string; hint: string; runId?: string } {
    const runId = this.details.runId;
    return { code: this.code, message: this.message, hint: this.hint, ...(typeof runId === 'string' ? { runId } : {}) };
  }
}

/**
 * Type guard that also works where `instanceof` fails (errors crossing the workflow
 * sandbox or arriving as Temporal failures): anything with a known `code` and a message.
 */
export function isSandboxPlaneError(err: unknown): err is SandboxPlaneError {
  if (err instanceof SandboxPlaneError) return true;
  if (typeof err !== 'object' || err === null) return false;
  const candidate = err as { code?: unknown; message?: unknown; hint?: unknown };
  return isErrorCode(candidate.code) && typeof candidate.message === 'string' && typeof candidate.hint === 'string';
}
