import { CommanderError, type Command } from 'commander';
import { EXIT_CODE_BY_CATEGORY } from '../domain/error-codes';
import { SandboxPlaneError } from '../domain/errors';
import { namedProgram } from './command-modules';
import { reportError } from './output';

/**
 * The program for `argv`: `sandboxctl create …` loads the modules that name `create` and
 * no other command's (`status` its own module alone); anything else loads every command
 * (docs/performance.md#cli-start-up).
 */
async function programFor(argv: readonly string[]): Promise<Command> {
  const named = namedProgram(argv);
  if (named !== undefined) return named;
  const { buildProgram } = await import('./program.js');
  return buildProgram();
}

/** Parses `argv` and runs the command; resolves to the process exit code. */
export async function main(argv: readonly string[] = process.argv): Promise<number> {
  const program = await programFor(argv);
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return 0;
      // A command group without its subcommand (`sandboxctl policy`): the help went to stderr.
      if (err.code === 'commander.help') return err.exitCode === 0 ? 0 : EXIT_CODE_BY_CATEGORY.invalid;
      const message = err.message.replace(/^error: /, '');
      return reportError({ json: argv.includes('--json') }, new SandboxPlaneError('INVALID_INPUT', message, { hint: 'Run `sandboxctl --help` for the commands and their flags.' }));
    }
    throw err;
  }
}

if (require.main === module) {
  main()
    // Exit explicitly: the Temporal SDK's native runtime can outlive the last worker.
    .then((code) => process.exit(code))
    .catch((err) => {
      console.error(err);
      process.exit(1);
    });
}
