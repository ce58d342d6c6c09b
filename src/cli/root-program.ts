import { Command } from 'commander';
import { CONFIG_ENV_DESCRIPTIONS, CONFIG_ENV_KEYS } from '../config/config';
import { FEATURE_FLAG_NAMES, FEATURE_FLAGS, flagEnvName } from '../domain/feature-flags';

/**
 * `--help`'s Environment section, made from the configuration's schema itself
 * (`CONFIG_ENV_KEYS`) and the feature flags, so a new variable is listed without anyone remembering to.
 */
function environmentHelp(): string {
  const rows: (readonly [string, string])[] = [
    ...CONFIG_ENV_KEYS.map((key) => [key, CONFIG_ENV_DESCRIPTIONS[key] ?? ''] as const),
    ...FEATURE_FLAG_NAMES.map((flag) => [flagEnvName(flag), `${FEATURE_FLAGS[flag].description} (1 or 0; default 0${FEATURE_FLAGS[flag].local ? ', 1 under sandboxctl dev' : ''})`] as const),
  ];
  const width = Math.max(...rows.map(([key]) => key.length)) + 2;
  return rows.map(([key, text]) => `  ${key.padEnd(width)}${text}`.trimEnd()).join('\n');
}

const HELP_FOOTER = `
Environment (more on each in .env.example and the README):
${environmentHelp()}

Exit codes: 0 ok, 1 unexpected failure, 2 invalid input, 3 refused, 4 not found.`;

/** `sandboxctl` itself, before any command is added: how it reports errors and what its help ends with. */
export function rootProgram(): Command {
  return (
    new Command('sandboxctl')
      .description('Cloud Sandbox Plane: throw-away, policy-governed AWS-shaped sandboxes for agents, on Temporal.')
      .showHelpAfterError(false)
      // Every command (they inherit it) refuses what it does not take: `snapshots delete S` must not list snapshots and exit 0.
      .allowExcessArguments(false)
      .exitOverride()
      // Commander's own error lines are dropped: main() reports them in our format (and as JSON with --json).
      .configureOutput({ outputError: () => undefined })
      .addHelpText('after', HELP_FOOTER)
  );
}
