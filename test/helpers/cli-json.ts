import assert from 'node:assert/strict';
import type { CliResult } from '../harness/cli';

/** What `sandboxctl … --json` prints on stderr when it fails (DESIGN §11). */
export interface CliError {
  readonly code: string;
  readonly message: string;
  readonly hint: string;
}

/** The JSON document a command printed on stdout, once it exited 0. */
export function cliOutput<T>(result: CliResult): T {
  assert.equal(result.code, 0, `exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

/** The `{"error": ...}` document on stderr of a command that failed with `exitCode` and `code`; stdout stays empty and a hint says what to do. */
export function cliFailure(result: CliResult, exitCode: number, code: string): CliError {
  assert.equal(result.code, exitCode, `exit ${result.code}, expected ${exitCode}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
  assert.equal(result.stdout, '');
  const { error } = JSON.parse(result.stderr) as { error: CliError };
  assert.equal(error.code, code, error.message);
  assert.ok(error.hint.length > 0, 'every error carries a hint');
  return error;
}
