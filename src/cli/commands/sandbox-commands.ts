import os from 'node:os';
import { type Command, Option } from 'commander';
import { z } from 'zod';
import { loadConfig } from '../../config/config';
import { SandboxPlaneError } from '../../domain/errors';
import { snapshotIdSchema } from '../../domain/snapshots';
import { CAPABILITIES } from '../../domain/capabilities';
import { DEFAULT_ADAPTER, principalSchema, sandboxIdSchema, sandboxRequestSchema } from '../../domain/sandbox-request';
import { SANDBOX_STATES } from '../../domain/sandbox-states';
import { ADAPTER_NAMES } from '../../domain/service-catalog';
import { commaListSchema, durationSchema, oneOf, parseCliOptions } from '../cli-options';
import { action, jsonOption } from '../command-action';
import { formatApprovalOutcome, formatAudit, formatFamily, formatSandboxList, formatStatus } from '../format/sandbox-format';
import { firstFailure, type SandboxTree } from '../../client/family-outcome';
import { printResult, reportError } from '../output';
import { withSandboxClient, withStoreClient } from '../temporal-clients';
import { registerStatusCommand, sandboxAction, sandboxIdArgument } from './status-command';

const request = sandboxRequestSchema.shape;

/** A family after `--tree`: every member's outcome, then the first failure's exit code (0 when none failed). */
async function printTree(json: boolean, tree: SandboxTree, what: string): Promise<number> {
  printResult({ json }, tree, `tree of ${tree.root}\n${formatFamily(tree.sandboxes, tree.root)}`);
  const failure = firstFailure(tree.sandboxes, what, { acted: true });
  return failure === undefined ? 0 : reportError({ json }, failure);
}

/** `--label team=infra --label ticket=42` → `{ team: 'infra', ticket: '42' }`, checked like the SDK checks labels. */
const labelsSchema = z
  .array(z.string())
  .transform((pairs, ctx) => {
    const labels: Record<string, string> = {};
    for (const pair of pairs) {
      const at = pair.indexOf('=');
      if (at <= 0) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'must be key=value' });
        return z.NEVER;
      }
      labels[pair.slice(0, at)] = pair.slice(at + 1);
    }
    return labels;
  })
  .pipe(request.labels);

const createOptionsSchema = z.object({
  id: sandboxIdSchema.optional(),
  // Required unless SANDBOXPLANE_PRINCIPAL says who calls (see the create action).
  principal: principalSchema.optional(),
  // Required unless --from-snapshot names a snapshot, whose sandbox's services are the default (see the create action).
  services: commaListSchema.pipe(request.services).optional(),
  fromSnapshot: snapshotIdSchema.optional(),
  ttl: durationSchema.pipe(request.ttlSeconds).optional(),
  purpose: request.purpose,
  adapter: oneOf(ADAPTER_NAMES).optional(),
  capability: oneOf(CAPABILITIES).optional(),
  label: labelsSchema.optional(),
  wait: z.boolean().default(false),
  // The longest wait the SDK takes; refused here so the message names the flag.
  timeout: durationSchema.pipe(z.number().max(86_400, 'must be at most 1d')).optional(),
  json: z.boolean().default(false),
});

const listOptionsSchema = z.object({
  state: oneOf(SANDBOX_STATES).optional(),
  principal: principalSchema.optional(),
  json: z.boolean().default(false),
});

const reasonSchema = z.string().max(1000, 'must be at most 1000 characters');
const nameSchema = z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters');
/** `--actor`: who asks, for the audit trail; `cli:<os user>` when not given. */
export const actorSchema = nameSchema.optional().transform((actor) => actor ?? defaultActor());
export const actorOption = () => new Option('--actor <name>', 'who asks, for the audit trail (default cli:<os user>)');

const extendOptionsSchema = z.object({
  ttl: durationSchema,
  tree: z.boolean().default(false),
  reason: reasonSchema.optional(),
  actor: actorSchema,
  json: z.boolean().default(false),
});

const destroyOptionsSchema = z.object({
  tree: z.boolean().default(false),
  reason: reasonSchema.optional(),
  actor: actorSchema,
  json: z.boolean().default(false),
});

const approvalOptionsSchema = z.object({
  approver: nameSchema,
  reason: reasonSchema.optional(),
  code: z
    .string()
    .trim()
    .regex(/^\d{6}$/, 'must be the 6 digits your authenticator shows')
    .optional(),
  json: z.boolean().default(false),
});

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** Who the audit trail names when --actor is not given: `cli:<os user>`. */
function defaultActor(): string {
  try {
    return `cli:${os.userInfo().username}`;
  } catch {
    return `cli:${process.env.USER ?? 'unknown'}`;
  }
}

/** create, status, list, audit, extend, destroy, approve, deny (DESIGN §11). */
export function registerSandboxCommands(program: Command): void {
  program
    .command('create')
    .description('ask for a sandbox; returns once the request is screened, or once READY with --wait')
    .option('--id <id>', 'sandbox id, also the idempotency key: the same id and request return the same sandbox (default: a fresh sbx-… id)')
    .option('--principal <name>', 'who asks (required unless SANDBOXPLANE_PRINCIPAL is set); policy rows are matched against it')
    .option('--services <list>', "comma-separated services, e.g. s3,sqs (required, unless --from-snapshot: then the snapshot's sandbox's)")
    .option(
      '--from-snapshot <id>',
      "a fork: start with this snapshot's state (yours only), in a container and with credentials of its own; --adapter and --services default to its sandbox's",
    )
    .option('--ttl <duration>', "how long it lives once READY: 90s, 30m, 2h (default: the worker's default TTL, capped by policy)")
    .option('--purpose <text>', 'why, for reviewers and the audit trail')
    .option('--adapter <name>', `emulator: ${ADAPTER_NAMES.join('|')} (default ${DEFAULT_ADAPTER})`)
    .option('--capability <name>', `${CAPABILITIES.join('|')} (default cloud.sandbox)`)
    .option('--label <key=value>', 'a label on the sandbox; repeat for more', collect)
    .option('--wait', 'return once READY (through approval, if needed) instead of once screened')
    .option('--timeout <duration>', 'stop waiting (for screening, or with --wait for READY) after this long (default 10m); the sandbox itself goes on')
    .addOption(jsonOption())
    .action(
      action(async (raw) => {
        const config = loadConfig();
        // --principal is required unless SANDBOXPLANE_PRINCIPAL says who calls.
        const schema = config.principal === undefined ? createOptionsSchema.extend({ principal: principalSchema }) : createOptionsSchema;
        const options = parseCliOptions(schema, raw);
        const principal = options.principal ?? config.principal;
        const request = {
          ...(options.id !== undefined ? { id: options.id } : {}),
          ...(principal !== undefined ? { principal } : {}),
          ...(options.services !== undefined ? { services: options.services } : {}),
          ...(options.ttl !== undefined ? { ttlSeconds: options.ttl } : {}),
          ...(options.purpose !== undefined ? { purpose: options.purpose } : {}),
          ...(options.adapter !== undefined ? { adapter: options.adapter } : {}),
          ...(options.capability !== undefined ? { capability: options.capability } : {}),
          labels: options.label ?? {},
        };
        const wait = { wait: options.wait ? ('ready' as const) : ('accepted' as const), ...(options.timeout !== undefined ? { timeoutMs: options.timeout * 1000 } : {}) };
        const { fromSnapshot, services } = options;
        if (fromSnapshot === undefined && services === undefined) {
          throw new SandboxPlaneError('INVALID_INPUT', '--services: required (comma-separated, e.g. s3,sqs), unless --from-snapshot names a snapshot to fork');
        }
        const status = await withSandboxClient(config, (sandboxes) =>
          fromSnapshot !== undefined ? sandboxes.fork(fromSnapshot, request, wait) : sandboxes.create({ ...request, services: services ?? [] }, wait),
        );
        const next = status.state === 'PROVISIONING' ? `\n\nNot READY yet: \`sandboxctl status ${status.id}\` shows when it is (or create with --wait).` : '';
        printResult({ json: options.json }, status, `${formatStatus(status)}${next}`);
      }),
    );

  registerStatusCommand(program);

  program
    .command('resources')
    .description('what a READY sandbox holds (buckets, tables, queues), asked of its emulator; names each service it could not list')
    .argument('<id>', 'sandbox id')
    .addOption(jsonOption())
    .action(
      action(async (raw, args) => {
        const id = sandboxIdArgument(args);
        const { resources, unlisted } = await withSandboxClient(loadConfig(), (sandboxes) => sandboxes.resourceListing(id));
        const lines = [
          ...resources.map((r) => `${r.service}  ${r.type}  ${r.id}${r.stack === undefined ? '' : `  (stack ${r.stack}, ${r.logicalId ?? '?'})`}`),
          ...unlisted.map((u) => `${u.service}  (not listed: ${u.reason})`),
        ];
        const human = resources.length === 0 && unlisted.length === 0 ? 'nothing yet' : lines.join('\n');
        printResult({ json: raw.json === true }, { sandboxId: id, resources, unlisted, complete: unlisted.length === 0 }, human);
      }),
    );

  program
    .command('list')
    .description('sandboxes, newest first, from Temporal visibility (lags about a second behind)')
    .option('--state <state>', `only this state: ${SANDBOX_STATES.join('|')}`)
    .option('--principal <name>', 'only sandboxes of this principal')
    .addOption(jsonOption())
    .action(
      action(async (raw) => {
        const options = parseCliOptions(listOptionsSchema, raw);
        const sandboxes = await withSandboxClient(loadConfig(), (client) =>
          client.list({
            ...(options.state !== undefined ? { state: options.state } : {}),
            ...(options.principal !== undefined ? { principal: options.principal } : {}),
          }),
        );
        printResult({ json: options.json }, { sandboxes }, formatSandboxList(sandboxes));
      }),
    );

  program
    .command('audit')
    .description("one sandbox's audit trail, oldest first, as the store role recorded it")
    .argument('<id>', 'sandbox id')
    .addOption(jsonOption())
    .action(
      action(async (raw, args) => {
        const id = sandboxIdArgument(args);
        const operations = await withStoreClient(loadConfig(), (store) => store.audit(id));
        printResult({ json: raw.json === true }, { sandboxId: id, operations }, formatAudit(id, operations));
      }),
    );

  program
    .command('extend')
    .description("move a READY sandbox's expiry later; refused past now + its max TTL or its maximum lifetime")
    .argument('<id>', 'sandbox id')
    .option('--ttl <duration>', 'how much to add to the current expiry: 90s, 30m, 2h (required)')
    .option('--tree', "extend its whole family (`sandboxctl tree`): the root first, then each fork, clamped to the root's new expiry")
    .option('--reason <text>', 'why, for the audit trail')
    .addOption(actorOption())
    .addOption(jsonOption())
    .action(
      sandboxAction(extendOptionsSchema, async (id, options) => {
        const change = { ttlSeconds: options.ttl, actor: options.actor, ...(options.reason !== undefined ? { reason: options.reason } : {}) };
        if (options.tree) return printTree(options.json, await withSandboxClient(loadConfig(), (sandboxes) => sandboxes.extendTree(id, change)), 'extensions');
        const status = await withSandboxClient(loadConfig(), (sandboxes) => sandboxes.extend(id, change));
        printResult({ json: options.json }, status, formatStatus(status));
        return 0;
      }),
    );

  program
    .command('destroy')
    .description('tear a sandbox down now; returns once it is DESTROYED (an ended sandbox just shows its final state)')
    .argument('<id>', 'sandbox id')
    .option('--tree', 'destroy its whole family (`sandboxctl tree`): the root and every fork, at once')
    .option('--reason <text>', 'why, for the audit trail')
    .addOption(actorOption())
    .addOption(jsonOption())
    .action(
      sandboxAction(destroyOptionsSchema, async (id, options) => {
        const why = { actor: options.actor, ...(options.reason !== undefined ? { reason: options.reason } : {}) };
        if (options.tree) return printTree(options.json, await withSandboxClient(loadConfig(), (sandboxes) => sandboxes.destroyTree(id, why)), 'teardowns');
        const status = await withSandboxClient(loadConfig(), (sandboxes) => sandboxes.destroy(id, why));
        printResult({ json: options.json }, status, formatStatus(status));
        return 0;
      }),
    );

  for (const signal of ['approve', 'deny'] as const) {
    program
      .command(signal)
      .description(
        signal === 'approve'
          ? 'approve a sandbox AWAITING_APPROVAL and print the verdict (the "decide" update, judged like the UI\'s "approve" signal); it then provisions'
          : 'refuse a sandbox AWAITING_APPROVAL and print the verdict (the "decide" update, judged like the UI\'s "deny" signal); it ends DENIED',
      )
      .argument('<id>', 'sandbox id')
      .option('--approver <name>', 'who decides (required): a listed approver (`sandboxctl approvers list`), not the requester')
      .option('--reason <text>', 'why, for the requester and the audit trail')
      .option('--code <digits>', "the approver's current 6-digit code from their authenticator (required: without it the decision is refused, APPROVAL_UNVERIFIED)")
      .addOption(jsonOption())
      .action(
        sandboxAction(approvalOptionsSchema, async (id, options) => {
          const payload = {
            approver: options.approver,
            ...(options.reason !== undefined ? { reason: options.reason } : {}),
            ...(options.code !== undefined ? { code: options.code } : {}),
          };
          const outcome = await withSandboxClient(loadConfig(), (sandboxes) => (signal === 'approve' ? sandboxes.approve(id, payload) : sandboxes.deny(id, payload)));
          printResult({ json: options.json }, outcome, formatApprovalOutcome(outcome));
        }),
      );
  }
}
