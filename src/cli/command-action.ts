import { type Command, Option } from 'commander';
import { reportError } from './output';

export type ActionOptions = Record<string, unknown> & { json?: boolean };

/** A command's body: its options and positional arguments in, an exit code (or nothing: 0) out. */
export type ActionBody = (options: ActionOptions, args: string[]) => Promise<number | void>;

/**
 * Wraps a command's body: every failure becomes the documented exit code and, with
 * --json, the `{"error": {...}}` document on stderr.
 */
export function action(body: ActionBody) {
  return async (...received: unknown[]): Promise<void> => {
    const command = received[received.length - 1] as Command;
    // With its parent's options: `hosts remove X --json` hands --json to `hosts`, which takes it too.
    const options = command.optsWithGlobals<ActionOptions>();
    try {
      process.exitCode = (await body(options, command.args)) ?? 0;
    } catch (err) {
      process.exitCode = await reportError({ json: options.json === true }, err);
    }
  };
}

export const jsonOption = () => new Option('--json', 'print one JSON document on stdout (errors as JSON on stderr)');
