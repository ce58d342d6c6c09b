import assert from 'node:assert/strict';
import { isSandboxPlaneError } from '../../src/domain/errors';

/**
 * A check for `assert.rejects(work, rejectsWith(code, message))`, or to call on an error
 * in hand: it is a SandboxPlaneError with this `code`, and its message matches `message`.
 */
export function rejectsWith(code: string, message?: RegExp): (err: unknown) => true {
  return (err: unknown) => {
    assert.ok(isSandboxPlaneError(err), `expected a SandboxPlaneError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    if (message !== undefined) assert.match(err.message, message);
    return true;
  };
}
