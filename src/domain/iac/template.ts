/**
 * CloudFormation templates as the plane takes them (DESIGN §14): the one home of every
 * rule a template and its parameters must meet before a plan is made. Pure, so the IaC
 * workflow checks what it is given itself.
 */
import { z } from 'zod';
import { SandboxPlaneError } from '../errors';

/** A CloudFormation template in its JSON form, as parsed: checked by {@link validateTemplate}, never normalised. */
export type CfnTemplate = Readonly<Record<string, unknown>>;

/** The largest template taken, in bytes of its JSON (or of its source text): CloudFormation's own limit for a template in S3. */
export const MAX_TEMPLATE_BYTES = 1024 * 1024;

/** Deeper than any real template; it bounds the recursion of every walk over one. */
export const MAX_TEMPLATE_DEPTH = 100;

/** CloudFormation's rule for stack names. */
export const STACK_NAME_PATTERN = /^[A-Za-z][-A-Za-z0-9]{0,127}$/;

/** A stack name given by a caller (`--stack`). */
export const stackNameSchema = z.string().regex(STACK_NAME_PATTERN, 'must be 1-128 letters, digits or dashes, starting with a letter');

/** The sections a template may have. `Transform` is not among them: the plane plans what it can read, and a macro's output it cannot. */
export const TEMPLATE_SECTIONS = ['AWSTemplateFormatVersion', 'Description', 'Metadata', 'Parameters', 'Rules', 'Mappings', 'Conditions', 'Resources', 'Outputs'] as const;

/** Every `Fn::` key CloudFormation knows; the last several appear only in Rules. */
export const INTRINSIC_FUNCTIONS = [
  'Fn::Base64',
  'Fn::Cidr',
  'Fn::FindInMap',
  'Fn::GetAtt',
  'Fn::GetAZs',
  'Fn::ImportValue',
  'Fn::Join',
  'Fn::Select',
  'Fn::Split',
  'Fn::Sub',
  'Fn::Transform',
  'Fn::Length',
  'Fn::ToJsonString',
  'Fn::If',
  'Fn::Equals',
  'Fn::Not',
  'Fn::And',
  'Fn::Or',
  'Fn::Contains',
  'Fn::EachMemberEquals',
  'Fn::EachMemberIn',
  'Fn::RefAll',
  'Fn::ValueOf',
  'Fn::ValueOfAll',
] as const;

/** What a `Ref` may name besides the template's own parameters and resources. */
export const PSEUDO_PARAMETERS = ['AWS::AccountId', 'AWS::NotificationARNs', 'AWS::NoValue', 'AWS::Partition', 'AWS::Region', 'AWS::StackId', 'AWS::StackName', 'AWS::URLSuffix'] as const;

/** The keys a resource may have besides `Type` and `Properties`. */
export const RESOURCE_ATTRIBUTES = ['Condition', 'CreationPolicy', 'DeletionPolicy', 'DependsOn', 'Metadata', 'UpdatePolicy', 'UpdateReplacePolicy'] as const;

const TEMPLATE_FORMAT_VERSION = '2010-09-09';
const LOGICAL_ID_PATTERN = /^[A-Za-z0-9]{1,255}$/;
// `Vendor::Service::Thing` (and module types with more parts), or a custom resource.
const RESOURCE_TYPE_PATTERN = /^(?:[A-Za-z0-9]+(?:::[A-Za-z0-9]+){2,}|Custom::[A-Za-z0-9_@-]{1,60})$/;
/** A `${Name}`, `${Resource.Attribute}` or literal `${!Text}` in an Fn::Sub string; global, so for `matchAll` and `replace` only. */
export const SUB_REFERENCE = /\$\{([^}]*)\}/g;
const TEMPLATE_EXTENSION = /\.(?:json|ya?ml|template)$/i;
/** Problems listed in one error; the rest are counted. */
const MAX_LISTED_PROBLEMS = 20;

const KNOWN_INTRINSICS: ReadonlySet<string> = new Set(INTRINSIC_FUNCTIONS);
const KNOWN_SECTIONS: ReadonlySet<string> = new Set(TEMPLATE_SECTIONS);
const KNOWN_PSEUDO_PARAMETERS: ReadonlySet<string> = new Set(PSEUDO_PARAMETERS);
const RESOURCE_KEYS: ReadonlySet<string> = new Set(['Type', 'Properties', ...RESOURCE_ATTRIBUTES]);

/** A JSON object: a plain object, not an array, a Date or a class instance. */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** Bytes of `text` as UTF-8, without an encoder (none is promised inside a workflow). */
export function utf8ByteLength(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i += 1) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i += 1;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * JSON with every object's keys sorted (by UTF-16 code unit; arrays keep their order), so
 * the same value always gives the same text: what digests are taken of. Values JSON cannot
 * hold are treated as `JSON.stringify` treats them (`undefined` dropped, `NaN` null).
 */
export function canonicalJson(value: unknown): string {
  return canonical(value, new Set()) ?? 'null';
}

function canonical(value: unknown, ancestors: Set<object>): string | undefined {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      throw new SandboxPlaneError('INVALID_INPUT', 'a bigint has no JSON form');
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
  }
  if (value === null) return 'null';
  const object = value as object;
  const toJSON = (object as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') return canonical(toJSON.call(object), ancestors);
  if (ancestors.has(object)) throw new SandboxPlaneError('INVALID_INPUT', 'a value that contains itself has no JSON form');
  ancestors.add(object);
  try {
    if (Array.isArray(object)) return `[${object.map((item: unknown) => canonical(item, ancestors) ?? 'null').join(',')}]`;
    const record = object as Record<string, unknown>;
    const members: string[] = [];
    for (const key of Object.keys(record).sort()) {
      const text = canonical(record[key], ancestors);
      if (text !== undefined) members.push(`${JSON.stringify(key)}:${text}`);
    }
    return `{${members.join(',')}}`;
  } finally {
    ancestors.delete(object);
  }
}

/** A deep, mutable copy of a JSON value; `__proto__` keys stay ordinary keys. */
export function cloneJson<T>(value: T): T {
  if (Array.isArray(value)) return value.map((item: unknown) => cloneJson(item)) as T;
  if (isJsonObject(value)) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, cloneJson(item)])) as T;
  return value;
}

function deepFreeze<T>(value: T): T {
  if (Array.isArray(value)) value.forEach((item: unknown) => deepFreeze(item));
  else if (isJsonObject(value)) Object.values(value).forEach((item) => deepFreeze(item));
  return typeof value === 'object' && value !== null ? Object.freeze(value) : value;
}

/** `Resources.Queue.Properties` for keys, `[2]` for list indices. */
export function joinPath(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path === '' ? key : `${path}.${key}`;
}

const where = (path: string) => (path === '' ? 'template' : path);

function describeKind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return isJsonObject(value) ? 'an object' : `a ${(value as object).constructor?.name ?? 'non-JSON object'}`;
  return `a ${typeof value}`;
}

/**
 * The stack name a template gets when the caller names none: from a file name
 * (`my_app.template.yaml` → `my-app`), a folder or a CDK stack name. Always valid.
 */
export function defaultStackName(fileOrDirName: string): string {
  const base =
    fileOrDirName
      .split(/[\\/]+/)
      .filter((part) => part !== '')
      .pop() ?? '';
  let name = base;
  while (TEMPLATE_EXTENSION.test(name)) name = name.replace(TEMPLATE_EXTENSION, '');
  name = name
    .replace(/[^-A-Za-z0-9]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^-+|-+$/g, '');
  if (name === '') return 'stack';
  if (!/^[A-Za-z]/.test(name)) name = `stack-${name}`;
  return name.slice(0, 128).replace(/-+$/, '');
}

/**
 * Types whose resources put content in the stack that the plan cannot show (DESIGN §14):
 * a nested stack or stack set creates whatever its own template says, a macro rewrites
 * templates, and serverless types exist only through a transform.
 */
export function refusedTypeReason(type: string): string | undefined {
  if (type === 'AWS::CloudFormation::Stack') return 'a nested stack creates whatever its TemplateURL says, which the plan does not show; put its resources in this template';
  if (type === 'AWS::CloudFormation::StackSet') return 'a stack set deploys a template the plan does not show, into other accounts and regions';
  if (type === 'AWS::CloudFormation::Macro') return 'a macro rewrites the templates that use it, so no plan would show what they create';
  if (type.startsWith('AWS::Serverless::')) return 'serverless types exist only through the AWS::Serverless transform; expand it (sam package / sam build) before planning';
  return undefined;
}

interface Declared {
  readonly parameters: ReadonlySet<string>;
  readonly resources: ReadonlySet<string>;
  readonly conditions: ReadonlySet<string>;
}

const keysOf = (value: unknown): ReadonlySet<string> => new Set(isJsonObject(value) ? Object.keys(value) : []);

/**
 * `template` if it is a template the plane can plan with `parameters`; otherwise an
 * INVALID_INPUT error listing every problem found, each with its path. The template is
 * returned as given (a frozen copy): nothing is normalised.
 */
export function validateTemplate(template: unknown, parameters: Readonly<Record<string, string>>): CfnTemplate {
  if (!isJsonObject(template)) throw invalid([`template: must be a JSON object (a mapping of template sections), got ${describeKind(template)}`]);
  // First, because the size and every later walk recurse: this bounds them and finds cycles.
  const shapeProblem = jsonShapeProblem(template, '', 0);
  if (shapeProblem !== undefined) throw invalid([shapeProblem]);
  const bytes = utf8ByteLength(canonicalJson(template));
  if (bytes > MAX_TEMPLATE_BYTES) throw invalid([`template: ${bytes} bytes of JSON, more than the ${MAX_TEMPLATE_BYTES} allowed`]);

  const problems: string[] = [];
  const declared: Declared = { parameters: keysOf(template.Parameters), resources: keysOf(template.Resources), conditions: keysOf(template.Conditions) };
  checkSections(template, problems);
  checkParameterDeclarations(template.Parameters, problems);
  checkResources(template.Resources, declared, problems);
  checkIntrinsics(template, '', declared, problems);
  checkGivenParameters(template.Parameters, parameters, problems);
  if (problems.length > 0) throw invalid(problems);
  return deepFreeze(cloneJson(template));
}

function invalid(problems: readonly string[]): SandboxPlaneError {
  const listed = problems.slice(0, MAX_LISTED_PROBLEMS);
  const more = problems.length > listed.length ? `; … and ${problems.length - listed.length} more` : '';
  return new SandboxPlaneError('INVALID_INPUT', `invalid template: ${listed.join('; ')}${more}`, { details: { problems: [...problems] } });
}

function jsonShapeProblem(value: unknown, path: string, depth: number): string | undefined {
  if (depth > MAX_TEMPLATE_DEPTH) return `${where(path)}: nested more than ${MAX_TEMPLATE_DEPTH} levels deep`;
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : `${where(path)}: ${value} is not a JSON number`;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) {
      const problem = jsonShapeProblem(value[i], joinPath(path, i), depth + 1);
      if (problem !== undefined) return problem;
    }
    return undefined;
  }
  if (isJsonObject(value)) {
    for (const [key, item] of Object.entries(value)) {
      const problem = jsonShapeProblem(item, joinPath(path, key), depth + 1);
      if (problem !== undefined) return problem;
    }
    return undefined;
  }
  return `${where(path)}: ${describeKind(value)} is not a JSON value`;
}

function checkSections(template: Readonly<Record<string, unknown>>, problems: string[]): void {
  for (const key of Object.keys(template)) {
    if (key === 'Transform') problems.push('Transform: transforms (e.g. AWS::Serverless) are not supported: expand them before planning');
    else if (!KNOWN_SECTIONS.has(key)) problems.push(`${key}: not a template section (allowed: ${TEMPLATE_SECTIONS.join(', ')})`);
  }
  const version = template.AWSTemplateFormatVersion;
  if (version !== undefined && version !== TEMPLATE_FORMAT_VERSION) {
    problems.push(`AWSTemplateFormatVersion: must be '${TEMPLATE_FORMAT_VERSION}' (the only version), got ${JSON.stringify(version)}`);
  }
  if (template.Description !== undefined && typeof template.Description !== 'string') problems.push(`Description: must be a string, got ${describeKind(template.Description)}`);
  for (const section of ['Metadata', 'Parameters', 'Rules', 'Mappings', 'Conditions', 'Outputs'] as const) {
    const value = template[section];
    if (value !== undefined && !isJsonObject(value)) problems.push(`${section}: must be an object, got ${describeKind(value)}`);
  }
  if (!isJsonObject(template.Resources))
    problems.push(`Resources: required, an object of resources by logical id; got ${template.Resources === undefined ? 'none' : describeKind(template.Resources)}`);
  else if (Object.keys(template.Resources).length === 0) problems.push('Resources: must declare at least one resource');
}

function checkParameterDeclarations(declarations: unknown, problems: string[]): void {
  if (!isJsonObject(declarations)) return;
  for (const [name, declaration] of Object.entries(declarations)) {
    const path = joinPath('Parameters', name);
    if (!LOGICAL_ID_PATTERN.test(name)) problems.push(`${path}: a parameter name must be 1-255 letters or digits`);
    if (!isJsonObject(declaration)) problems.push(`${path}: must be an object with a Type, got ${describeKind(declaration)}`);
    else if (typeof declaration.Type !== 'string') problems.push(`${path}.Type: required, a string such as String, Number or CommaDelimitedList`);
  }
}

function checkResources(resources: unknown, declared: Declared, problems: string[]): void {
  if (!isJsonObject(resources)) return;
  for (const [logicalId, resource] of Object.entries(resources)) {
    const path = joinPath('Resources', logicalId);
    if (!LOGICAL_ID_PATTERN.test(logicalId)) problems.push(`${path}: a logical id must be 1-255 letters or digits`);
    if (!isJsonObject(resource)) {
      problems.push(`${path}: must be an object with a Type, got ${describeKind(resource)}`);
      continue;
    }
    if (typeof resource.Type !== 'string') problems.push(`${path}.Type: required, a string such as AWS::S3::Bucket`);
    else if (!RESOURCE_TYPE_PATTERN.test(resource.Type)) problems.push(`${path}.Type: ${JSON.stringify(resource.Type)} is not a resource type (Vendor::Service::Thing or Custom::Name)`);
    else if (refusedTypeReason(resource.Type) !== undefined) problems.push(`${path}.Type: ${resource.Type} is refused: ${refusedTypeReason(resource.Type) as string}`);
    if (resource.Properties !== undefined && !isJsonObject(resource.Properties)) problems.push(`${path}.Properties: must be an object, got ${describeKind(resource.Properties)}`);
    for (const key of Object.keys(resource)) {
      if (!RESOURCE_KEYS.has(key)) problems.push(`${joinPath(path, key)}: not a resource attribute (allowed: Type, Properties, ${RESOURCE_ATTRIBUTES.join(', ')})`);
    }
    const dependsOn = resource.DependsOn;
    if (dependsOn !== undefined) {
      const targets = typeof dependsOn === 'string' ? [dependsOn] : Array.isArray(dependsOn) && dependsOn.every((item) => typeof item === 'string') ? (dependsOn as string[]) : undefined;
      if (targets === undefined) problems.push(`${path}.DependsOn: must be a logical id or a list of them`);
      for (const target of targets ?? []) {
        if (!declared.resources.has(target) || target === logicalId) problems.push(`${path}.DependsOn: ${target} is not another resource of this template`);
      }
    }
    const condition = resource.Condition;
    if (condition !== undefined && (typeof condition !== 'string' || !declared.conditions.has(condition))) {
      problems.push(`${path}.Condition: must name a condition declared in Conditions, got ${JSON.stringify(condition)}`);
    }
  }
}

function checkIntrinsics(value: unknown, path: string, declared: Declared, problems: string[]): void {
  if (Array.isArray(value)) {
    value.forEach((item, index) => checkIntrinsics(item, joinPath(path, index), declared, problems));
    return;
  }
  if (!isJsonObject(value)) return;
  const keys = Object.keys(value);
  const functions = keys.filter((key) => key.startsWith('Fn::'));
  for (const name of functions) {
    if (!KNOWN_INTRINSICS.has(name)) problems.push(`${where(path)}: unknown intrinsic function ${name} (known: Ref, ${INTRINSIC_FUNCTIONS.join(', ')})`);
    else if (name === 'Fn::Transform') problems.push(`${where(path)}: Fn::Transform is refused: a macro puts content in the stack that nobody reviewed; expand it before planning`);
  }
  if ((functions.length > 0 || keys.includes('Ref')) && keys.length !== 1) {
    problems.push(`${where(path)}: an intrinsic function is an object with exactly one key, got ${keys.join(', ')}`);
  } else if (keys.length === 1) {
    if (keys[0] === 'Ref') checkRef(value.Ref, path, declared, problems);
    else if (keys[0] === 'Fn::GetAtt') checkGetAtt(value['Fn::GetAtt'], joinPath(path, 'Fn::GetAtt'), declared, problems);
    else if (keys[0] === 'Fn::Sub') checkSub(value['Fn::Sub'], joinPath(path, 'Fn::Sub'), declared, problems);
  }
  for (const key of keys) checkIntrinsics(value[key], joinPath(path, key), declared, problems);
}

function isReferable(name: string, declared: Declared): boolean {
  return declared.parameters.has(name) || declared.resources.has(name) || KNOWN_PSEUDO_PARAMETERS.has(name);
}

function checkRef(target: unknown, path: string, declared: Declared, problems: string[]): void {
  if (typeof target !== 'string') problems.push(`${joinPath(path, 'Ref')}: must name a parameter, a resource or a pseudo parameter, got ${describeKind(target)}`);
  else if (!isReferable(target, declared)) {
    problems.push(`${joinPath(path, 'Ref')}: ${target} is not a declared parameter, a resource or a pseudo parameter (${PSEUDO_PARAMETERS.join(', ')})`);
  }
}

function checkGetAtt(argument: unknown, path: string, declared: Declared, problems: string[]): void {
  const logicalId = typeof argument === 'string' ? argument.split('.')[0] : Array.isArray(argument) && argument.length === 2 ? argument[0] : undefined;
  const attributeNamed = typeof argument === 'string' ? argument.includes('.') : Array.isArray(argument) && argument.length === 2;
  if (typeof logicalId !== 'string' || !attributeNamed) problems.push(`${path}: must be [LogicalId, Attribute] or "LogicalId.Attribute"`);
  else if (!declared.resources.has(logicalId)) problems.push(`${path}: ${logicalId} is not a resource of this template`);
}

function checkSub(argument: unknown, path: string, declared: Declared, problems: string[]): void {
  const [text, variables] = Array.isArray(argument) ? argument : [argument, {}];
  if (typeof text !== 'string' || !isJsonObject(variables) || (Array.isArray(argument) && argument.length !== 2)) {
    problems.push(`${path}: must be a string or [string, {variables}]`);
    return;
  }
  for (const [, reference] of text.matchAll(SUB_REFERENCE)) {
    if (reference === undefined || reference.startsWith('!')) continue;
    const name = reference.includes('::') ? reference : (reference.split('.')[0] ?? '');
    if (Object.hasOwn(variables, reference) || isReferable(name, declared)) continue;
    problems.push(`${path}: \${${reference}} is not a variable, a declared parameter, a resource or a pseudo parameter (write \${!${reference}} for the literal text)`);
  }
}

function checkGivenParameters(declarations: unknown, given: Readonly<Record<string, string>>, problems: string[]): void {
  const declared = isJsonObject(declarations) ? declarations : {};
  const names = Object.keys(declared);
  for (const [name, value] of Object.entries(given)) {
    if (!Object.hasOwn(declared, name)) {
      const list = names.length === 0 ? 'the template declares none' : `declared: ${names.join(', ')}`;
      problems.push(`parameters.${name}: not a parameter of this template (${list})`);
    } else if (typeof value !== 'string') problems.push(`parameters.${name}: must be a string, got ${describeKind(value)}`);
  }
  for (const [name, declaration] of Object.entries(declared)) {
    if (isJsonObject(declaration) && !Object.hasOwn(declaration, 'Default') && !Object.hasOwn(given, name)) {
      problems.push(`parameters.${name}: required (Parameters.${name} has no Default): give it a value`);
    }
  }
}
