import type { ResourceSpec, ResourceTypeSpec } from '../domain/iac/resource-spec';
// Generated from the pinned @aws-cdk/aws-service-spec by scripts/write-resource-spec.mjs; test/unit/resource-spec.test.ts keeps them equal.
import generated from './generated/cloudformation-resource-spec.json';

interface GeneratedSpec {
  readonly source: string;
  readonly types: Readonly<Record<string, ResourceTypeSpec>>;
}

const table = generated as GeneratedSpec;

/**
 * The CloudFormation resource specification as `cdk diff` reads it, reduced to what a plan
 * asks (statefulness, replacing properties): a 230 KB table instead of the 180 MB the full
 * specification takes in memory once loaded.
 */
export const cloudFormationResourceSpec: ResourceSpec = {
  source: table.source,
  type: (type) => (Object.hasOwn(table.types, type) ? table.types[type] : undefined),
};
