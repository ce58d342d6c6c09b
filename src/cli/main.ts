import { CommanderError, type Command } from 'commander';
import { EXIT_CODE_BY_CATEGORY } from '../domain/error-codes';
import { SandboxPlaneError } from '../domain/errors';
import { registerStatusCommand } from './commands/status-command';
import { reportError } from './output';
import { rootProgram } from './root-program';

/**
 * The program for `argv`. `sandboxctl status …` gets `sandboxctl` with its `status` command
 * alone: parsing, help and errors are the same, and the other commands' modules (most of
 * the CLI) are not loaded (docs/performance.md#cli-start-up).
 */
async function programFor(argv: readonly string[]): Promise<Command> {
  if (argv[2] === 'status') {
    const program = rootProgram();
    registerStatusCommand(program);
    return program;
  }
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
