/**
 * What a CloudFormation template comes to before apply, for given parameters (DESIGN §14
 * "What a plan must say"): its conditions, the resources and outputs CloudFormation would
 * create, with what the parameters, pseudo parameters and mappings decide resolved. What
 * only apply can tell stays as its intrinsic JSON, its arguments resolved as far as they
 * go: unknown is shown as unknown, never guessed. Pure and deterministic.
 */
import { canonicalJson, cloneJson, isJsonObject, MAX_TEMPLATE_DEPTH, SUB_REFERENCE, type CfnTemplate } from './template';

/** A parameter's value as Ref gives it: text, or a list for List<...>/CommaDelimitedList types. */
export type ParameterValue = string | readonly string[];

/** What the evaluator knows before apply. */
export interface EvaluationContext {
  /** Each parameter's value as Ref gives it (already defaulted). A parameter absent here is unknown before apply (e.g. SSM parameter types). */
  readonly parameters: ReadonlyMap<string, ParameterValue>;
  /** NoEcho parameters: what their Ref shows in resolved properties and outputs instead of the value (e.g. '****'). Conditions, Fn::FindInMap keys and Fn::Select/Fn::Split arguments still use the real value from `parameters`; the real value must never appear in any output of evaluateTemplate. */
  readonly masked?: ReadonlyMap<string, string>;
  /** Pseudo parameters known before apply; an absent one is unknown. AWS::NoValue is handled by the evaluator itself. */
  readonly pseudo?: Readonly<{ 'AWS::Region'?: string; 'AWS::AccountId'?: string; 'AWS::Partition'?: string; 'AWS::URLSuffix'?: string; 'AWS::StackName'?: string }>;
}

/** One resource CloudFormation would create. */
export interface EvaluatedResource {
  /** The resource with Properties (and the diffed attributes DeletionPolicy, UpdateReplacePolicy, DependsOn, UpdatePolicy, CreationPolicy) resolved; Type, Metadata and Condition kept as written. */
  readonly resource: Readonly<Record<string, unknown>>;
  /** Its Condition's name and value (null: not known before apply), when it has one. */
  readonly condition?: { readonly name: string; readonly value: boolean | null };
}

/** One output CloudFormation would have. */
export interface EvaluatedOutput {
  /** The resolved Value. */
  readonly value: unknown;
  /** The resolved Export.Name, when there is one. */
  readonly exportName?: unknown;
  /** Its Condition's name and value (null: not known before apply), when it has one. */
  readonly condition?: { readonly name: string; readonly value: boolean | null };
}

/** A template as it stands before apply: see {@link evaluateTemplate}. */
export interface EvaluatedTemplate {
  /** Every declared condition, by name: true/false, or null when it depends on something unknown before apply. */
  readonly conditions: Readonly<Record<string, boolean | null>>;
  /** The resources CloudFormation would create: those with no Condition, a true one, or an unknown one (null). */
  readonly resources: Readonly<Record<string, EvaluatedResource>>;
  /** Resources whose Condition is false, sorted by logical id. */
  readonly skipped: readonly { readonly logicalId: string; readonly condition: string }[];
  /** Outputs CloudFormation would have (false-condition ones left out). */
  readonly outputs: Readonly<Record<string, EvaluatedOutput>>;
}

/** Resource keys whose value is resolved; the rest (Type, Metadata, Condition) are kept as written. */
const RESOLVED_ATTRIBUTES: ReadonlySet<string> = new Set(['Properties', 'CreationPolicy', 'DeletionPolicy', 'DependsOn', 'UpdatePolicy', 'UpdateReplacePolicy']);
const SSM_PARAMETER_TYPE = 'AWS::SSM::Parameter::Value<';
const NO_VALUE_NAME = 'AWS::NoValue';

// Depths of the places resolution starts, so the bound below counts from the template's root.
const RESOURCE_ATTRIBUTE_DEPTH = 3;
const OUTPUT_VALUE_DEPTH = 3;
const CONDITION_DEPTH = 2;
// Resolved values nest a mapping's or a parameter's value inside a template's own nesting.
const MAX_VALUE_DEPTH = 2 * MAX_TEMPLATE_DEPTH;

/** Stands for a resolved `{"Ref": "AWS::NoValue"}`: the property or list item holding it is removed. */
const NO_VALUE: unique symbol = Symbol(NO_VALUE_NAME);

/**
 * A value resolved twice over: `real` with NoEcho parameters' values, which conditions,
 * mapping keys and Select/Split arguments need; `shown` with their masks, the only side
 * that leaves this module. One object for both when no NoEcho value flowed in.
 */
interface Resolved {
  readonly real: unknown;
  readonly shown: unknown;
}

interface Scope {
  readonly parameters: ReadonlyMap<string, ParameterValue>;
  readonly masked: ReadonlyMap<string, string>;
  readonly pseudo: Readonly<Record<string, string | undefined>>;
  readonly mappings: Readonly<Record<string, unknown>>;
  /** Filled in dependency order while Conditions are evaluated; an absent name reads as unknown. */
  readonly conditions: ReadonlyMap<string, boolean | null>;
}

/** A resource's or an output's Condition with its value. */
type AttachedCondition = NonNullable<EvaluatedResource['condition']>;

const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const sectionOf = (template: CfnTemplate, section: string): Readonly<Record<string, unknown>> => {
  const value = template[section];
  return isJsonObject(value) ? value : {};
};
const same = (value: unknown): Resolved => ({ real: value, shown: value });
const noValueRef = () => ({ Ref: NO_VALUE_NAME });
const isScalar = (value: unknown): value is string | number | boolean => typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';

/** `build` applied to each side, once when both sides are the same. */
function each(resolved: Resolved, build: (value: unknown) => unknown): Resolved {
  if (resolved.real === resolved.shown) return same(build(resolved.real));
  return { real: build(resolved.real), shown: build(resolved.shown) };
}

/** `build` applied to each side's parts, once when every part is the same on both sides. */
function combine(parts: readonly Resolved[], build: (values: unknown[]) => unknown): Resolved {
  const real = build(parts.map((part) => part.real));
  return parts.every((part) => part.real === part.shown) ? same(real) : { real, shown: build(parts.map((part) => part.shown)) };
}

/** The function an intrinsic object calls (`Ref`, `Fn::…`), or undefined for plain data. */
function intrinsicName(value: Record<string, unknown>): string | undefined {
  const keys = Object.keys(value);
  const [key] = keys;
  return keys.length === 1 && key !== undefined && (key === 'Ref' || key.startsWith('Fn::')) ? key : undefined;
}

/**
 * `template` as CloudFormation would see it with `context`: each condition's value, the
 * resources and outputs it would create (those whose Condition is false left out), with
 * properties and outputs resolved. NoEcho values appear only as their masks.
 */
export function evaluateTemplate(template: CfnTemplate, context: EvaluationContext): EvaluatedTemplate {
  const conditions = new Map<string, boolean | null>();
  const scope: Scope = {
    parameters: context.parameters,
    masked: context.masked ?? new Map(),
    pseudo: context.pseudo ?? {},
    mappings: sectionOf(template, 'Mappings'),
    conditions,
  };
  const declaredConditions = sectionOf(template, 'Conditions');
  evaluateConditions(declaredConditions, scope, conditions);

  const resources: [string, EvaluatedResource][] = [];
  const skipped: { logicalId: string; condition: string }[] = [];
  for (const [logicalId, resource] of Object.entries(sectionOf(template, 'Resources'))) {
    // validateTemplate refuses a resource that is not an object; there is nothing to create.
    if (!isJsonObject(resource)) continue;
    const condition = conditionOf(resource.Condition, conditions);
    if (condition?.value === false) skipped.push({ logicalId, condition: condition.name });
    else resources.push([logicalId, { resource: evaluateResource(resource, scope), ...(condition === undefined ? {} : { condition }) }]);
  }

  const outputs: [string, EvaluatedOutput][] = [];
  for (const [name, output] of Object.entries(sectionOf(template, 'Outputs'))) {
    if (!isJsonObject(output)) continue;
    const condition = conditionOf(output.Condition, conditions);
    if (condition?.value === false) continue;
    const exported = isJsonObject(output.Export) && Object.hasOwn(output.Export, 'Name') ? { exportName: shownValue(output.Export.Name, scope, OUTPUT_VALUE_DEPTH + 1) } : {};
    outputs.push([name, { value: shownValue(output.Value, scope, OUTPUT_VALUE_DEPTH), ...exported, ...(condition === undefined ? {} : { condition }) }]);
  }

  return {
    conditions: Object.fromEntries(Object.keys(declaredConditions).map((name) => [name, conditions.get(name) ?? null])),
    resources: Object.fromEntries(resources),
    skipped: skipped.sort((a, b) => compareText(a.logicalId, b.logicalId)),
    outputs: Object.fromEntries(outputs),
  };
}

/**
 * Each declared parameter's value as Ref gives it (given value, else Default; List<…>/CommaDelimitedList split on commas and trimmed), leaving out SSM parameter types (AWS::SSM::Parameter::Value<…>) and parameters with neither; plus the masks of NoEcho ones.
 * `mask` gets the raw text of a NoEcho parameter and returns what is shown instead.
 */
export function parameterContext(
  template: CfnTemplate,
  given: Readonly<Record<string, string>>,
  mask: (name: string, value: string) => string,
): { parameters: Map<string, ParameterValue>; masked: Map<string, string> } {
  const parameters = new Map<string, ParameterValue>();
  const masked = new Map<string, string>();
  for (const [name, declaration] of Object.entries(sectionOf(template, 'Parameters'))) {
    if (!isJsonObject(declaration)) continue;
    const type = typeof declaration.Type === 'string' ? declaration.Type : 'String';
    // CloudFormation reads these from SSM at deploy time: their Default is a parameter's name, not its value.
    if (type.startsWith(SSM_PARAMETER_TYPE)) continue;
    const raw = Object.hasOwn(given, name) ? given[name] : defaultText(declaration.Default);
    if (typeof raw !== 'string') continue;
    const isList = type === 'CommaDelimitedList' || type.startsWith('List<');
    parameters.set(name, isList ? raw.split(',').map((item) => item.trim()) : raw);
    if (String(declaration.NoEcho).toLowerCase() === 'true') masked.set(name, mask(name, raw));
  }
  return { parameters, masked };
}

function defaultText(value: unknown): string | undefined {
  if (isScalar(value)) return String(value);
  if (Array.isArray(value)) return value.map(String).join(',');
  return undefined;
}

function conditionOf(name: unknown, conditions: ReadonlyMap<string, boolean | null>): AttachedCondition | undefined {
  return typeof name === 'string' ? { name, value: conditions.get(name) ?? null } : undefined;
}

function evaluateResource(resource: Readonly<Record<string, unknown>>, scope: Scope): Record<string, unknown> {
  const entries = Object.entries(resource).flatMap(([key, value]): [string, unknown][] => {
    if (!RESOLVED_ATTRIBUTES.has(key)) return [[key, cloneJson(value)]];
    const { shown } = resolve(value, scope, RESOURCE_ATTRIBUTE_DEPTH);
    return shown === NO_VALUE ? [] : [[key, shown]];
  });
  return Object.fromEntries(entries);
}

/** What an output shows; an output cannot lose its Value, so a NoValue stays as written. */
function shownValue(value: unknown, scope: Scope, depth: number): unknown {
  return resolveArgument(value, scope, depth).shown;
}

// ---- Conditions ----

/**
 * Puts each declared condition's value into `values`, a condition only after those it
 * names (Kahn's order, no recursion over the chain). Conditions in a cycle stay unknown.
 */
function evaluateConditions(declared: Readonly<Record<string, unknown>>, scope: Scope, values: Map<string, boolean | null>): void {
  const names = Object.keys(declared);
  const waitingOn = new Map<string, Set<string>>();
  const dependents = new Map<string, string[]>();
  for (const name of names) {
    const dependencies = new Set(conditionsNamedIn(declared[name]).filter((dependency) => Object.hasOwn(declared, dependency)));
    waitingOn.set(name, dependencies);
    for (const dependency of dependencies) dependents.set(dependency, [...(dependents.get(dependency) ?? []), name]);
  }
  const ready = names.filter((name) => waitingOn.get(name)?.size === 0);
  for (let next = 0; next < ready.length; next += 1) {
    const name = ready[next] as string;
    values.set(name, conditionValue(declared[name], scope, CONDITION_DEPTH));
    for (const dependent of dependents.get(name) ?? []) {
      const waiting = waitingOn.get(dependent);
      waiting?.delete(name);
      if (waiting?.size === 0) ready.push(dependent);
    }
  }
}

/** The conditions an expression reads: `{"Condition": name}`, and `Fn::If`'s in case one is (wrongly) inside. */
function conditionsNamedIn(expression: unknown): string[] {
  const names: string[] = [];
  const pending: unknown[] = [expression];
  while (pending.length > 0) {
    const value = pending.pop();
    if (Array.isArray(value)) pending.push(...(value as unknown[]));
    else if (isJsonObject(value)) {
      if (typeof value.Condition === 'string' && Object.keys(value).length === 1) names.push(value.Condition);
      const branches = value['Fn::If'];
      if (Array.isArray(branches) && typeof branches[0] === 'string') names.push(branches[0]);
      pending.push(...Object.values(value));
    }
  }
  return names;
}

/** A condition's value, three-valued: null when what decides it is unknown before apply. */
function conditionValue(expression: unknown, scope: Scope, depth: number): boolean | null {
  if (depth > MAX_TEMPLATE_DEPTH || !isJsonObject(expression)) return null;
  const keys = Object.keys(expression);
  const [key] = keys;
  if (keys.length !== 1 || key === undefined) return null;
  const argument = expression[key];
  const operands = Array.isArray(argument) ? (argument as unknown[]) : undefined;
  switch (key) {
    case 'Condition':
      return typeof argument === 'string' ? (scope.conditions.get(argument) ?? null) : null;
    case 'Fn::Equals': {
      if (operands?.length !== 2) return null;
      const [a, b] = operands.map((operand) => resolve(operand, scope, depth + 2).real);
      return equalsAsText(a, b);
    }
    case 'Fn::Not': {
      if (operands?.length !== 1) return null;
      const value = conditionValue(operands[0], scope, depth + 2);
      return value === null ? null : !value;
    }
    case 'Fn::And':
    case 'Fn::Or': {
      if (operands === undefined || operands.length === 0) return null;
      const values = operands.map((operand) => conditionValue(operand, scope, depth + 2));
      // One false decides an And, one true an Or, whatever the unknown ones turn out to be.
      const decisive = key === 'Fn::Or';
      if (values.includes(decisive)) return decisive;
      return values.every((value) => value === !decisive) ? !decisive : null;
    }
    default:
      return null;
  }
}

/** Fn::Equals as CloudFormation compares: every scalar as text (`60` equals `"60"`); null while either side is unknown. */
function equalsAsText(a: unknown, b: unknown): boolean | null {
  if (!isKnown(a, 0) || !isKnown(b, 0)) return null;
  return canonicalJson(asText(a, 0)) === canonicalJson(asText(b, 0));
}

/** A value with no intrinsic left in it (and not a NoValue). */
function isKnown(value: unknown, depth: number): boolean {
  if (depth > MAX_VALUE_DEPTH || value === NO_VALUE) return false;
  if (Array.isArray(value)) return value.every((item) => isKnown(item, depth + 1));
  if (isJsonObject(value)) return intrinsicName(value) === undefined && Object.values(value).every((item) => isKnown(item, depth + 1));
  return true;
}

function asText(value: unknown, depth: number): unknown {
  if (isScalar(value)) return String(value);
  if (depth > MAX_VALUE_DEPTH) return value;
  if (Array.isArray(value)) return value.map((item) => asText(item, depth + 1));
  if (isJsonObject(value)) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, asText(item, depth + 1)]));
  return value;
}

// ---- Values ----

/** `value` resolved bottom-up; NO_VALUE for a removed one. Past the depth bound, kept as written (a template holds no parameter's value). */
function resolve(value: unknown, scope: Scope, depth: number): Resolved {
  if (depth > MAX_TEMPLATE_DEPTH) return same(value);
  if (Array.isArray(value)) {
    const items = (value as unknown[]).map((item) => resolve(item, scope, depth + 1)).filter((item) => item.shown !== NO_VALUE);
    return combine(items, (values) => values);
  }
  if (!isJsonObject(value)) return same(value);
  const name = intrinsicName(value);
  if (name !== undefined) return resolveIntrinsic(name, value[name], scope, depth);
  const entries = Object.entries(value)
    .map(([key, item]) => [key, resolve(item, scope, depth + 1)] as const)
    .filter(([, item]) => item.shown !== NO_VALUE);
  return combine(
    entries.map(([, item]) => item),
    (values) => Object.fromEntries(entries.map(([key], index) => [key, values[index]])),
  );
}

/** A function's argument: resolved, but a NoValue stays as written, since only a property or list item can be removed. */
function resolveArgument(value: unknown, scope: Scope, depth: number): Resolved {
  const resolved = resolve(value, scope, depth);
  return resolved.shown === NO_VALUE ? same(noValueRef()) : resolved;
}

/** A function's arguments: a list's items each by {@link resolveArgument}, so none is removed and none shifts. */
function resolveArguments(argument: unknown, scope: Scope, depth: number): Resolved {
  if (!Array.isArray(argument)) return resolveArgument(argument, scope, depth + 1);
  return combine(
    (argument as unknown[]).map((item) => resolveArgument(item, scope, depth + 2)),
    (values) => values,
  );
}

function resolveIntrinsic(name: string, argument: unknown, scope: Scope, depth: number): Resolved {
  if (name === 'Ref' && typeof argument === 'string') return resolveRef(argument, scope);
  if (name === 'Fn::If') return resolveIf(argument, scope, depth);
  if (name === 'Fn::Sub') return resolveSub(argument, scope, depth);
  const resolved = resolveArguments(argument, scope, depth);
  switch (name) {
    case 'Fn::FindInMap':
      return findInMap(resolved, scope);
    case 'Fn::Select': {
      const index = selectIndex(resolved.real);
      return each(resolved, (side) => select(index, side));
    }
    case 'Fn::Split':
      return split(resolved);
    case 'Fn::Join':
      return each(resolved, join);
    default:
      // GetAtt, ImportValue, GetAZs, Cidr, Base64, Length, ToJsonString and the rest: known only after apply.
      return each(resolved, (side) => ({ [name]: side }));
  }
}

function resolveRef(name: string, scope: Scope): Resolved {
  if (name === NO_VALUE_NAME) return same(NO_VALUE);
  const value = scope.parameters.get(name);
  if (value !== undefined) {
    const real = typeof value === 'string' ? value : [...value];
    const mask = scope.masked.get(name);
    return mask === undefined ? same(real) : { real, shown: mask };
  }
  const pseudo = Object.hasOwn(scope.pseudo, name) ? scope.pseudo[name] : undefined;
  return same(typeof pseudo === 'string' ? pseudo : { Ref: name });
}

function resolveIf(argument: unknown, scope: Scope, depth: number): Resolved {
  if (!Array.isArray(argument) || argument.length !== 3 || typeof argument[0] !== 'string') {
    return each(resolveArguments(argument, scope, depth), (side) => ({ 'Fn::If': side }));
  }
  const [name, whenTrue, whenFalse] = argument as [string, unknown, unknown];
  const value = scope.conditions.get(name) ?? null;
  if (value !== null) return resolve(value ? whenTrue : whenFalse, scope, depth + 2);
  return combine([resolveArgument(whenTrue, scope, depth + 2), resolveArgument(whenFalse, scope, depth + 2)], ([a, b]) => ({ 'Fn::If': [name, a, b] }));
}

/** A mapping's value (a copy) when the keys are known on the real side and the entry exists; else still a FindInMap. */
function findInMap(resolved: Resolved, scope: Scope): Resolved {
  const keys = resolved.real;
  if (Array.isArray(keys) && keys.length === 3 && keys.every(isScalar)) {
    let entry: unknown = scope.mappings;
    for (const key of keys.map(String)) entry = isJsonObject(entry) && Object.hasOwn(entry, key) ? entry[key] : undefined;
    if (entry !== undefined) return same(cloneJson(entry));
  }
  // A missing entry is left for the validator and CloudFormation to judge.
  return each(resolved, (side) => ({ 'Fn::FindInMap': side }));
}

/** Fn::Select's index, read on the real side: a whole number, or its digits as text. */
function selectIndex(argument: unknown): number | undefined {
  const index: unknown = Array.isArray(argument) && argument.length === 2 ? argument[0] : undefined;
  if (typeof index === 'number' && Number.isSafeInteger(index) && index >= 0) return index;
  return typeof index === 'string' && /^\d{1,15}$/.test(index) ? Number(index) : undefined;
}

function select(index: number | undefined, argument: unknown): unknown {
  const list: unknown = Array.isArray(argument) && argument.length === 2 ? argument[1] : undefined;
  // An unresolved Fn::If may turn out to be a NoValue and shift every later item.
  if (index === undefined || !Array.isArray(list) || index >= list.length || list.some(mayVanish)) return { 'Fn::Select': argument };
  return list[index] as unknown;
}

const mayVanish = (item: unknown): boolean => isJsonObject(item) && intrinsicName(item) === 'Fn::If';

/**
 * Fn::Split on the real side; the pieces are shown only when the text split is the same
 * on both sides, since pieces of a NoEcho value (rejoined, the value) must not be shown.
 */
function split(resolved: Resolved): Resolved {
  const splitOf = (argument: unknown): unknown => {
    if (Array.isArray(argument) && argument.length === 2) {
      const [delimiter, text] = argument as [unknown, unknown];
      if (typeof delimiter === 'string' && delimiter !== '' && typeof text === 'string') return text.split(delimiter);
    }
    return { 'Fn::Split': argument };
  };
  const real = splitOf(resolved.real);
  if (resolved.real === resolved.shown) return same(real);
  const textOf = (argument: unknown): unknown => (Array.isArray(argument) ? argument[1] : undefined);
  const sameText = typeof textOf(resolved.real) === 'string' && textOf(resolved.real) === textOf(resolved.shown);
  return { real, shown: sameText && Array.isArray(real) ? real : { 'Fn::Split': resolved.shown } };
}

function join(argument: unknown): unknown {
  if (Array.isArray(argument) && argument.length === 2) {
    const [delimiter, parts] = argument as [unknown, unknown];
    if (typeof delimiter === 'string' && Array.isArray(parts) && parts.every(isScalar)) return parts.map(String).join(delimiter);
  }
  return { 'Fn::Join': argument };
}

/**
 * Fn::Sub with what is known put in, on each side: text when every reference is known;
 * else still a Sub, with the known parts put in (escaped, so a value's `${` stays text)
 * and the rest left for CloudFormation.
 */
function resolveSub(argument: unknown, scope: Scope, depth: number): Resolved {
  const [text, variables] = Array.isArray(argument) ? (argument as unknown[]) : [argument, undefined];
  if (typeof text !== 'string' || (Array.isArray(argument) && (argument.length !== 2 || !isJsonObject(variables)))) {
    return each(resolveArguments(argument, scope, depth), (side) => ({ 'Fn::Sub': side }));
  }
  const declared = isJsonObject(variables) ? Object.entries(variables) : undefined;
  const resolvedVariables = combine(
    (declared ?? []).map(([, value]) => resolveArgument(value, scope, depth + 3)),
    (values) => Object.fromEntries((declared ?? []).map(([key], index) => [key, values[index]])),
  );
  const substitute = (side: 'real' | 'shown'): unknown => {
    const sideVariables = resolvedVariables[side] as Record<string, unknown>;
    const known = (reference: string): string | undefined => {
      const value = Object.hasOwn(sideVariables, reference) ? sideVariables[reference] : resolveRef(reference, scope)[side];
      return isScalar(value) ? String(value) : undefined;
    };
    return substituteText(text, known, declared === undefined ? undefined : sideVariables);
  };
  return { real: substitute('real'), shown: substitute('shown') };
}

function substituteText(text: string, known: (reference: string) => string | undefined, variables: Record<string, unknown> | undefined): unknown {
  let unresolved = false;
  const partial = text.replace(SUB_REFERENCE, (whole: string, reference: string) => {
    if (reference.startsWith('!')) return whole;
    const value = known(reference);
    if (value === undefined) unresolved = true;
    return value === undefined ? whole : value.replaceAll('${', '${!');
  });
  if (unresolved) return { 'Fn::Sub': variables === undefined ? partial : [partial, variables] };
  return text.replace(SUB_REFERENCE, (whole: string, reference: string) => (reference.startsWith('!') ? `\${${reference.slice(1)}}` : (known(reference) ?? whole)));
}
