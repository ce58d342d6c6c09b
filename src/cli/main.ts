import { Command, CommanderError, Option } from 'commander';
import { z } from 'zod';
import { loadConfig } from '../config/config';
import { SandboxPlaneError } from '../domain/errors';
import { createLogger } from '../logging/logger';
import { fileSchema, parseCliOptions, portSchema } from './cli-options';
import { runDevLauncher } from './dev-launcher';
import { formatDoctorReport } from './doctor-report';
import { doctorPassed, runDoctorChecks } from './doctor-checks';
import { printResult, reportError } from './output';
import { runWorkerCommand } from './worker-command';

type ActionOptions = Record<string, unknown> & { json?: boolean };

/**
 * Wraps a command's body: every failure becomes the documented exit code and, with
 * --json, the `{"error": {...}}` document on stderr.
 */
function action(body: (options: ActionOptions, args: string[]) => Promise<number | void>) {
  return async (...received: unknown[]): Promise<void> => {
    const command = received[received.length - 1] as Command;
    const options = command.opts<ActionOptions>();
    try {
      process.exitCode = (await body(options, command.args)) ?? 0;
    } catch (err) {
      process.exitCode = reportError({ json: options.json === true }, err);
    }
  };
}

const jsonOption = () => new Option('--json', 'print one JSON document on stdout (errors as JSON on stderr)');

const devOptionsSchema = z.object({
  port: portSchema.optional(),
  uiPort: portSchema.default(8233),
  db: fileSchema.optional(),
});

const HELP_FOOTER = `
Environment:
  TEMPORAL_ADDRESS         Temporal frontend host:port (default 127.0.0.1:7233)
  TEMPORAL_NAMESPACE       namespace (default "default")
  SANDBOXPLANE_TASK_QUEUE  task queue of the worker (default "sandboxplane")
  SANDBOXPLANE_DB          SQLite projection file (default .data/sandboxplane.sqlite)
  DOCKER_HOST              Docker engine for sandboxes (default the engine's socket)
  SANDBOXPLANE_FLAG_*      feature flags, all off unless set to 1/true/on/yes
  SANDBOXPLANE_LOG_LEVEL   trace|debug|info|warn|error|fatal|silent (default info)

Exit codes: 0 ok, 1 unexpected failure, 2 invalid input, 3 refused, 4 not found.`;

export function buildProgram(): Command {
  const program = new Command('sandboxctl')
    .description('Cloud Sandbox Plane: throw-away, policy-governed AWS-shaped sandboxes for agents, on Temporal.')
    .showHelpAfterError(false)
    .exitOverride()
    .configureOutput({ writeErr: () => undefined })
    .addHelpText('after', HELP_FOOTER);

  program
    .command('dev')
    .description('run a Temporal dev server (with its Web UI), the worker and a round trip, in the foreground')
    .option('--port <n>', 'Temporal frontend port (default: the port of TEMPORAL_ADDRESS, 7233)')
    .option('--ui-port <n>', 'Temporal Web UI port', '8233')
    .option('--db <file>', 'SQLite file of the dev server (default: .data/temporal.sqlite)')
    .addOption(jsonOption())
    .action(
      action(async (raw) => {
        const options = parseCliOptions(devOptionsSchema, raw);
        const config = loadConfig();
        await runDevLauncher(config, { port: options.port, uiPort: options.uiPort, dbFile: options.db }, createLogger(config.logLevel));
      }),
    );

  program
    .command('worker')
    .description('run the worker only, against TEMPORAL_ADDRESS, until SIGINT or SIGTERM')
    .addOption(jsonOption())
    .action(
      action(async () => {
        const config = loadConfig();
        await runWorkerCommand(config, createLogger(config.logLevel));
      }),
    );

  program
    .command('doctor')
    .description('check every dependency and say what to fix; exit 0 only when all required checks pass')
    .addOption(jsonOption())
    .action(
      action(async (options) => {
        const config = loadConfig();
        const checks = await runDoctorChecks(config);
        const ok = doctorPassed(checks);
        printResult({ json: options.json === true }, { ok, checks }, formatDoctorReport(checks, ok));
        return ok ? 0 : 1;
      }),
    );

  return program;
}

/** Parses `argv` and runs the command; resolves to the process exit code. */
export async function main(argv: readonly string[] = process.argv): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return 0;
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
