import type { Command } from 'commander';
import { COMMAND_MODULES, programOf } from './command-modules';

/**
 * `sandboxctl` with every command. Each command also loads what only it needs when it
 * runs (the worker, the dev server, the Temporal client), so `sandboxctl policy list`
 * does not pay for the whole SDK.
 */
export function buildProgram(): Promise<Command> {
  return programOf(COMMAND_MODULES.filter((module) => module.aloneOnly !== true));
}
