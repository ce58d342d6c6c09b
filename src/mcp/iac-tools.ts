import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { SandboxClient } from '../client/sandbox-client';
import { iacRunIdSchema } from '../domain/iac/iac-run';
import { MAX_TEMPLATE_BYTES, stackNameSchema } from '../domain/iac/template';
import { sandboxIdSchema } from '../domain/sandbox-id';
import { targetNameSchema } from '../domain/targets';
import { DEFAULT_WAIT_SECONDS, ERRORS, registerTool, structured } from './sandbox-tools';

/**
 * Why an MCP tool takes no `cdkApp` (DESIGN §18): synthesizing a CDK app runs its code, and
 * here that code would run with the server's rights and environment (its Temporal
 * credentials, the codec keys), not the agent's.
 */
export const CDK_APP_REFUSED =
  "unknown field: give only the fields this tool lists. A CDK app (cdkApp) is refused by every MCP server and the gateway: synthesizing it would run the app's code with the plane's rights; run `cdk synth` on your side and send the template";

/** What plan_iac and apply_iac take (the gateway's IaC route takes the same, less what its path says): templates, never a CDK app. */
export const changeInput = z
  .object({
    sandboxId: sandboxIdSchema.optional().describe('The READY sandbox to change (one of yours: a moto or Floci sandbox). Give this or target.'),
    target: targetNameSchema
      .optional()
      .describe(
        "An operator's target to promote to (staging or production): only a template with the same parameters you APPLIED in one of your sandboxes within 24 h (PROOF_MISSING otherwise); people always approve it.",
      ),
    template: z
      .string()
      .max(MAX_TEMPLATE_BYTES, 'must be at most 1 MiB')
      .optional()
      .describe(
        "A CloudFormation template's text, JSON or YAML (CloudFormation's short tags such as !Ref and !GetAtt work). For a CDK app, run `cdk synth` on your side and send its template.",
      ),
    templateName: z.string().max(300).optional().describe('The file the template came from, e.g. stack.yaml: shown to reviewers, and the default stack name.'),
    stack: stackNameSchema.optional().describe('The stack to change (default: from templateName).'),
    parameters: z.record(z.string(), z.string()).optional().describe('Template parameters by name; only parameters the template declares.'),
    runId: iacRunIdSchema.optional().describe('The run id, also the idempotency key: the same id and request return the same run. Omit it for a fresh one.'),
    timeoutSeconds: z
      .number()
      .int()
      .positive()
      .max(3600)
      .optional()
      .describe(`Stop waiting after this many seconds (default ${DEFAULT_WAIT_SECONDS}) with WAIT_TIMEOUT; the run goes on: iac_status shows it.`),
  })
  .strict(CDK_APP_REFUSED);

const applyInput = changeInput.extend({
  wait: z
    .enum(['planned', 'ended'])
    .default('planned')
    .describe(
      "'planned' (default): return once the plan is shown (state AWAITING_APPROVAL when a human must approve, else APPLYING or later). 'ended': once APPLIED, FAILED, DENIED or EXPIRED.",
    ),
});

const statusInput = z.object({ runId: iacRunIdSchema.describe('The run id (the runId of a plan_iac or apply_iac result).') }).strict();

const RESULT =
  'The result is the run: runId, state (PLANNING, PLANNED, AWAITING_APPROVAL, APPLYING, APPLIED, FAILED, DENIED, EXPIRED), plan {digest, changes [{action Add|Modify|Remove, logicalId, type, properties [{path, before, after}]}], ' +
  "unsupported [{logicalId, type}]: types the sandbox's emulator will NOT create, security [{logicalId, type, reason}]}, resources [{logicalId, type, physicalId, status}] after an apply " +
  "(VERIFIED: checked through the service's own API), waitingFor and error.";

/**
 * plan_iac, apply_iac and iac_status (DESIGN §14), as the server's principal: another
 * principal's sandbox or run is NOT_FOUND. Templates only, on stdio as on the gateway
 * ({@link CDK_APP_REFUSED}).
 */
export function registerIacTools(server: McpServer, options: { readonly sandboxes: () => Promise<SandboxClient> }): void {
  const { sandboxes } = options;
  const request = ({ timeoutSeconds, ...rest }: z.output<typeof changeInput>) => ({ request: rest, timeoutMs: (timeoutSeconds ?? DEFAULT_WAIT_SECONDS) * 1000 });

  registerTool(
    server,
    'plan_iac',
    {
      title: 'Plan infrastructure as code',
      description: [
        "Plan a CloudFormation template against a stack in your sandbox: the plane's own diff of what will really happen there, what the emulator cannot create, and what touches security. Nothing is changed.",
        RESULT,
        ERRORS,
      ].join(' '),
      // Not read-only: a CDK template's plan puts the bootstrap parameter into the sandbox.
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    changeInput,
    (args) => args.sandboxId ?? args.target ?? '(none)',
    async (args) => {
      const { request: change, timeoutMs } = request(args);
      return structured({ ...(await (await sandboxes()).iac.plan(change, { timeoutMs })) });
    },
  );

  registerTool(
    server,
    'apply_iac',
    {
      title: 'Apply infrastructure as code',
      description: [
        'Plan and apply a CloudFormation template to a stack in your sandbox. When policy asks for a human, the run waits in AWAITING_APPROVAL for a reviewer who approves its plan digest; call iac_status to follow it.',
        "The apply is checked through the services' own APIs: APPLIED only when the stack holds what the plan said.",
        "With target instead of sandboxId it promotes what worked in your sandbox to an operator's target: planned against the target itself, shown to reviewers with its sandbox proof, applied only once they approve.",
        RESULT,
        ERRORS,
      ].join(' '),
      // Idempotent only with a runId: without one each call is a new run.
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    applyInput,
    (args) => args.sandboxId ?? args.target ?? '(none)',
    async ({ wait, ...args }) => {
      const { request: change, timeoutMs } = request(args);
      return structured({ ...(await (await sandboxes()).iac.apply(change, { wait, timeoutMs })) });
    },
  );

  registerTool(
    server,
    'iac_status',
    { title: 'IaC run status', description: ['The current status of one IaC run.', RESULT, ERRORS].join(' '), annotations: { readOnlyHint: true, openWorldHint: false } },
    statusInput,
    (args) => args.runId,
    async (args) => structured({ ...(await (await sandboxes()).iac.status(args.runId)) }),
  );
}
