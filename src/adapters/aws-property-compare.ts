/**
 * How a property a plan set compares with what the service reads back (DESIGN §14, "After
 * an apply the checker reads the planned properties back"): as CloudFormation means it,
 * pure, so the rules are tested without an emulator. Which property is read how is
 * aws-services.ts's table.
 */

/** A property the service reads back otherwise than the plan set it. */
export interface PropertyMismatch {
  /** Where, as the template names it: `Properties.VersioningConfiguration.Status`. */
  readonly path: string;
  readonly planned: unknown;
  /** What the service answers; `null` when it reports nothing. */
  readonly observed: unknown;
}

/**
 * How a planned value and a read one are compared:
 * - `value`: a scalar; numbers equal numeric strings, booleans equal "true"/"false";
 * - `json`: a JSON document (an object, or its text); compared parsed, leaves as `value`;
 * - `policy`: an IAM policy document, which IAM answers URL-encoded; else as `json`;
 * - `set`: a list whose order carries no meaning (DynamoDB's KeySchema);
 * - `subset`: a list of which the service may hold more (a managed policy's roles);
 * - `tags`: `[{Key, Value}]`, less the `aws:` tags the service adds itself.
 */
export type CompareAs = 'value' | 'json' | 'policy' | 'set' | 'subset' | 'tags';

/** What the service answers for one planned property. */
export interface Observed {
  /** Where the planned value sits under Properties, dotted, list items by index: `VersioningConfiguration.Status`, `Roles.0`. */
  readonly path: string;
  /** The service's answer; `undefined` when it reports nothing. */
  readonly value: unknown;
  /** Default `value`. */
  readonly as?: CompareAs;
  /** What the service's silence means: a queue that is not FIFO reports no FifoQueue (`false`). */
  readonly unset?: unknown;
}

/**
 * A value that is not a plain JSON literal: an object with the single key `Ref` or
 * `Fn::…`. What it stands for is known only after apply, so it is never compared.
 */
export function isIntrinsic(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  return keys.length === 1 && (keys[0] === 'Ref' || (keys[0] as string).startsWith('Fn::'));
}

/** Whether an intrinsic appears anywhere in `value`. */
export function containsIntrinsic(value: unknown): boolean {
  if (isIntrinsic(value)) return true;
  if (Array.isArray(value)) return value.some(containsIntrinsic);
  if (typeof value === 'object' && value !== null) return Object.values(value).some(containsIntrinsic);
  return false;
}

/**
 * `value` with each `{"Ref": logicalId}` of a resource of the stack replaced by its
 * physical id, which is what a Ref of a resource is. Refs of parameters and pseudo
 * parameters stay as they are (unknown here).
 */
export function resolveStackRefs<T>(value: T, physicalIds: Readonly<Record<string, string>>): T {
  if (isIntrinsic(value)) {
    const ref = (value as { Ref?: unknown }).Ref;
    return (typeof ref === 'string' && Object.hasOwn(physicalIds, ref) ? physicalIds[ref] : value) as T;
  }
  if (Array.isArray(value)) return value.map((item: unknown) => resolveStackRefs(item, physicalIds)) as T;
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, resolveStackRefs(item, physicalIds)])) as T;
  return value;
}

/** The planned value at `path`: `absent` when the plan does not set it, `unknown` when an intrinsic stands on the way. */
export function plannedAt(
  properties: Readonly<Record<string, unknown>>,
  path: string,
): { readonly kind: 'absent' } | { readonly kind: 'unknown' } | { readonly kind: 'value'; readonly value: unknown } {
  let current: unknown = properties;
  for (const segment of path.split('.')) {
    if (isIntrinsic(current)) return { kind: 'unknown' };
    if (Array.isArray(current) && /^\d+$/.test(segment)) current = current[Number(segment)];
    else if (typeof current === 'object' && current !== null && !Array.isArray(current) && Object.hasOwn(current, segment)) current = (current as Record<string, unknown>)[segment];
    else return { kind: 'absent' };
  }
  if (current === undefined || current === null) return { kind: 'absent' };
  return containsIntrinsic(current) ? { kind: 'unknown' } : { kind: 'value', value: current };
}

function booleanOf(value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
  return undefined;
}

function numberOf(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
  return undefined;
}

/** Two scalars as CloudFormation means them: `60` is `"60"`, `true` is `"true"`. */
export function sameScalar(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if ((a === undefined || a === null) && (b === undefined || b === null)) return true;
  if (typeof a === 'boolean' || typeof b === 'boolean') {
    const [x, y] = [booleanOf(a), booleanOf(b)];
    return x !== undefined && x === y;
  }
  if (typeof a === 'number' || typeof b === 'number') {
    const [x, y] = [numberOf(a), numberOf(b)];
    return x !== undefined && x === y;
  }
  return false;
}

/** Two JSON values: objects by their keys (an `undefined` member is no member), lists in order, leaves as {@link sameScalar}. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b)) return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((item, index) => sameJson(item, b[index]));
  const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;
  if (isObject(a) || isObject(b)) {
    if (!isObject(a) || !isObject(b)) return false;
    const keys = (value: Record<string, unknown>) =>
      Object.keys(value)
        .filter((key) => value[key] !== undefined)
        .sort();
    const [ka, kb] = [keys(a), keys(b)];
    return ka.length === kb.length && ka.every((key, index) => key === kb[index] && sameJson(a[key], b[key]));
  }
  return sameScalar(a, b);
}

/** A JSON document's text parsed; anything else as it is (a text that is no JSON stays text, and differs). */
function parsed(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
}

/** IAM answers policy documents URL-encoded (RFC 3986); moto answers them as they were given. */
export function decodePolicy(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const text = value.trimStart();
  if (text.startsWith('{') || text.startsWith('[')) return parsed(text);
  try {
    return parsed(decodeURIComponent(text.replace(/\+/g, ' ')));
  } catch {
    return value;
  }
}

/** Each of `wanted` matched by a different item of `pool`. */
function matchesEach(wanted: readonly unknown[], pool: readonly unknown[]): boolean {
  const left = [...pool];
  for (const item of wanted) {
    const at = left.findIndex((candidate) => sameJson(item, candidate));
    if (at < 0) return false;
    left.splice(at, 1);
  }
  return true;
}

/** What the service's answer reads as, for comparing and for reporting. */
function observedAs(as: CompareAs, value: unknown): unknown {
  switch (as) {
    case 'json':
      return parsed(value);
    case 'policy':
      return decodePolicy(value);
    case 'tags':
      return Array.isArray(value) ? value.filter((tag) => !String((tag as { Key?: unknown } | null)?.Key ?? '').startsWith('aws:')) : value;
    default:
      return value;
  }
}

function agrees(as: CompareAs, planned: unknown, observed: unknown): boolean {
  switch (as) {
    case 'value':
      return sameScalar(planned, observed);
    case 'json':
    case 'policy':
      return sameJson(as === 'json' ? parsed(planned) : decodePolicy(planned), observed);
    case 'set':
    case 'tags':
      return Array.isArray(planned) && Array.isArray(observed) && planned.length === observed.length && matchesEach(planned, observed);
    case 'subset':
      return Array.isArray(planned) && Array.isArray(observed) && matchesEach(planned, observed);
  }
}

/**
 * Each property the plan set that the service reads back otherwise. A property the plan
 * does not set, or sets through an intrinsic (`Ref`, `Fn::…`), is not compared: it
 * cannot be known before apply. The same disagreement read twice (one policy on two
 * roles) is reported once.
 */
export function comparePlanned(planned: Readonly<Record<string, unknown>>, observations: readonly Observed[]): PropertyMismatch[] {
  const mismatches: PropertyMismatch[] = [];
  const seen = new Set<string>();
  for (const observation of observations) {
    const wanted = plannedAt(planned, observation.path);
    if (wanted.kind !== 'value') continue;
    const as = observation.as ?? 'value';
    const raw = observation.value === undefined || observation.value === null ? observation.unset : observation.value;
    const observed = observedAs(as, raw);
    if (agrees(as, wanted.value, observed)) continue;
    const mismatch = { path: `Properties.${observation.path}`, planned: wanted.value, observed: observed ?? null };
    const key = JSON.stringify(mismatch);
    if (seen.has(key)) continue;
    seen.add(key);
    mismatches.push(mismatch);
  }
  return mismatches;
}

const SHOWN_CHARS = 120;

function shown(value: unknown): string {
  if (value === undefined || value === null) return 'unset';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > SHOWN_CHARS ? `${text.slice(0, SHOWN_CHARS - 1)}…` : text;
}

/** The mismatches in words: "moto did not apply Properties.VersioningConfiguration.Status: planned Enabled, reads unset". */
export function describeMismatches(emulator: string, mismatches: readonly PropertyMismatch[]): string {
  return `${emulator} did not apply ${mismatches.map((mismatch) => `${mismatch.path}: planned ${shown(mismatch.planned)}, reads ${shown(mismatch.observed)}`).join('; ')}`;
}
