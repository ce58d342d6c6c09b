import type { ErrorCode } from '../domain/error-codes';
import { SandboxPlaneError } from '../domain/errors';

/** The codes a spec refusal can carry (one per rule; docs/security.md lists them). */
export type SpecRefusalCode = Extract<ErrorCode, `SPEC_${string}`>;

/** One broken rule: which field, which rule, and a sentence naming both. */
export interface SpecViolation {
  readonly code: SpecRefusalCode;
  /** Path of the offending field, e.g. `binds[0]` or `ports[1].hostIp`. */
  readonly field: string;
  readonly message: string;
}

/**
 * A container spec refused before any engine call. `code` is the first broken rule's;
 * `violations` lists every broken rule so one attempt shows them all.
 */
export class SpecRefusedError extends SandboxPlaneError {
  override readonly name = 'SpecRefusedError';
  readonly field: string;
  readonly violations: readonly SpecViolation[];

  constructor(violations: readonly [SpecViolation, ...SpecViolation[]]) {
    const [first] = violations;
    const message =
      violations.length === 1
        ? first.message
        : `${first.message} (and ${violations.length - 1} more: ${violations
            .slice(1)
            .map((violation) => violation.message)
            .join('; ')})`;
    super(first.code, message, {
      details: { field: first.field, violations: violations.map((violation) => ({ ...violation })) },
    });
    this.field = first.field;
    this.violations = Object.freeze(violations.map((violation) => Object.freeze({ ...violation })));
  }
}
