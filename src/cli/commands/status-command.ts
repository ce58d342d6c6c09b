import type { Command } from 'commander';
import type { z } from 'zod';
import { loadConfig } from '../../config/config';
import { sandboxIdSchema } from '../../domain/sandbox-id';
import { parseCliArgument, parseCliOptions } from '../cli-options';
import { action, jsonOption } from '../command-action';
import { formatStatus } from '../format/sandbox-format';
import { printResult } from '../output';
import { sandboxStatus } from '../temporal-clients';

/** The ID argument of a command about one sandbox. */
export function sandboxIdArgument(args: readonly string[]): string {
  return parseCliArgument(sandboxIdSchema, args[0], 'ID');
}

/** The action of a command about one sandbox: its ID argument, then its options, each checked, handed to `body`. */
export function sandboxAction<S extends z.ZodTypeAny>(schema: S, body: (id: string, options: z.output<S>) => Promise<number | void>) {
  return action(async (raw, args) => body(sandboxIdArgument(args), parseCliOptions(schema, raw)));
}

/** `status ID` (DESIGN §11); in a module of its own, which `main` loads alone for `sandboxctl status`. */
export function registerStatusCommand(program: Command): void {
  program
    .command('status')
    .description("one sandbox: state, endpoint, client settings, expiry and what it waits for (the workflow's status query)")
    .argument('<id>', 'sandbox id')
    .addOption(jsonOption())
    .action(
      action(async (raw, args) => {
        const id = sandboxIdArgument(args);
        const status = await sandboxStatus(loadConfig(), id);
        printResult({ json: raw.json === true }, status, formatStatus(status));
      }),
    );
}
