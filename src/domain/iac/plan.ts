/**
 * The plane's own plan of an IaC change (DESIGN §14): what each resource gains, loses or
 * changes and what that does to it (replaced, data lost, kept), what the conditions decide,
 * what the outputs become, what the emulator cannot create and what touches security,
 * bound by one digest. Its JSON shape is a contract (DESIGN §11). Pure: the IaC steps
 * compute it.
 */
import { z } from 'zod';
import { SandboxPlaneError } from '../errors';
import { sha256Hex } from '../sha256';
import { crossCheck, type EmulatorChange } from './cross-check';
import { noEchoParameters, parametersForDigest } from './sealed-parameters';
import { judgeChanges, KNOWN_AFTER_APPLY, referencedIds, type DiffedChange, type JudgedChange, type PlanWarning, type Replacement } from './plan-impact';
import type { RequiresRecreation, ResourceSpec } from './resource-spec';
import { canonicalJson, cloneJson, isJsonObject, utf8ByteLength, type CfnTemplate } from './template';
import { showSsmParameters } from './ssm-parameters';
import { evaluateTemplate, parameterContext, type EvaluatedTemplate, type EvaluationContext } from './template-evaluation';

export type { PlanWarning, Replacement } from './plan-impact';

/** What a plan does to one resource. */
export type PlanAction = 'Add' | 'Modify' | 'Remove';

/** One changed leaf of a resource: `before` is null for what is added, `after` null for what is removed. */
export interface PropertyChange {
  path: string;
  before: unknown;
  after: unknown;
  /** For a Modify: what changing it does to the resource, from the resource specification. */
  requiresRecreation?: RequiresRecreation;
}

/** One resource the plan adds, modifies or removes, with every changed property and what the change does to it. */
export interface PlanChange {
  action: PlanAction;
  logicalId: string;
  type: string;
  properties: PropertyChange[];
  /** For a Modify: whether CloudFormation replaces the resource (`True`), may (`Conditional`) or updates it in place (`False`); null otherwise. */
  replacement: Replacement | null;
  /** A stateful resource removed or replaced without a Retain or Snapshot policy: its data is lost. */
  dataLoss: boolean;
  /** Removed from the stack (or replaced) and kept by its DeletionPolicy/UpdateReplacePolicy Retain. */
  retained: boolean;
}

/** A resource whose type the target's emulator does not implement: it will not be created. */
export interface UnsupportedResource {
  logicalId: string;
  type: string;
}

/** A change a reviewer should look at twice (IAM, resource policies, public access, security groups), and why. */
export interface SecurityFinding {
  logicalId: string;
  type: string;
  reason: string;
}

/** A resource the template declares that its condition leaves out. */
export interface SkippedResource {
  logicalId: string;
  condition: string;
}

/** One output (or its export) added, changed or removed. */
export interface OutputChange {
  name: string;
  action: PlanAction;
  before: unknown;
  after: unknown;
}

/** The plan a person approves: its digest names exactly this plan of exactly this template. */
export interface IacPlan {
  digest: string;
  changes: PlanChange[];
  unsupported: UnsupportedResource[];
  security: SecurityFinding[];
  /** Every condition of the new template: true, false, or null when known only at apply. */
  conditions: Record<string, boolean | null>;
  skipped: SkippedResource[];
  outputs: OutputChange[];
  warnings: PlanWarning[];
}

/** A template with the parameter values given for it. */
export interface TemplateWithParameters {
  readonly template: CfnTemplate;
  readonly parameters: Readonly<Record<string, string>>;
}

/** A plan's digest: SHA-256, lowercase hex. */
export const planDigestSchema = z.string().regex(/^[0-9a-f]{64}$/, 'must be a plan digest: 64 lowercase hex digits');

/** One changed property; a missing `before` or `after` reads as null. */
export const propertyChangeSchema = z
  .object({ path: z.string().min(1), before: z.unknown(), after: z.unknown(), requiresRecreation: z.enum(['Never', 'Conditionally', 'Always']).optional() })
  .transform((change): PropertyChange => ({
    path: change.path,
    before: change.before ?? null,
    after: change.after ?? null,
    ...(change.requiresRecreation === undefined ? {} : { requiresRecreation: change.requiresRecreation }),
  }));

export const planChangeSchema = z.object({
  action: z.enum(['Add', 'Modify', 'Remove']),
  logicalId: z.string().min(1),
  type: z.string(),
  properties: z.array(propertyChangeSchema),
  // Plans made before the impact was judged have none: read as unknown, never as safe.
  replacement: z.enum(['True', 'False', 'Conditional']).nullable().default(null),
  dataLoss: z.boolean().default(false),
  retained: z.boolean().default(false),
});

export const unsupportedResourceSchema = z.object({ logicalId: z.string().min(1), type: z.string() });

export const securityFindingSchema = z.object({ logicalId: z.string().min(1), type: z.string(), reason: z.string().min(1) });

/** The §11 contract shape of a plan, as `iac plan --json` prints it and the workflow keeps it. */
export const iacPlanSchema: z.ZodType<IacPlan, z.ZodTypeDef, unknown> = z.object({
  digest: planDigestSchema,
  changes: z.array(planChangeSchema),
  unsupported: z.array(unsupportedResourceSchema),
  security: z.array(securityFindingSchema),
  conditions: z.record(z.string(), z.boolean().nullable()).default({}),
  skipped: z.array(z.object({ logicalId: z.string().min(1), condition: z.string() })).default([]),
  outputs: z.array(z.object({ name: z.string().min(1), action: z.enum(['Add', 'Modify', 'Remove']), before: z.unknown(), after: z.unknown() })).default([]),
  warnings: z.array(z.object({ logicalId: z.string(), code: z.string().min(1), message: z.string() })).default([]),
}) as unknown as z.ZodType<IacPlan, z.ZodTypeDef, unknown>;

/** The largest plan a run keeps: it travels in activity results and every status answer, which Temporal bounds. */
export const MAX_PLAN_BYTES = 1024 * 1024;

/** Resource attributes whose change is a change of the resource; `Metadata` is not one, and `Condition` is judged by evaluating it. */
const DIFFED_ATTRIBUTES = ['CreationPolicy', 'DeletionPolicy', 'DependsOn', 'UpdatePolicy', 'UpdateReplacePolicy'] as const;

/** What a NoEcho parameter shows as: the plan is read in the UI and kept in history. */
const NO_ECHO_MASK = '****';
const NO_ECHO_CHANGED_MASK = '**** (changed)';
const NO_ECHO_UNREADABLE_MASK = '**** (unknown)';

const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

type Segment = string | number;

interface Leaf {
  readonly segments: readonly Segment[];
  readonly before: unknown;
  readonly after: unknown;
}

/** Pseudo parameters known before apply, for a place in `region` and a stack named `stackName`. */
export type PseudoParameters = NonNullable<EvaluationContext['pseudo']>;

/**
 * The pseudo parameters a place's region and the stack's name decide; the account id is
 * the place's own and stays unknown (as do the stack's id and notification ARNs).
 */
export function pseudoParameters(region: string, stackName: string): PseudoParameters {
  const partition = region.startsWith('cn-') ? 'aws-cn' : region.startsWith('us-gov-') ? 'aws-us-gov' : 'aws';
  return { 'AWS::Region': region, 'AWS::StackName': stackName, 'AWS::Partition': partition, 'AWS::URLSuffix': partition === 'aws-cn' ? 'amazonaws.com.cn' : 'amazonaws.com' };
}

const resourcesOf = (template: CfnTemplate | null | undefined): Readonly<Record<string, unknown>> => (template && isJsonObject(template.Resources) ? template.Resources : {});
const typeOf = (resource: unknown): string => (isJsonObject(resource) && typeof resource.Type === 'string' ? resource.Type : '');

/** An intrinsic function object (`{"Ref": …}`, `{"Fn::…": …}`): one value, compared whole, never walked into. */
function isIntrinsic(value: unknown): boolean {
  if (!isJsonObject(value)) return false;
  const keys = Object.keys(value);
  return keys.length === 1 && (keys[0] === 'Ref' || (keys[0] ?? '').startsWith('Fn::'));
}

/**
 * Both sides evaluated with their parameters (conditions, Fn::If, Fn::FindInMap, …): what
 * CloudFormation would hold. NoEcho values are masked, marked as changed when they differ
 * from `base`'s; the real values decide conditions only.
 */
export function evaluateSides(
  base: TemplateWithParameters | null,
  next: TemplateWithParameters,
  pseudo: PseudoParameters = {},
): { base: EvaluatedTemplate | null; next: EvaluatedTemplate; warnings: PlanWarning[] } {
  // CloudFormation answers `****` for a NoEcho value it holds: whether it changes is unknown, so whatever uses it is shown `**** (unknown)`, never unchanged.
  const baseContext = base === null ? null : parameterContext(base.template, base.parameters, () => NO_ECHO_MASK);
  const maskOfNext = (name: string, value: string) => {
    const before = baseContext?.parameters.get(name);
    if (baseContext === null) return NO_ECHO_MASK;
    if (before === NO_ECHO_MASK) return NO_ECHO_UNREADABLE_MASK;
    return before !== undefined && [before].flat().join(',') === value ? NO_ECHO_MASK : NO_ECHO_CHANGED_MASK;
  };
  const nextContext = parameterContext(next.template, next.parameters, maskOfNext);
  const shown = showSsmParameters(next.template, next.parameters, evaluateTemplate(next.template, { ...nextContext, pseudo }));
  return {
    base: base === null || baseContext === null ? null : showSsmParameters(base.template, base.parameters, evaluateTemplate(base.template, { ...baseContext, pseudo })).evaluated,
    next: shown.evaluated,
    warnings: shown.warnings,
  };
}

/** Stands for a NoEcho value while the planned properties are worked out; never shown. */
const NO_ECHO_MARK = '\u0000sandboxplane-noecho\u0000';

/**
 * The Properties each resource the template creates (its condition not false) is planned
 * to have, what an apply is read back against. A value a NoEcho parameter decides becomes
 * a `Ref` to it, so it is never compared (nor written into a mismatch).
 */
export function plannedProperties(next: TemplateWithParameters, pseudo: PseudoParameters = {}): Record<string, Record<string, unknown>> {
  const context = parameterContext(next.template, next.parameters, (name) => `${NO_ECHO_MARK}${name}${NO_ECHO_MARK}`);
  const evaluated = evaluateTemplate(next.template, { ...context, pseudo });
  const hide = (value: unknown): unknown => {
    if (typeof value === 'string') {
      const name = value.includes(NO_ECHO_MARK) ? value.split(NO_ECHO_MARK)[1] : undefined;
      return name === undefined ? value : { Ref: name };
    }
    if (Array.isArray(value)) return value.map(hide);
    return isJsonObject(value) ? Object.fromEntries(Object.entries(value).map(([key, item]) => [key, hide(item)])) : value;
  };
  return Object.fromEntries(
    Object.entries(evaluated.resources).map(([logicalId, { resource }]) => [logicalId, hide(isJsonObject(resource.Properties) ? resource.Properties : {}) as Record<string, unknown>]),
  );
}

/** NoEcho parameters whose value the stack does not give back (`****`): whatever uses them is compared as unknown. */
function unreadableNoEchoWarnings(base: TemplateWithParameters | null, next: TemplateWithParameters): PlanWarning[] {
  if (base === null) return [];
  const declarations = isJsonObject(next.template.Parameters) ? next.template.Parameters : {};
  return Object.entries(declarations)
    .filter(([name, declaration]) => isJsonObject(declaration) && String(declaration.NoEcho).toLowerCase() === 'true' && base.parameters[name] === NO_ECHO_MASK)
    .map(([name]) => ({
      logicalId: name,
      code: 'NO_ECHO_UNKNOWN',
      message: `parameter ${name} is NoEcho and the stack gives back only ${NO_ECHO_MASK}: whether its value changes is unknown, so whatever uses it is shown ${NO_ECHO_UNREADABLE_MASK}`,
    }));
}

/**
 * The plane's own diff of `next` against `base` (null: nothing applied yet), resource by
 * resource, sorted by logical id, each with its changed leaves sorted by path; both sides
 * evaluated first ({@link evaluateSides}). What cannot be known before apply stays as its
 * intrinsic's JSON. A type change under one logical id is refused: CloudFormation refuses it.
 */
export function diffTemplates(base: TemplateWithParameters | null, next: TemplateWithParameters, pseudo: PseudoParameters = {}): DiffedChange[] {
  const sides = evaluateSides(base, next, pseudo);
  return diffResources(sides.base, sides.next);
}

function evaluatedResources(side: EvaluatedTemplate | null): Record<string, unknown> {
  return Object.fromEntries(Object.entries(side?.resources ?? {}).map(([logicalId, evaluated]) => [logicalId, evaluated.resource]));
}

function diffResources(base: EvaluatedTemplate | null, next: EvaluatedTemplate): DiffedChange[] {
  const baseResources = evaluatedResources(base);
  const nextResources = evaluatedResources(next);
  const logicalIds = [...new Set([...Object.keys(baseResources), ...Object.keys(nextResources)])].sort(compareText);
  const changes: DiffedChange[] = [];
  const retyped: string[] = [];
  for (const logicalId of logicalIds) {
    const before = Object.hasOwn(baseResources, logicalId) ? comparableResource(baseResources[logicalId]) : undefined;
    const after = Object.hasOwn(nextResources, logicalId) ? comparableResource(nextResources[logicalId]) : undefined;
    if (before === undefined && after !== undefined) {
      changes.push({ action: 'Add', logicalId, type: typeOf(nextResources[logicalId]), properties: diffResource({}, withoutType(after)) });
    } else if (before !== undefined && after === undefined) {
      changes.push({ action: 'Remove', logicalId, type: typeOf(baseResources[logicalId]), properties: diffResource(withoutType(before), {}) });
    } else if (before !== undefined && after !== undefined) {
      if (before.Type !== after.Type) retyped.push(`Resources.${logicalId}: its type changes from ${String(before.Type)} to ${String(after.Type)}`);
      const properties = diffResource(before, after);
      if (properties.length > 0) changes.push({ action: 'Modify', logicalId, type: typeOf(nextResources[logicalId]), properties });
    }
  }
  if (retyped.length > 0) {
    throw new SandboxPlaneError('INVALID_INPUT', `${retyped.join('; ')}: CloudFormation refuses a type change under one logical id`, {
      hint: 'Give the new resource another logical id (the old one is then removed), or keep its type.',
    });
  }
  return changes;
}

/** The parts of a (resolved) resource a diff compares. */
function comparableResource(resource: unknown): Record<string, unknown> {
  if (!isJsonObject(resource)) return {};
  const entries: [string, unknown][] = [['Type', resource.Type]];
  for (const attribute of DIFFED_ATTRIBUTES) {
    if (resource[attribute] === undefined) continue;
    // Order and repetition in DependsOn mean nothing; `A` and `[A]` are the same dependency.
    const value = attribute === 'DependsOn' ? [...new Set([resource.DependsOn].flat().map(String))].sort(compareText) : resource[attribute];
    entries.push([attribute, value]);
  }
  if (resource.Properties !== undefined) entries.push(['Properties', resource.Properties]);
  return Object.fromEntries(entries);
}

/** Outputs added, removed or changed (value or export name), sorted by name. */
function diffOutputs(base: EvaluatedTemplate | null, next: EvaluatedTemplate): OutputChange[] {
  const shown = (output: EvaluatedTemplate['outputs'][string] | undefined) =>
    output === undefined ? undefined : output.exportName === undefined ? { Value: output.value } : { Value: output.value, Export: output.exportName };
  const before = base?.outputs ?? {};
  const names = [...new Set([...Object.keys(before), ...Object.keys(next.outputs)])].sort(compareText);
  return names.flatMap((name): OutputChange[] => {
    const [was, now] = [shown(Object.hasOwn(before, name) ? before[name] : undefined), shown(Object.hasOwn(next.outputs, name) ? next.outputs[name] : undefined)];
    if (was === undefined && now !== undefined) return [{ name, action: 'Add', before: null, after: now }];
    if (was !== undefined && now === undefined) return [{ name, action: 'Remove', before: was, after: null }];
    if (was !== undefined && now !== undefined && canonicalJson(was) !== canonicalJson(now)) return [{ name, action: 'Modify', before: was, after: now }];
    return [];
  });
}

function diffResource(before: Record<string, unknown>, after: Record<string, unknown>): PropertyChange[] {
  const leaves: Leaf[] = [];
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) diffValue(before[key], after[key], [key], leaves);
  return propertyChanges(leaves);
}

function withoutType(view: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(view).filter(([key]) => key !== 'Type'));
}

/** Pushes each differing leaf; `undefined` is "absent" and equals null. Lists compare by index. */
function diffValue(before: unknown, after: unknown, segments: Segment[], leaves: Leaf[]): void {
  const beforeAbsent = before === undefined || before === null;
  const afterAbsent = after === undefined || after === null;
  if (beforeAbsent && afterAbsent) return;
  if (isContainer(before) && isContainer(after) && Array.isArray(before) === Array.isArray(after)) {
    const keys: Segment[] = Array.isArray(before)
      ? Array.from({ length: Math.max(before.length, (after as unknown[]).length) }, (_, index) => index)
      : [...new Set([...Object.keys(before), ...Object.keys(after as object)])];
    for (const key of keys) diffValue(memberOf(before, key), memberOf(after, key), [...segments, key], leaves);
    return;
  }
  if (beforeAbsent && isWalkable(after)) {
    for (const key of keysOf(after)) diffValue(undefined, memberOf(after, key), [...segments, key], leaves);
    return;
  }
  if (afterAbsent && isWalkable(before)) {
    for (const key of keysOf(before)) diffValue(memberOf(before, key), undefined, [...segments, key], leaves);
    return;
  }
  if (beforeAbsent || afterAbsent || canonicalJson(before) !== canonicalJson(after)) leaves.push({ segments, before: before ?? null, after: after ?? null });
}

/** A list or an object that is not an intrinsic: its members are diffed, not the whole. */
function isContainer(value: unknown): value is readonly unknown[] | Record<string, unknown> {
  return Array.isArray(value) || (isJsonObject(value) && !isIntrinsic(value));
}

/** A container with members: added or removed, its leaves are listed; an empty one is a leaf itself. */
function isWalkable(value: unknown): value is readonly unknown[] | Record<string, unknown> {
  return isContainer(value) && keysOf(value).length > 0;
}

const keysOf = (value: readonly unknown[] | Record<string, unknown>): Segment[] => (Array.isArray(value) ? value.map((_, index) => index) : Object.keys(value));

function memberOf(container: unknown, key: Segment): unknown {
  if (Array.isArray(container)) return typeof key === 'number' ? container[key] : undefined;
  return isJsonObject(container) && typeof key === 'string' && Object.hasOwn(container, key) ? container[key] : undefined;
}

function compareSegments(a: readonly Segment[], b: readonly Segment[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i += 1) {
    const [x, y] = [a[i] as Segment, b[i] as Segment];
    if (x === y) continue;
    if (typeof x === 'number' && typeof y === 'number') return x - y;
    return compareText(String(x), String(y));
  }
  return a.length - b.length;
}

// Keys that would make a dotted path ambiguous are written as `["a.b"]`.
const PLAIN_KEY = /^[^.[\]"\\\s]+$/;

/** `Properties.Tags[0].Value`; a key with a dot, a bracket, a quote or a space as `["key"]`. */
function formatPath(segments: readonly Segment[]): string {
  return segments
    .map((segment, index) => {
      if (typeof segment === 'number') return `[${segment}]`;
      if (!PLAIN_KEY.test(segment)) return `[${JSON.stringify(segment)}]`;
      return index === 0 ? segment : `.${segment}`;
    })
    .join('');
}

/** The segments of a path {@link formatPath} wrote. */
function parsePath(path: string): Segment[] {
  const segments: Segment[] = [];
  const token = /\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]|\.?([^.[\]"\\\s]+)/gy;
  for (let match = token.exec(path); match !== null && match[0] !== ''; match = token.exec(path)) {
    if (match[1] !== undefined) segments.push(Number(match[1]));
    else if (match[2] !== undefined) segments.push(JSON.parse(match[2]) as string);
    else segments.push(match[3] as string);
  }
  return segments;
}

function propertyChanges(leaves: Leaf[]): PropertyChange[] {
  return [...leaves].sort((a, b) => compareSegments(a.segments, b.segments)).map((leaf) => ({ path: formatPath(leaf.segments), before: leaf.before, after: leaf.after }));
}

/** The resources of `template` whose type `isSupported` refuses, sorted by logical id: the target will not create them. */
export function unsupportedResources(template: CfnTemplate, isSupported: (type: string) => boolean): UnsupportedResource[] {
  return Object.entries(resourcesOf(template))
    .filter(([, resource]) => !isSupported(typeOf(resource)))
    .map(([logicalId, resource]) => ({ logicalId, type: typeOf(resource) }))
    .sort((a, b) => compareText(a.logicalId, b.logicalId));
}

/** Resource policies by type, as a reviewer names them. */
const RESOURCE_POLICY_TYPES: Readonly<Record<string, string>> = {
  'AWS::S3::BucketPolicy': 'an S3 bucket policy',
  'AWS::SQS::QueuePolicy': 'an SQS queue policy',
  'AWS::SNS::TopicPolicy': 'an SNS topic policy',
  'AWS::Lambda::Permission': 'a Lambda permission (who may invoke a function)',
  'AWS::Logs::ResourcePolicy': 'a CloudWatch Logs resource policy',
  'AWS::SecretsManager::ResourcePolicy': 'a Secrets Manager resource policy',
};
/** Properties that hold a policy, on whatever resource. */
const POLICY_PROPERTIES: ReadonlySet<string> = new Set(['PolicyDocument', 'KeyPolicy', 'AssumeRolePolicyDocument', 'Policies', 'ManagedPolicyArns', 'PolicyText']);
const SECURITY_GROUP_TYPES: Readonly<Record<string, string>> = {
  'AWS::EC2::SecurityGroup': 'a security group',
  'AWS::EC2::SecurityGroupIngress': 'a security group ingress rule',
  'AWS::EC2::SecurityGroupEgress': 'a security group egress rule',
};
const PUBLIC_ACLS: ReadonlySet<string> = new Set(['PublicRead', 'PublicReadWrite', 'AuthenticatedRead']);
const PUBLIC_ACCESS_BLOCK_FLAGS = ['BlockPublicAcls', 'BlockPublicPolicy', 'IgnorePublicAcls', 'RestrictPublicBuckets'] as const;
const BUCKET_EXPOSURE_PROPERTIES = ['AccessControl', 'PublicAccessBlockConfiguration', 'WebsiteConfiguration'] as const;
const VERBS: Readonly<Record<PlanAction, string>> = { Add: 'creates', Modify: 'changes', Remove: 'removes' };

/**
 * What in `changes` touches security, for a reviewer: IAM, resource policies (and a grant
 * to anyone), public buckets, security groups (and ingress from the whole internet). One
 * finding per distinct reason, sorted by logical id then reason. Judged on the values the
 * plan shows (parameters resolved), laid over the template's resource.
 */
export function securityFindings(base: CfnTemplate | null, changes: readonly DiffedChange[], next: CfnTemplate): SecurityFinding[] {
  const findings = new Map<string, SecurityFinding>();
  for (const change of changes) {
    const source = change.action === 'Remove' ? resourcesOf(base)[change.logicalId] : resourcesOf(next)[change.logicalId];
    const resource = overlay(source, change);
    const properties = isJsonObject(resource.Properties) ? resource.Properties : {};
    for (const reason of reasonsFor(change, properties)) {
      findings.set(`${change.logicalId}\u0000${reason}`, { logicalId: change.logicalId, type: change.type, reason });
    }
  }
  return [...findings.values()].sort((a, b) => compareText(a.logicalId, b.logicalId) || compareText(a.reason, b.reason));
}

/**
 * The resource as the plan shows it: the change's resolved values laid over the
 * template's (`before` for a removal), without what the change removes.
 */
function overlay(resource: unknown, change: DiffedChange): Record<string, unknown> {
  const copy = isJsonObject(resource) ? cloneJson(resource) : {};
  for (const property of change.properties) setAt(copy, parsePath(property.path), change.action === 'Remove' ? property.before : property.after);
  const pruned = withoutNulls(copy);
  return isJsonObject(pruned) ? pruned : {};
}

/** `value` without null members, and without the lists and objects that leaves empty (an intrinsic is kept whole). */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) {
    const items = value.map(withoutNulls).filter((item) => item !== undefined);
    return items.length === 0 ? undefined : items;
  }
  if (!isJsonObject(value) || isIntrinsic(value)) return value ?? undefined;
  const entries = Object.entries(value)
    .map(([key, item]) => [key, withoutNulls(item)] as const)
    .filter(([, item]) => item !== undefined);
  return entries.length === 0 ? undefined : Object.fromEntries(entries);
}

function setAt(root: Record<string, unknown>, segments: readonly Segment[], value: unknown): void {
  let container: Record<string, unknown> | unknown[] = root;
  segments.forEach((segment, index) => {
    const last = index === segments.length - 1;
    const wantList = typeof segments[index + 1] === 'number';
    let child: unknown = last ? cloneJson(value) : memberOf(container, segment);
    if (!last && (wantList ? !Array.isArray(child) : !isJsonObject(child) || isIntrinsic(child))) child = wantList ? [] : {};
    if (Array.isArray(container) && typeof segment === 'number') container[segment] = child;
    else if (!Array.isArray(container) && typeof segment === 'string') Object.defineProperty(container, segment, { value: child, writable: true, enumerable: true, configurable: true });
    container = child as Record<string, unknown> | unknown[];
  });
}

function reasonsFor(change: DiffedChange, properties: Readonly<Record<string, unknown>>): string[] {
  const verb = VERBS[change.action];
  const reasons: string[] = [];
  const changedPaths = change.properties.map((property) => parsePath(property.path));
  const touches = (...names: string[]) => changedPaths.some((segments) => segments[0] === 'Properties' && names.includes(String(segments[1])));
  const { type } = change;
  const resultMatters = change.action !== 'Remove';

  if (type.startsWith('AWS::IAM::')) reasons.push(`${verb} an IAM ${describeTypeName(type.split('::')[2] ?? type)}`);
  else if (RESOURCE_POLICY_TYPES[type] !== undefined) reasons.push(`${verb} ${RESOURCE_POLICY_TYPES[type]}`);
  else if (type === 'AWS::KMS::Key') {
    if (change.action === 'Add') reasons.push('creates a KMS key with its key policy');
    else if (change.action === 'Remove') reasons.push('removes a KMS key and its key policy');
    else if (touches('KeyPolicy')) reasons.push('changes a KMS key policy');
  } else {
    const policyNames = new Set(changedPaths.flatMap((segments) => segments.filter((segment): segment is string => typeof segment === 'string' && POLICY_PROPERTIES.has(segment))));
    for (const name of [...policyNames].sort(compareText)) reasons.push(`${verb} a policy (${name})`);
  }
  if (resultMatters) reasons.push(...grantsToAnyone(properties));

  if (type === 'AWS::S3::Bucket' && resultMatters && (change.action === 'Add' || touches(...BUCKET_EXPOSURE_PROPERTIES))) {
    const exposure = bucketExposure(properties);
    if (exposure.length > 0) reasons.push(...exposure);
    else if (change.action === 'Modify') reasons.push("changes the bucket's public access settings");
  }

  if (SECURITY_GROUP_TYPES[type] !== undefined) {
    reasons.push(`${verb} ${SECURITY_GROUP_TYPES[type]}`);
    if (type === 'AWS::EC2::SecurityGroupIngress' && resultMatters) reasons.push(...openIngress([properties]));
    if (type === 'AWS::EC2::SecurityGroup' && resultMatters && (change.action === 'Add' || touches('SecurityGroupIngress'))) {
      reasons.push(...openIngress(Array.isArray(properties.SecurityGroupIngress) ? properties.SecurityGroupIngress : []));
    }
  }
  return reasons;
}

/** `ManagedPolicy` → `managed policy`, `OIDCProvider` → `OIDC provider`. */
function describeTypeName(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(' ')
    .map((word) => (/^[A-Z0-9]+$/.test(word) && word.length > 1 ? word : word.toLowerCase()))
    .join(' ');
}

/** Statements (and Lambda permissions) that allow `"Principal": "*"` or `{"AWS": "*"}`; a policy written as JSON text is read too. */
function grantsToAnyone(value: unknown, depth = 0): string[] {
  if (depth > 100) return [];
  if (typeof value === 'string') {
    if (!value.includes('Principal')) return [];
    try {
      return grantsToAnyone(JSON.parse(value), depth + 1);
    } catch {
      return [];
    }
  }
  if (Array.isArray(value)) return value.flatMap((item: unknown) => grantsToAnyone(item, depth + 1));
  if (!isJsonObject(value)) return [];
  const reasons = Object.values(value).flatMap((item) => grantsToAnyone(item, depth + 1));
  if (value.Effect !== 'Deny' && isAnyone(value.Principal)) {
    const limited = value.Condition !== undefined || value.SourceArn !== undefined || value.SourceAccount !== undefined;
    reasons.push(`grants access to anyone (Principal "*")${limited ? ', limited only by its conditions' : ''}`);
  }
  return reasons;
}

function isAnyone(principal: unknown): boolean {
  if (principal === '*') return true;
  if (!isJsonObject(principal)) return false;
  const aws = principal.AWS;
  return aws === '*' || (Array.isArray(aws) && aws.includes('*'));
}

function bucketExposure(properties: Readonly<Record<string, unknown>>): string[] {
  const reasons: string[] = [];
  const acl = properties.AccessControl;
  if (typeof acl === 'string' && PUBLIC_ACLS.has(acl)) reasons.push(`makes the bucket public (AccessControl ${acl})`);
  const block = properties.PublicAccessBlockConfiguration;
  if (isJsonObject(block)) {
    const off = PUBLIC_ACCESS_BLOCK_FLAGS.filter((flag) => block[flag] === false || block[flag] === 'false');
    if (off.length > 0) reasons.push(`turns off blocking of public access (${off.join(', ')} false)`);
  }
  if (properties.WebsiteConfiguration !== undefined && properties.WebsiteConfiguration !== null) reasons.push('serves the bucket as a public website (WebsiteConfiguration)');
  return reasons;
}

function openIngress(rules: readonly unknown[]): string[] {
  return rules.flatMap((rule) => {
    if (!isJsonObject(rule)) return [];
    const whole = rule.CidrIp === '0.0.0.0/0' ? '0.0.0.0/0' : rule.CidrIpv6 === '::/0' ? '::/0' : undefined;
    return whole === undefined ? [] : [`opens ${describePorts(rule)} to the whole internet (${whole})`];
  });
}

function describePorts(rule: Readonly<Record<string, unknown>>): string {
  const protocol = String(rule.IpProtocol ?? '-1');
  if (protocol === '-1' || protocol.toLowerCase() === 'all') return 'all ports of every protocol';
  const [from, to] = [rule.FromPort, rule.ToPort].map((port) => (port === undefined || port === null ? '-1' : String(port)));
  if (from === '-1' || to === '-1') return `all ${protocol} ports`;
  return from === to ? `port ${from}/${protocol}` : `ports ${from}-${to}/${protocol}`;
}

/** The digest a plan is approved by: SHA-256 of the canonical JSON of everything it binds. */
export function planDigest(input: {
  target: string;
  stack: string;
  template: CfnTemplate;
  parameters: Readonly<Record<string, string>>;
  baseTemplateDigest: string | null;
  changes: readonly PlanChange[];
  unsupported: readonly UnsupportedResource[];
  security: readonly SecurityFinding[];
  conditions?: Readonly<Record<string, boolean | null>>;
  skipped?: readonly SkippedResource[];
  outputs?: readonly OutputChange[];
  warnings?: readonly PlanWarning[];
  crossCheck?: readonly string[];
}): string {
  return sha256Hex(canonicalJson({ ...input, parameters: parametersForDigest(input.parameters) }));
}

/**
 * A template with its parameters, as one digest: what an apply is proven by and a later
 * plan is based on. Sealed NoEcho values count by their keyed MAC, so the same value
 * sealed twice is the same template, and the digest is no oracle for guessing it.
 */
export function templateDigest(template: CfnTemplate, parameters: Readonly<Record<string, string>>): string {
  return sha256Hex(canonicalJson({ template, parameters: parametersForDigest(parameters) }));
}

/** What the plane knows of the emulator or target a plan is made for. */
export interface PlanPlace {
  /** What the plan calls where it applies, e.g. `sandbox:sbx-1` (an approval is for one place). */
  readonly target: string;
  /** Whether its CloudFormation really creates resources of a type. */
  readonly isSupported: (type: string) => boolean;
  /** Why it cannot apply an update of a type that changes these top-level properties, where it cannot (an emulator's gap). */
  readonly updateGaps?: (type: string, properties: readonly string[]) => string | undefined;
  readonly pseudo?: PseudoParameters;
  /** Its own change set of the change, and who made it ("moto", "staging"): cross-checked with the plan. */
  readonly emulator?: { readonly name: string; readonly changes: readonly EmulatorChange[] };
}

/**
 * The whole plan of applying `next` to `stack` where `base` was applied last (null: a new
 * stack), at `place`, judged by `spec`. Both templates are expected to have passed
 * {@link validateTemplate}. INVALID_INPUT for what CloudFormation refuses (a type change
 * under one logical id) and for a plan larger than a run can keep.
 */
export function buildPlan(input: {
  stack: string;
  base: TemplateWithParameters | null;
  /** The template with its parameters as evaluated: NoEcho values opened. */
  next: TemplateWithParameters;
  /** The parameters as the digest binds them (sealed NoEcho values by their keyed MAC); by default `next`'s. */
  digestParameters?: Readonly<Record<string, string>>;
  /** A NoEcho value's keyed digest form, for the base's: no digest covers a secret unkeyed. Without it, they are masked. */
  keyed?: (parameter: string, value: string) => string;
  spec: ResourceSpec;
  place: PlanPlace;
}): IacPlan & { readonly crossCheck: readonly string[] } {
  const { stack, base, next, spec, place } = input;
  const sides = evaluateSides(base, next, place.pseudo ?? {});
  const judged = judgeChanges(diffResources(sides.base, sides.next), {
    spec,
    baseResources: evaluatedResources(sides.base),
    nextResources: evaluatedResources(sides.next),
  });
  const changes = judged.changes.map(asPlanChange);
  const nextResources = { Resources: evaluatedResources(sides.next) };
  const unsupported = unsupportedResources(nextResources, place.isSupported);
  const security = securityFindings(base?.template ?? null, changes, next.template);
  const outputs = withReplacedReferences(diffOutputs(sides.base, sides.next), sides.next, changes);
  const warnings = [
    ...judged.warnings,
    ...sides.warnings,
    ...outputs.warnings,
    ...conditionWarnings(sides.next),
    ...updateGapWarnings(changes, place),
    ...unreadableNoEchoWarnings(base, next),
  ].sort((a, b) => compareText(a.logicalId, b.logicalId) || compareText(a.code, b.code) || compareText(a.message, b.message));
  const shown = {
    changes,
    unsupported,
    security,
    conditions: { ...sides.next.conditions },
    skipped: [...sides.next.skipped],
    outputs: outputs.changes,
    warnings,
    crossCheck: place.emulator === undefined ? [] : crossCheck(changes, place.emulator.changes, place.emulator.name),
  };
  const baseTemplateDigest = base === null ? null : templateDigest(base.template, keyedNoEcho(base, input.keyed));
  const digest = planDigest({ target: place.target, stack, template: next.template, parameters: input.digestParameters ?? next.parameters, baseTemplateDigest, ...shown });
  const plan = { digest, ...shown };
  const bytes = utf8ByteLength(canonicalJson(plan));
  if (bytes > MAX_PLAN_BYTES) {
    throw new SandboxPlaneError('INVALID_INPUT', `the plan of stack ${stack} is ${bytes} bytes, more than the ${MAX_PLAN_BYTES} a run can keep in its history`, {
      hint: 'Split the template into smaller stacks, each planned and applied on its own.',
    });
  }
  return plan;
}

/** A side's parameters with each NoEcho value in its keyed form (or masked): what a digest may cover. */
function keyedNoEcho(side: TemplateWithParameters, keyed: ((parameter: string, value: string) => string) | undefined): Record<string, string> {
  const secret = new Set(noEchoParameters(side.template));
  return Object.fromEntries(
    Object.entries(side.parameters).map(([name, value]) => [name, !secret.has(name) || value === NO_ECHO_MASK ? value : keyed === undefined ? NO_ECHO_MASK : keyed(name, value)]),
  );
}

function asPlanChange(change: JudgedChange): PlanChange {
  return { ...change, properties: change.properties.map((property) => ({ ...property })) };
}

/**
 * Outputs whose value refers to a replaced resource change at apply, whatever their text:
 * listed as Modify, known after apply (an export others import most of all).
 */
function withReplacedReferences(diffed: OutputChange[], next: EvaluatedTemplate, changes: readonly PlanChange[]): { changes: OutputChange[]; warnings: PlanWarning[] } {
  const replaced = new Set(changes.filter((change) => change.replacement === 'True' || change.replacement === 'Conditional').map((change) => change.logicalId));
  const listed = new Set(diffed.map((output) => output.name));
  const added: OutputChange[] = [];
  const warnings: PlanWarning[] = [];
  for (const [name, output] of Object.entries(next.outputs)) {
    const refersTo = [...referencedIds([output.value, output.exportName])].filter((id) => replaced.has(id));
    if (listed.has(name) || refersTo.length === 0) continue;
    const shown = output.exportName === undefined ? { Value: output.value } : { Value: output.value, Export: output.exportName };
    added.push({ name, action: 'Modify', before: shown, after: KNOWN_AFTER_APPLY });
    const exported = output.exportName === undefined ? '' : ', and so does its export, for every stack that imports it';
    warnings.push({ logicalId: name, code: 'REFERENCE_REPLACED', message: `output ${name} refers to ${refersTo.join(', ')}, replaced: its value changes at apply${exported}` });
  }
  return { changes: [...diffed, ...added].sort((a, b) => compareText(a.name, b.name)), warnings };
}

/** A resource whose condition is known only at apply: the plan cannot say whether it is created. */
function conditionWarnings(next: EvaluatedTemplate): PlanWarning[] {
  return Object.entries(next.resources).flatMap(([logicalId, evaluated]) =>
    evaluated.condition !== undefined && evaluated.condition.value === null
      ? [{ logicalId, code: 'CONDITION_UNKNOWN', message: `whether ${logicalId} is created depends on condition ${evaluated.condition.name}, which is known only at apply` }]
      : [],
  );
}

/** Modifies of types the emulator cannot update: said before the apply, not found after it. */
function updateGapWarnings(changes: readonly PlanChange[], place: PlanPlace): PlanWarning[] {
  return changes.flatMap((change) => {
    const properties = [...new Set(change.properties.flatMap((property) => /^Properties\.([^.[]+)/.exec(property.path)?.[1] ?? []))];
    const gap = change.action === 'Modify' && properties.length > 0 ? place.updateGaps?.(change.type, properties) : undefined;
    return gap === undefined ? [] : [{ logicalId: change.logicalId, code: 'EMULATOR_CANNOT_UPDATE', message: gap }];
  });
}
