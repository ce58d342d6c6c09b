import type { Command } from 'commander';
import { rootProgram } from './root-program';

type Register = (program: Command) => void;

/**
 * A module of commands: the top-level commands it adds (or adds subcommands to) and how
 * to load it. `sandboxctl X …` loads only the modules that name X, so `create` does not
 * pay for the schemas, formats and clients of forty other commands
 * (docs/performance.md#cli-start-up); `--help`, `help X` and anything unknown get them all.
 */
interface CommandModule {
  readonly commands: readonly string[];
  readonly load: () => Promise<Register>;
  /** `status` alone: `sandbox-commands` registers it too (second, as `--help` lists it), so the whole program takes it from there. */
  readonly aloneOnly?: true;
}

/** In the order `--help` lists them; a module that adds subcommands to another's command comes after it. */
export const COMMAND_MODULES: readonly CommandModule[] = [
  { commands: ['dev', 'worker', 'doctor', 'mcp', 'gateway'], load: async () => (await import('./commands/service-commands.js')).registerServiceCommands },
  {
    commands: ['create', 'resources', 'list', 'audit', 'extend', 'destroy', 'approve', 'deny'],
    load: async () => (await import('./commands/sandbox-commands.js')).registerSandboxCommands,
  },
  { commands: ['status'], load: async () => (await import('./commands/status-command.js')).registerStatusCommand, aloneOnly: true },
  { commands: ['audit'], load: async () => (await import('./commands/audit-commands.js')).registerAuditCommands },
  { commands: ['snapshot', 'snapshots', 'restore', 'pause', 'resume'], load: async () => (await import('./commands/snapshot-commands.js')).registerSnapshotCommands },
  { commands: ['fork', 'tree'], load: async () => (await import('./commands/family-commands.js')).registerFamilyCommands },
  { commands: ['policy'], load: async () => (await import('./commands/policy-commands.js')).registerPolicyCommands },
  { commands: ['approvers'], load: async () => (await import('./commands/approver-commands.js')).registerApproverCommands },
  { commands: ['sweep', 'leaks'], load: async () => (await import('./commands/cleanup-commands.js')).registerCleanupCommands },
  { commands: ['hosts', 'pools'], load: async () => (await import('./commands/host-commands.js')).registerHostCommands },
  { commands: ['codec-server'], load: async () => (await import('./commands/codec-commands.js')).registerCodecCommands },
  { commands: ['deployment'], load: async () => (await import('./commands/deployment-commands.js')).registerDeploymentCommands },
  { commands: ['iac'], load: async () => (await import('./commands/iac-commands.js')).registerIacCommands },
  { commands: ['targets'], load: async () => (await import('./commands/target-commands.js')).registerTargetCommands },
  { commands: ['keys'], load: async () => (await import('./commands/key-commands.js')).registerKeyCommands },
  { commands: ['webhooks'], load: async () => (await import('./commands/webhook-commands.js')).registerWebhookCommands },
  { commands: ['usage'], load: async () => (await import('./commands/usage-commands.js')).registerUsageCommands },
  { commands: ['events'], load: async () => (await import('./commands/event-commands.js')).registerEventCommands },
];

export async function programOf(modules: readonly CommandModule[]): Promise<Command> {
  const program = rootProgram();
  // Loaded at once, registered in order: the order is --help's.
  const registers = await Promise.all(modules.map((module) => module.load()));
  for (const register of registers) register(program);
  return program;
}

/**
 * The program for `argv`: `sandboxctl create …` gets `sandboxctl` with the modules that
 * name `create` alone. Parsing, the command's help and its errors are the same as in the
 * whole program (`buildProgram`), which a first argument no module names (an option,
 * `help`, a typo) gets instead: `undefined` then.
 */
export function namedProgram(argv: readonly string[]): Promise<Command> | undefined {
  const first = argv[2];
  const named = first === undefined ? [] : COMMAND_MODULES.filter((module) => module.commands.includes(first));
  if (named.length === 0) return undefined;
  // `status` alone; for `audit`, sandbox-commands' `audit ID`, then audit-commands' subcommands.
  const alone = named.find((module) => module.aloneOnly === true);
  return programOf(alone !== undefined ? [alone] : named);
}
