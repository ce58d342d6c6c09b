import type { ErrorCode } from '../domain/error-codes';
import type { IacState } from '../domain/iac/iac-run';

/** Ends an IaC run in `state` with a taxonomy code: a refusal or a failure the run itself decided, not a crash. */
export class IacRefused extends Error {
  constructor(
    readonly state: IacState,
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}
