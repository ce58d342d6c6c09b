import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Command } from 'commander';
import { z } from 'zod';
import type { IacRequest } from '../../client/iac-client';
import { loadConfig } from '../../config/config';
import { SandboxPlaneError } from '../../domain/errors';
import { iacRunIdSchema, isIacTerminal } from '../../domain/iac/iac-run';
import { MAX_TEMPLATE_BYTES, stackNameSchema } from '../../domain/iac/template';
import { principalSchema } from '../../domain/sandbox-request';
import { sandboxIdSchema } from '../../domain/sandbox-id';
import { targetNameSchema } from '../../domain/targets';
import { durationSchema, fileSchema, parseCliArgument, parseCliOptions } from '../cli-options';
import { action, jsonOption } from '../command-action';
import { formatIacList, formatIacStatus } from '../format/iac-format';
import { printResult } from '../output';
import { withSandboxClient } from '../temporal-clients';

/** `--parameter K=V` (repeated) → `{K: V}`. */
const parametersSchema = z.array(z.string()).transform((pairs, ctx) => {
  const parameters: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `must be KEY=VALUE, got '${pair}'` });
      return z.NEVER;
    }
    parameters[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return parameters;
});

const changeOptionsSchema = z.object({
  template: fileSchema.optional(),
  cdkApp: fileSchema.optional(),
  stack: stackNameSchema.optional(),
  parameter: parametersSchema.optional(),
  principal: principalSchema.optional(),
  runId: iacRunIdSchema.optional(),
  target: targetNameSchema.optional(),
  wait: z.boolean().default(false),
  timeout: durationSchema.pipe(z.number().max(86_400, 'must be at most 1d')).optional(),
  json: z.boolean().default(false),
});

const decideOptionsSchema = z.object({
  approver: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'),
  code: z
    .string()
    .trim()
    .regex(/^\d{6}$/, 'must be the 6 digits your authenticator shows')
    .optional(),
  reason: z.string().max(1000, 'must be at most 1000 characters').optional(),
  planDigest: z
    .string()
    .regex(/^[0-9a-f]{64}$/, 'must be the 64 hex digits of the plan you read')
    .optional(),
  json: z.boolean().default(false),
});

const listOptionsSchema = z.object({ sandbox: sandboxIdSchema.optional(), target: targetNameSchema.optional(), json: z.boolean().default(false) });

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** The request from the flags: the template file read here (its size checked before reading), or the CDK app's directory. */
async function changeRequest(sandboxId: string | undefined, options: z.output<typeof changeOptionsSchema>, principal: string | undefined): Promise<IacRequest> {
  if ((options.template === undefined) === (options.cdkApp === undefined)) {
    throw new SandboxPlaneError('INVALID_INPUT', 'give exactly one of --template FILE and --cdk-app DIR');
  }
  if ((sandboxId === undefined) === (options.target === undefined)) {
    throw new SandboxPlaneError('INVALID_INPUT', 'give exactly one of SANDBOX_ID and --target NAME');
  }
  const common = {
    ...(sandboxId !== undefined ? { sandboxId } : {}),
    ...(options.target !== undefined ? { target: options.target } : {}),
    ...(options.stack !== undefined ? { stack: options.stack } : {}),
    ...(options.parameter !== undefined ? { parameters: options.parameter } : {}),
    ...(principal !== undefined ? { principal } : {}),
    ...(options.runId !== undefined ? { runId: options.runId } : {}),
  };
  if (options.cdkApp !== undefined) return { ...common, cdkApp: path.resolve(options.cdkApp) };
  const file = options.template as string;
  const size = await stat(file).then(
    (info) => info.size,
    (err: NodeJS.ErrnoException) => {
      throw new SandboxPlaneError('INVALID_INPUT', `--template: cannot read ${file} (${err.code ?? err.message})`);
    },
  );
  if (size > MAX_TEMPLATE_BYTES) throw new SandboxPlaneError('INVALID_INPUT', `--template: ${file} is ${size} bytes; a template may be at most ${MAX_TEMPLATE_BYTES} (1 MiB)`);
  return { ...common, template: await readFile(file, 'utf8'), templateName: path.basename(file) };
}

/** The sandbox a change is for; absent with --target (a promotion). */
function sandboxArgument(args: readonly string[]): string | undefined {
  return args[0] === undefined ? undefined : parseCliArgument(sandboxIdSchema, args[0], 'SANDBOX_ID');
}

function runArgument(args: readonly string[]): string {
  return parseCliArgument(iacRunIdSchema, args[0], 'RUN_ID');
}

/** iac plan|apply|approve|deny|status|list (DESIGN §11, "IaC"). */
export function registerIacCommands(program: Command): void {
  const iac = program
    .command('iac')
    .description("infrastructure as code in a sandbox: an honest plan, a person's approval when policy asks, an apply checked through the services' own APIs (docs/iac.md)");

  const changeCommand = (name: 'plan' | 'apply', description: string) =>
    iac
      .command(name)
      .description(description)
      .argument('[sandbox-id]', 'the READY sandbox to change (yours); leave it out with --target')
      .option(
        '--target <name>',
        name === 'apply'
          ? "promote to an operator's target instead (`sandboxctl targets list`): only what was APPLIED in one of your sandboxes within 24 h, planned against the target, applied once people approve (two for production)"
          : 'refused: a target is planned only as part of `iac apply --target`, which shows the plan and waits for approval',
      )
      .option('--template <file>', 'a CloudFormation template, JSON or YAML (at most 1 MiB)')
      .option('--cdk-app <dir>', "a CDK v2 app (its cdk.json); synthesized here with the app's own aws-cdk-lib, never on a worker")
      .option('--stack <name>', 'the stack to change (default: from the template file name, or the CDK stack)')
      .option('--parameter <key=value>', 'a template parameter; repeat for more', collect)
      .option('--principal <name>', 'whose change it is (required unless SANDBOXPLANE_PRINCIPAL is set)')
      .option('--run-id <id>', 'the run id, also the idempotency key (default: a fresh run-… id)')
      .option('--timeout <duration>', 'stop waiting after this long (default 10m); the run itself goes on')
      .addOption(jsonOption());

  changeCommand('plan', 'plan a change: what will really happen in the sandbox (added, changed, removed; unsupported; security), nothing changed').action(
    action(async (raw, args) => {
      const sandboxId = sandboxArgument(args);
      const options = parseCliOptions(changeOptionsSchema, raw);
      const config = loadConfig();
      const request = await changeRequest(sandboxId, options, options.principal ?? config.principal);
      const status = await withSandboxClient(config, (sandboxes) => sandboxes.iac.plan(request, options.timeout === undefined ? {} : { timeoutMs: options.timeout * 1000 }));
      printResult({ json: options.json }, status, formatIacStatus(status));
    }),
  );

  changeCommand('apply', 'plan and apply a change: returns once planned (and approval asked for, if policy wants it), or once applied with --wait')
    .option('--wait', 'return once the run has ended (APPLIED, FAILED, DENIED or EXPIRED)')
    .action(
      action(async (raw, args) => {
        const sandboxId = sandboxArgument(args);
        const options = parseCliOptions(changeOptionsSchema, raw);
        const config = loadConfig();
        const request = await changeRequest(sandboxId, options, options.principal ?? config.principal);
        const timeout = options.timeout === undefined ? {} : { timeoutMs: options.timeout * 1000 };
        const status = await withSandboxClient(config, async (sandboxes) => {
          const planned = await sandboxes.iac.apply(request, { wait: 'planned', ...timeout });
          if (!options.wait || isIacTerminal(planned.state)) return planned;
          // A person may take a while: the requester learns the run and its plan before the wait goes on.
          if (!options.json) process.stderr.write(`IaC run ${planned.runId} is ${planned.state}: ${planned.waitingFor}\n`);
          return sandboxes.iac.waitFor(planned.runId, { wait: 'ended', ...timeout });
        });
        printResult({ json: options.json }, status, formatIacStatus(status));
      }),
    );

  for (const decision of ['approve', 'deny'] as const) {
    iac
      .command(decision)
      .description(
        decision === 'approve'
          ? 'approve a run AWAITING_APPROVAL: the plan it shows (or --plan-digest), with your current code; it then applies'
          : 'refuse a run AWAITING_APPROVAL: it ends DENIED, nothing applied',
      )
      .argument('<run-id>', 'the IaC run')
      .option('--approver <name>', 'who decides (required): a listed approver, not the requester')
      .option('--code <digits>', "the approver's current 6-digit code from their authenticator (required)")
      .option('--reason <text>', 'why, for the requester and the audit trail')
      .option('--plan-digest <hex>', 'the digest of the plan you read (default: the one the run shows now); another is refused PLAN_STALE')
      .addOption(jsonOption())
      .action(
        action(async (raw, args) => {
          const runId = runArgument(args);
          const options = parseCliOptions(decideOptionsSchema, raw);
          const payload = {
            approver: options.approver,
            ...(options.code !== undefined ? { code: options.code } : {}),
            ...(options.reason !== undefined ? { reason: options.reason } : {}),
            ...(options.planDigest !== undefined ? { planDigest: options.planDigest } : {}),
          };
          const status = await withSandboxClient(loadConfig(), (sandboxes) => (decision === 'approve' ? sandboxes.iac.approve(runId, payload) : sandboxes.iac.deny(runId, payload)));
          printResult({ json: options.json }, status, formatIacStatus(status));
        }),
      );
  }

  iac
    .command('status')
    .description("one run: its state, plan, approvals, the resources its apply made and what it waits for (the run's status query)")
    .argument('<run-id>', 'the IaC run')
    .addOption(jsonOption())
    .action(
      action(async (raw, args) => {
        const runId = runArgument(args);
        const status = await withSandboxClient(loadConfig(), (sandboxes) => sandboxes.iac.status(runId));
        printResult({ json: raw.json === true }, status, formatIacStatus(status));
      }),
    );

  iac
    .command('list')
    .description('IaC runs, newest first, from Temporal visibility (lags about a second behind)')
    .option('--sandbox <id>', 'only the runs of this sandbox')
    .option('--target <name>', 'only the runs promoting to this target')
    .addOption(jsonOption())
    .action(
      action(async (raw) => {
        const options = parseCliOptions(listOptionsSchema, raw);
        const filter = { ...(options.sandbox === undefined ? {} : { sandboxId: options.sandbox }), ...(options.target === undefined ? {} : { target: options.target }) };
        const runs = await withSandboxClient(loadConfig(), (sandboxes) => sandboxes.iac.list(filter));
        printResult({ json: options.json }, { runs }, formatIacList(runs));
      }),
    );
}
