/**
 * Operator-registered targets of promotion (DESIGN §14): where an IaC run may go beyond
 * a sandbox. A target names an environment, a region, optionally an endpoint, and
 * optionally a profile of the AWS SDK's credential chain on the worker that serves
 * targets. No secret is ever stored: the plane keeps the profile's name, the worker's
 * own AWS configuration holds what it stands for.
 */
import { z } from 'zod';
import type { StoredAuditRow } from './lifecycle-record';

/** The environments a target may be: each has its capability and its number of approvers. */
export const TARGET_ENVIRONMENTS = ['staging', 'production'] as const;
export type TargetEnvironment = (typeof TARGET_ENVIRONMENTS)[number];

/** A target's name, as `sandboxctl targets add NAME` takes it and `iac apply --target NAME` names it. */
export const targetNameSchema = z.string().regex(/^[a-z][a-z0-9-]{0,62}$/, 'must start with a lowercase letter and hold only lowercase letters, digits and - (at most 63 characters)');

/** An AWS region name: `us-east-1`, `eu-west-2`, `ap-southeast-1`, `us-gov-west-1`, `us-isob-east-1`. */
export const targetRegionSchema = z
  .string()
  .regex(
    /^[a-z]{2,4}(-[a-z]{2,5})?-(north|south|east|west|central|northeast|northwest|southeast|southwest)-[1-9][0-9]?$/,
    'must be an AWS region name such as us-east-1, eu-west-2 or us-gov-west-1',
  );

/**
 * Where the target's AWS API answers, when not at the region's own endpoints (an
 * emulator in tests, a VPC endpoint): an http(s) URL with no credentials in it, no
 * query and no fragment. Credentials come from the profile, never from the URL.
 */
export const targetEndpointSchema = z
  .string()
  .trim()
  .max(2048, 'must be at most 2048 characters')
  .superRefine((text, ctx) => {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'must be an http(s) URL such as https://cloudformation.us-east-1.amazonaws.com' });
      return;
    }
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !/^https?:\/\/[^/?#]/i.test(text)) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'must be an http:// or https:// URL with a host' });
    }
    // Checked on the text as well: `new URL` drops an empty `?` or `#`, and an `@` with nothing before it.
    if (url.username !== '' || url.password !== '' || /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i.test(text)) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'must not carry credentials (user:pass@): the profile names them, on the worker' });
    }
    if (url.search !== '' || url.hash !== '' || /[?#]/.test(text)) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'must not have a query or a fragment' });
    }
  });

/**
 * The name of a profile in the AWS shared config and credentials files (`~/.aws/config`,
 * `~/.aws/credentials`) of the worker that serves targets: the AWS SDK's credential
 * chain resolves it there. Only the name is stored; no secret ever is.
 */
export const targetProfileSchema = z.string().regex(/^[A-Za-z0-9_.+=,@-]{1,64}$/, 'must be 1 to 64 letters, digits or _ . + = , @ - (the name of an AWS profile)');

/**
 * A new target, as an operator registers it. `endpoint` and `profile` left out are
 * `null`: the region's own endpoints, and the worker's default credential chain. The
 * profile names an AWS SDK credential-chain profile on the worker that serves targets;
 * no secret is ever stored.
 */
export const newTargetSchema = z
  .object({
    name: targetNameSchema,
    environment: z.enum(TARGET_ENVIRONMENTS),
    region: targetRegionSchema,
    endpoint: targetEndpointSchema.nullable().default(null),
    profile: targetProfileSchema.nullable().default(null),
  })
  .strict();
export type NewTargetInput = z.input<typeof newTargetSchema>;
export type NewTarget = z.output<typeof newTargetSchema>;

/**
 * A registered target, as the store keeps it. `profile` names an AWS SDK
 * credential-chain profile on the worker that serves targets (`null`: its default
 * chain); no secret is ever stored.
 */
export interface TargetRecord {
  readonly name: string;
  readonly environment: TargetEnvironment;
  readonly region: string;
  readonly endpoint: string | null;
  readonly profile: string | null;
  readonly addedAt: string;
}

/** One row of a target's audit trail: an IaC run's step against it. Kept after the target is removed. */
export interface TargetAuditEntry extends StoredAuditRow {
  readonly target: string;
}

/**
 * The capability an IaC run against a target of `environment` asks for; policy rows
 * on it decide (DESIGN §3, §14). Credentials for the target come from the profile on
 * the worker that serves targets; no secret is ever stored.
 */
export function capabilityOfEnvironment(environment: TargetEnvironment): 'cloud.staging.apply' | 'cloud.production.apply' {
  return environment === 'production' ? 'cloud.production.apply' : 'cloud.staging.apply';
}

/**
 * How many different approvers a change to a target of `environment` needs: the
 * two-person rule of production lives here and nowhere else (DESIGN §14). Approval is
 * always required for a target, so never fewer than one.
 */
export function approvalsNeeded(environment: TargetEnvironment): number {
  return environment === 'production' ? 2 : 1;
}
