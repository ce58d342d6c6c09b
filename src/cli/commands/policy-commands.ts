import type { Command } from 'commander';
import { z } from 'zod';
import { loadConfig } from '../../config/config';
import { CAPABILITIES } from '../../domain/capabilities';
import { POLICY_EFFECTS, principalPatternSchema } from '../../domain/policy';
import { sandboxRequestSchema } from '../../domain/sandbox-request';
import { maxSandboxHoursPerDaySchema } from '../../domain/usage';
import { commaListSchema, durationSchema, oneOf, parseCliArgument, parseCliOptions, wholeNumberSchema } from '../cli-options';
import { action, jsonOption } from '../command-action';
import { formatPolicy, formatPolicyList } from '../format/policy-format';
import { printResult } from '../output';
import { withStoreClient } from '../temporal-clients';
import { registerStoreList } from './store-list-command';

const policyAddOptionsSchema = z.object({
  principal: principalPatternSchema,
  capability: oneOf(CAPABILITIES),
  effect: oneOf(POLICY_EFFECTS),
  maxTtl: durationSchema.optional(),
  // Parsed exactly as a request's services are, so a row and a request compare like with like.
  services: commaListSchema.pipe(sandboxRequestSchema.shape.services).optional(),
  maxConcurrent: wholeNumberSchema(0).optional(),
  maxSandboxHoursPerDay: z.coerce.number({ invalid_type_error: 'must be a number of hours' }).pipe(maxSandboxHoursPerDaySchema).optional(),
  json: z.boolean().default(false),
});

const policyIdSchema = wholeNumberSchema(1);

/** policy add, policy list, policy remove: rows the store role keeps, reached through Temporal. */
export function registerPolicyCommands(program: Command): void {
  const policy = program.command('policy').description('policy rows: who may use which capability, with which effect and limits (no matching row = deny)');

  policy
    .command('add')
    .description('add a policy row; the worker applies it to the next request it screens')
    .option('--principal <pattern>', 'principal name, or a glob with * (e.g. agent-*) (required)')
    .option('--capability <name>', `${CAPABILITIES.join('|')} (required)`)
    .option('--effect <effect>', `${POLICY_EFFECTS.join('|')} (required)`)
    .option('--max-ttl <duration>', 'longest TTL this row grants: 90s, 30m, 2h (default: the global ceiling)')
    .option('--services <list>', 'comma-separated services the row covers, e.g. s3,sqs (default: every service)')
    .option('--max-concurrent <n>', 'live sandboxes the principal may hold at once under this row (default: no limit)')
    .option(
      '--max-sandbox-hours-per-day <h>',
      'sandbox-hours (READY time, e.g. 8 or 0.5) the principal may use per UTC day under this row; past it a create is refused QUOTA_EXCEEDED until 00:00 UTC (default: no limit)',
    )
    .addOption(jsonOption())
    .action(
      action(async (raw) => {
        const options = parseCliOptions(policyAddOptionsSchema, raw);
        const row = await withStoreClient(loadConfig(), (store) =>
          store.addPolicy({
            principalPattern: options.principal,
            capability: options.capability,
            effect: options.effect,
            maxTtlSeconds: options.maxTtl ?? null,
            services: options.services ?? null,
            maxConcurrent: options.maxConcurrent ?? null,
            maxSandboxHoursPerDay: options.maxSandboxHoursPerDay ?? null,
          }),
        );
        printResult({ json: options.json }, row, `Added ${formatPolicy(row)}.`);
      }),
    );

  registerStoreList(policy, 'every policy row, oldest first', 'policies', (store) => store.listPolicies(), formatPolicyList);

  policy
    .command('remove')
    .description('remove a policy row by id (`sandboxctl policy list` shows the ids)')
    .argument('<id>', 'policy row id')
    .addOption(jsonOption())
    .action(
      action(async (raw, args) => {
        const id = parseCliArgument(policyIdSchema, args[0], 'ID');
        const row = await withStoreClient(loadConfig(), (store) => store.removePolicy(id));
        printResult({ json: raw.json === true }, row, `Removed ${formatPolicy(row)}.`);
      }),
    );
}
