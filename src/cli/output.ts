import { ERROR_CODES, EXIT_CODE_BY_CATEGORY } from '../domain/error-codes';
import { SandboxPlaneError } from '../domain/errors';

export interface OutputOptions {
  readonly json: boolean;
}

/** One JSON document on stdout with --json; the human text otherwise. */
export function printResult(options: OutputOptions, document: unknown, human: string): void {
  if (options.json) process.stdout.write(`${JSON.stringify(document, null, 2)}\n`);
  else process.stdout.write(human.endsWith('\n') ? human : `${human}\n`);
}

/**
 * Reports a failure the way DESIGN §11 promises: `{"error": {code, message, hint}}` on
 * stderr with --json, a readable message and hint otherwise; returns the exit code.
 */
export async function reportError(options: OutputOptions, err: unknown): Promise<number> {
  // Only an error that is not ours yet needs the Temporal SDK to translate it: `--help` and a bad flag never load it.
  const planeError = err instanceof SandboxPlaneError ? err : (await import('../client/client-errors.js')).toSandboxError(err);
  if (options.json) {
    process.stderr.write(`${JSON.stringify({ error: planeError.toJSON() })}\n`);
  } else {
    process.stderr.write(`error [${planeError.code}]: ${planeError.message}\n  hint: ${planeError.hint}\n`);
    if (planeError.code === 'INTERNAL' && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
  }
  return EXIT_CODE_BY_CATEGORY[ERROR_CODES[planeError.code].category];
}
