import { z } from 'zod';

/**
 * The value the plane stores in a sandbox's CDK bootstrap version parameters
 * (`/cdk-bootstrap/<qualifier>/version`) before it applies a CDK template there.
 *
 * 34 is the `CdkBootstrapVersion` of the bootstrap template shipped with the aws-cdk CLI
 * 2.1149 that this package depends on. aws-cdk-lib 2.278's default synthesizer asserts at
 * least 6 to deploy, 8 for its lookup role and 22 when roles carry session tags; the
 * current template's version meets each, as a real `cdk bootstrap` would have.
 */
export const CDK_BOOTSTRAP_VERSION = 34;

/** The CloudFormation parameter type that CloudFormation (and moto) fills from SSM Parameter Store at deploy time. */
const SSM_STRING_PARAMETER_TYPE = 'AWS::SSM::Parameter::Value<String>';

/** The rule the CDK's default (and CLI-credentials) synthesizer adds to every stack it synthesizes. */
const BOOTSTRAP_RULE = 'CheckBootstrapVersion';

/** `DefaultStackSynthesizer.DEFAULT_BOOTSTRAP_STACK_VERSION_SSM_PARAMETER` with any qualifier. */
const BOOTSTRAP_PARAMETER_NAME = /^\/cdk-bootstrap\/[^/]+\/version$/;

/** What SSM accepts as a parameter name; an ARN (a parameter shared from another account) is not ours to create. */
const SSM_PARAMETER_NAME = /^[A-Za-z0-9_.\-/]{1,2048}$/;

/**
 * What a CDK-synthesized template expects to exist in the account before it can deploy:
 * the SSM parameters its bootstrap version check reads.
 */
export interface CdkBootstrapNeeds {
  /**
   * Each SSM parameter to create (sorted by name), with the lowest version the template's
   * `CheckBootstrapVersion` rule accepts, or `null` when no rule checks it.
   */
  ssmParameters: { name: string; minimumVersion: number | null }[];
}

const ssmParameterSchema = z.object({ Type: z.literal(SSM_STRING_PARAMETER_TYPE), Default: z.string().regex(SSM_PARAMETER_NAME) });

/**
 * The assertion aws-cdk-lib renders for a required version N:
 * `{ "Fn::Not": [{ "Fn::Contains": [["1", …, "N-1"], { "Ref": "BootstrapVersion" }] }] }`.
 */
const versionAssertionSchema = z.object({
  Assert: z.object({
    'Fn::Not': z.tuple([z.object({ 'Fn::Contains': z.tuple([z.array(z.string()), z.object({ Ref: z.string() })]) })]),
  }),
});

const bootstrapRuleSchema = z.object({ Assertions: z.array(z.unknown()) });

/**
 * The bootstrap needs of a CloudFormation template synthesized by the CDK: its
 * `AWS::SSM::Parameter::Value<String>` parameters that default to a bootstrap version
 * parameter (one the `CheckBootstrapVersion` rule checks, or one named
 * `/cdk-bootstrap/<qualifier>/version`), each with the minimum version that rule
 * asserts. A template without them (hand-written, or synthesized without the bootstrap
 * rule) needs nothing. Other SSM-typed parameters are the app's own, not bootstrap's, and
 * are left out: seeding them with a version number would deploy a wrong value silently.
 */
export function cdkBootstrapNeeds(template: Record<string, unknown>): CdkBootstrapNeeds {
  const minimumByParameter = minimumVersionsAsserted(template);
  const minimumByName = new Map<string, number | null>();
  for (const [logicalId, parameter] of Object.entries(asRecord(template.Parameters))) {
    const parsed = ssmParameterSchema.safeParse(parameter);
    if (!parsed.success) continue;
    const minimum = minimumByParameter.get(logicalId);
    if (minimum === undefined && !BOOTSTRAP_PARAMETER_NAME.test(parsed.data.Default)) continue;
    minimumByName.set(parsed.data.Default, highest(minimumByName.get(parsed.data.Default) ?? null, minimum ?? null));
  }
  return {
    ssmParameters: [...minimumByName.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([name, minimumVersion]) => ({ name, minimumVersion })),
  };
}

/** Logical id of each parameter the bootstrap rule checks → the lowest version its assertions accept. */
function minimumVersionsAsserted(template: Record<string, unknown>): Map<string, number> {
  const minimums = new Map<string, number>();
  const rule = bootstrapRuleSchema.safeParse(asRecord(template.Rules)[BOOTSTRAP_RULE]);
  if (!rule.success) return minimums;
  for (const assertion of rule.data.Assertions) {
    const parsed = versionAssertionSchema.safeParse(assertion);
    if (!parsed.success) continue;
    const [refused, { Ref: logicalId }] = parsed.data.Assert['Fn::Not'][0]['Fn::Contains'];
    // The refused versions are 1…N-1, so N is one above the highest; none refused accepts any.
    const minimum = Math.max(0, ...refused.map(Number).filter(Number.isSafeInteger)) + 1;
    minimums.set(logicalId, Math.max(minimums.get(logicalId) ?? 0, minimum));
  }
  return minimums;
}

function highest(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.max(a, b);
}

function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}
