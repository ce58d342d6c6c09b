import type { Command } from 'commander';
import { z } from 'zod';
import { loadConfig } from '../../config/config';
import { TARGET_ENVIRONMENTS, targetEndpointSchema, targetNameSchema, targetProfileSchema, targetRegionSchema, type TargetAuditEntry, type TargetRecord } from '../../domain/targets';
import { oneOf, parseCliArgument, parseCliOptions } from '../cli-options';
import { action, jsonOption } from '../command-action';
import { formatTable } from '../format/table';
import { printResult } from '../output';
import { withStoreClient } from '../temporal-clients';
import { registerStoreList } from './store-list-command';

const targetAddOptionsSchema = z.object({
  environment: oneOf(TARGET_ENVIRONMENTS),
  region: targetRegionSchema,
  endpoint: targetEndpointSchema.optional(),
  profile: targetProfileSchema.optional(),
  json: z.boolean().default(false),
});

/**
 * The options as an error may quote them: an endpoint's user:pass@ and query are masked,
 * so a refused endpoint does not print its secret back into a terminal or a CI log. The
 * masked text is refused for the same reasons as the original.
 */
function quotable(raw: Record<string, unknown>): Record<string, unknown> {
  if (typeof raw.endpoint !== 'string') return raw;
  const endpoint = raw.endpoint.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, '$1***@').replace(/([?#]).*$/s, '$1***');
  return { ...raw, endpoint };
}

function targetSentence(target: TargetRecord): string {
  const endpoint = target.endpoint === null ? "the region's own endpoints" : `endpoint ${target.endpoint}`;
  const profile = target.profile === null ? "the worker's default AWS credential chain" : `AWS profile ${target.profile} on the worker that serves targets`;
  return `target ${target.name}: ${target.environment} in ${target.region}, ${endpoint}, ${profile}`;
}

function formatTargetList(targets: readonly TargetRecord[]): string {
  if (targets.length === 0) return 'No targets: nothing can be promoted beyond a sandbox. Add one with `sandboxctl targets add NAME --environment staging --region us-east-1`.';
  return formatTable(
    ['NAME', 'ENVIRONMENT', 'REGION', 'ENDPOINT', 'PROFILE', 'ADDED'],
    targets.map((t) => [t.name, t.environment, t.region, t.endpoint ?? '-', t.profile ?? '-', t.addedAt]),
  );
}

function formatTargetAudit(name: string, operations: readonly TargetAuditEntry[]): string {
  if (operations.length === 0) return `No IaC runs against target ${name} yet.`;
  return `Audit trail of target ${name}, oldest first:\n${formatTable(
    ['WORKFLOW', 'STEP', 'AT', 'ACTION', 'ACTOR', 'EFFECT', 'REASON'],
    operations.map((op) => [op.workflowId, String(op.step), op.at, op.action, op.actor, op.effect, op.reason ?? '']),
  )}`;
}

/** targets add, list, remove, audit: where IaC runs may be promoted to (DESIGN §14), kept by the store role. */
export function registerTargetCommands(program: Command): void {
  const targets = program
    .command('targets')
    .description(
      'targets of promotion (staging, production) that operators register; a target names an AWS profile that the worker serving targets reads from its own AWS shared config and credentials files: the profile is never sent or stored as a secret',
    );

  targets
    .command('add')
    .description('register a target; its credentials come from --profile in the AWS shared config/credentials files of the worker that serves targets (never sent or stored as a secret)')
    .argument('<name>', 'lowercase letters, digits and -, starting with a letter (e.g. staging-eu)')
    .option('--environment <env>', `${TARGET_ENVIRONMENTS.join('|')} (required): production needs two different approvers`)
    .option('--region <region>', 'AWS region, e.g. us-east-1 (required)')
    .option('--endpoint <url>', "http(s) URL of the target's AWS API, without credentials or query (default: the region's own endpoints)")
    .option('--profile <name>', "AWS profile name, read from the AWS shared config/credentials files of the worker that serves targets (default: that worker's default credential chain)")
    .addOption(jsonOption())
    .action(
      action(async (raw, args) => {
        const name = parseCliArgument(targetNameSchema, args[0], 'NAME');
        const options = parseCliOptions(targetAddOptionsSchema, quotable(raw));
        const target = await withStoreClient(loadConfig(), (store) =>
          store.addTarget({ name, environment: options.environment, region: options.region, endpoint: options.endpoint ?? null, profile: options.profile ?? null }),
        );
        printResult({ json: options.json }, target, `Registered ${targetSentence(target)}.`);
      }),
    );

  registerStoreList(targets, 'every registered target, by name', 'targets', (store) => store.targets(), formatTargetList);

  targets
    .command('remove')
    .description('remove a target: no IaC run can be promoted to it any more; its audit trail stays')
    .argument('<name>', 'a registered target (`sandboxctl targets list` shows them)')
    .addOption(jsonOption())
    .action(
      action(async (raw, args) => {
        const name = parseCliArgument(targetNameSchema, args[0], 'NAME');
        const removed = await withStoreClient(loadConfig(), (store) => store.removeTarget(name));
        printResult({ json: raw.json === true }, removed, `Removed ${targetSentence(removed)}. Its audit trail stays: sandboxctl targets audit ${removed.name}`);
      }),
    );

  targets
    .command('audit')
    .description("the audit trail of IaC runs against a target, oldest first (a removed target's too)")
    .argument('<name>', 'a target, registered now or before')
    .addOption(jsonOption())
    .action(
      action(async (raw, args) => {
        const name = parseCliArgument(targetNameSchema, args[0], 'NAME');
        const operations = await withStoreClient(loadConfig(), (store) => store.targetAudit(name));
        printResult({ json: raw.json === true }, { target: name, operations }, formatTargetAudit(name, operations));
      }),
    );
}
