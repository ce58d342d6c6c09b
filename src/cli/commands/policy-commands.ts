import type { Command } from 'commander';
import { z } from 'zod';
import { loadConfig } from '../../config/config';
import { CAPABILITIES } from '../../domain/capabilities';
import { POLICY_EFFECTS } from '../../domain/policy';
import { sandboxRequestSchema } from '../../domain/sandbox-request';
import { commaListSchema, durationSchema, oneOf, parseCliArgument, parseCliOptions, wholeNumberSchema } from '../cli-options';
import { action, jsonOption } from '../command-action';
import { formatPolicy, formatPolicyList } from '../format/policy-format';
import { printResult } from '../output';
import { withStore, withStoreReadOnly } from '../store-session';

/** A principal name, or a glob where `*` stands for any run of characters. */
const principalPatternSchema = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(200, 'must be at most 200 characters')
  .regex(/^[A-Za-z0-9._@:/+*-]+$/, 'may contain letters, digits, . _ @ : / + - and * (any run of characters) only');

const policyAddOptionsSchema = z.object({
  principal: principalPatternSchema,
  capability: oneOf(CAPABILITIES),
  effect: oneOf(POLICY_EFFECTS),
  maxTtl: durationSchema.optional(),
  // Parsed exactly as a request's services are, so a row and a request compare like with like.
  services: commaListSchema.pipe(sandboxRequestSchema.shape.services).optional(),
  maxConcurrent: wholeNumberSchema(0).optional(),
  json: z.boolean().default(false),
});

const policyIdSchema = wholeNumberSchema(1);

/** policy add, policy list, policy remove: rows of the SQLite projection (SANDBOXPLANE_DB). */
export function registerPolicyCommands(program: Command): void {
  const policy = program
    .command('policy')
    .description('policy rows: who may use which capability, with which effect and limits (no matching row = deny)');

  policy
    .command('add')
    .description('add a policy row; the worker applies it to the next request it screens')
    .option('--principal <pattern>', 'principal name, or a glob with * (e.g. agent-*) (required)')
    .option('--capability <name>', `${CAPABILITIES.join('|')} (required)`)
    .option('--effect <effect>', `${POLICY_EFFECTS.join('|')} (required)`)
    .option('--max-ttl <duration>', 'longest TTL this row grants: 90s, 30m, 2h (default: the global ceiling)')
    .option('--services <list>', 'comma-separated services the row covers, e.g. s3,sqs (default: every service)')
    .option('--max-concurrent <n>', 'live sandboxes the principal may hold at once under this row (default: no limit)')
    .addOption(jsonOption())
    .action(
      action(async (raw) => {
        const options = parseCliOptions(policyAddOptionsSchema, raw);
        const row = withStore(loadConfig(), (store) =>
          store.policies.add({
            principalPattern: options.principal,
            capability: options.capability,
            effect: options.effect,
            maxTtlSeconds: options.maxTtl ?? null,
            services: options.services ?? null,
            maxConcurrent: options.maxConcurrent ?? null,
          }),
        );
        printResult({ json: options.json }, row, `Added ${formatPolicy(row)}.`);
      }),
    );

  policy
    .command('list')
    .description('every policy row, oldest first')
    .addOption(jsonOption())
    .action(
      action(async (raw) => {
        const policies = withStoreReadOnly(loadConfig(), (store) => store.policies.list());
        printResult({ json: raw.json === true }, { policies }, formatPolicyList(policies));
      }),
    );

  policy
    .command('remove')
    .description('remove a policy row by id (`sandboxctl policy list` shows the ids)')
    .argument('<id>', 'policy row id')
    .addOption(jsonOption())
    .action(
      action(async (raw, args) => {
        const id = parseCliArgument(policyIdSchema, args[0], 'ID');
        const row = withStore(loadConfig(), (store) => store.policies.remove(id));
        printResult({ json: raw.json === true }, row, `Removed ${formatPolicy(row)}.`);
      }),
    );
}
