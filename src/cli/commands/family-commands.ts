import type { Command } from 'commander';
import { z } from 'zod';
import { loadConfig } from '../../config/config';
import { principalSchema, sandboxRequestSchema } from '../../domain/sandbox-request';
import { snapshotIdSchema } from '../../domain/snapshots';
import { durationSchema, parseCliArgument, parseCliOptions } from '../cli-options';
import { action, jsonOption } from '../command-action';
import { firstFailure } from '../../client/family-outcome';
import { formatFamily } from '../format/sandbox-format';
import { printResult, reportError } from '../output';
import { withSandboxClient } from '../temporal-clients';
import { sandboxAction } from './status-command';

const request = sandboxRequestSchema.shape;

const forkOptionsSchema = z.object({
  count: z.coerce.number().int('must be a whole number').positive('must be at least 1').default(1),
  principal: principalSchema.optional(),
  ttl: durationSchema.pipe(request.ttlSeconds).optional(),
  purpose: request.purpose,
  timeout: durationSchema.pipe(z.number().max(86_400, 'must be at most 1d')).optional(),
  json: z.boolean().default(false),
});

const treeOptionsSchema = z.object({ json: z.boolean().default(false) });

/** `fork` (many at once) and `tree` (DESIGN §11, "Fork many"); `extend --tree` and `destroy --tree` are beside their one-sandbox forms. */
export function registerFamilyCommands(program: Command): void {
  program
    .command('fork')
    .description(
      "fork a snapshot (yours only) into --count sandboxes at once, each with its own container, key and endpoint; returns once each is READY or has failed, and names each failure (exit code of the first). Each fork's TTL never passes its tree's root's",
    )
    .argument('<snapshot-id>', 'snapshot id (`sandboxctl snapshots` lists yours)')
    .option('--count <n>', 'how many sandboxes (default 1; at most SANDBOXPLANE_FORK_MAX, 20 by default)')
    .option('--principal <name>', 'whose snapshot (required unless SANDBOXPLANE_PRINCIPAL is set)')
    .option('--ttl <duration>', "how long each lives once READY: 90s, 30m, 2h (default: the worker's default TTL, capped by policy and by the root's expiry)")
    .option('--purpose <text>', 'why, for reviewers and the audit trail')
    .option('--timeout <duration>', 'stop waiting for READY after this long (default 10m); the forks themselves go on')
    .addOption(jsonOption())
    .action(
      action(async (raw, args) => {
        const snapshotId = parseCliArgument(snapshotIdSchema, args[0], 'SNAPSHOT_ID');
        const config = loadConfig();
        const schema = config.principal === undefined ? forkOptionsSchema.extend({ principal: principalSchema }) : forkOptionsSchema;
        const options = parseCliOptions(schema, raw);
        const principal = options.principal ?? config.principal;
        const forked = await withSandboxClient(config, (sandboxes) =>
          sandboxes.fork(
            snapshotId,
            {
              count: options.count,
              ...(principal !== undefined ? { principal } : {}),
              ...(options.ttl !== undefined ? { ttlSeconds: options.ttl } : {}),
              ...(options.purpose !== undefined ? { purpose: options.purpose } : {}),
            },
            { wait: 'ready', ...(options.timeout !== undefined ? { timeoutMs: options.timeout * 1000 } : {}) },
          ),
        );
        printResult({ json: options.json }, forked, formatFamily(forked.sandboxes));
        const failure = firstFailure(forked.sandboxes, 'forks');
        return failure === undefined ? 0 : reportError({ json: options.json }, failure);
      }),
    );

  program
    .command('tree')
    .description("a sandbox's family: its tree's root, then every sandbox forked in it, oldest first, ended ones too (yours only)")
    .argument('<id>', 'sandbox id: the root or any fork in the tree')
    .addOption(jsonOption())
    .action(
      sandboxAction(treeOptionsSchema, async (id, options) => {
        const tree = await withSandboxClient(loadConfig(), (sandboxes) => sandboxes.tree(id));
        printResult({ json: options.json }, tree, `tree of ${tree.root}\n${formatFamily(tree.sandboxes, tree.root)}`);
      }),
    );
}
