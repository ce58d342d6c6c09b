/**
 * What a plan needs of the CloudFormation resource specification (DESIGN §14, "What a plan
 * must say"): whether a type holds data, and which of its properties force a replacement.
 * The data is the specification's own, as `cdk diff` reads it (@aws-cdk/aws-service-spec),
 * loaded by the workers (adapters/cloudformation-resource-spec.ts); the plan only asks.
 */

/** How a property's change affects its resource, in CloudFormation's words (ResourceChangeDetail.Target.RequiresRecreation). */
export type RequiresRecreation = 'Never' | 'Conditionally' | 'Always';

/** One type as the specification describes it. */
export interface ResourceTypeSpec {
  /** The type holds data that its removal or replacement loses (the specification's `isStateful`). */
  readonly stateful: boolean;
  /** Top-level properties whose change replaces the resource: `Always` (create-only) or `Conditionally` (it depends on the value). */
  readonly replaces: Readonly<Record<string, Exclude<RequiresRecreation, 'Never'>>>;
}

export interface ResourceSpec {
  /** Which specification this is, e.g. `@aws-cdk/aws-service-spec@0.1.216`: plans say what they were judged by. */
  readonly source: string;
  /** The type, or undefined when the specification does not know it (a custom resource, a third-party type). */
  type(type: string): ResourceTypeSpec | undefined;
}

/**
 * How changing `property` of a `type` resource affects it. A type the specification does
 * not know is `Conditionally`: nothing says it is not replaced.
 */
export function requiresRecreation(spec: ResourceSpec, type: string, property: string): RequiresRecreation {
  const known = spec.type(type);
  if (known === undefined) return 'Conditionally';
  return Object.hasOwn(known.replaces, property) ? (known.replaces[property] as RequiresRecreation) : 'Never';
}
