/**
 * Reads a template's text as CloudFormation does: JSON, or YAML with the short-form
 * intrinsic tags (`!Ref`, `!GetAtt`, `!Sub`, …). Kept apart from template.ts so workflow
 * code, which imports that, never bundles the YAML parser.
 */
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, type CollectionTag, type Document, type ScalarTag } from 'yaml';
import { SandboxPlaneError } from '../errors';
import { isJsonObject, MAX_TEMPLATE_BYTES, MAX_TEMPLATE_DEPTH, utf8ByteLength } from './template';

/** Short forms that take a scalar only. */
const SCALAR_ONLY_TAGS: Readonly<Record<string, string>> = { '!Ref': 'Ref', '!Condition': 'Condition' };
/** Short forms that take a scalar, a sequence or a mapping, each its `Fn::` function. */
const FUNCTION_TAGS = [
  'Base64',
  'Cidr',
  'And',
  'Equals',
  'FindInMap',
  'GetAtt',
  'GetAZs',
  'If',
  'ImportValue',
  'Join',
  'Length',
  'Not',
  'Or',
  'Select',
  'Split',
  'Sub',
  'ToJsonString',
  'Transform',
] as const;

const SHORT_FORMS: ReadonlyMap<string, string> = new Map([...Object.entries(SCALAR_ONLY_TAGS), ...FUNCTION_TAGS.map((name) => [`!${name}`, `Fn::${name}`] as const)]);

// The tags only let the parser accept the short forms; the walk below turns them into JSON.
const CUSTOM_TAGS: (ScalarTag | CollectionTag)[] = [...SHORT_FORMS.keys()].flatMap((tag): (ScalarTag | CollectionTag)[] => {
  const scalar: ScalarTag = { tag, resolve: (value) => value };
  if (tag in SCALAR_ONLY_TAGS) return [scalar];
  return [scalar, { tag, collection: 'seq', resolve: (value) => value }, { tag, collection: 'map', resolve: (value) => value }];
});

/** Errors listed in one message; a broken file tends to give many for one mistake. */
const MAX_LISTED_ERRORS = 5;

interface Walk {
  readonly doc: Document;
  readonly lines: LineCounter;
  readonly sourceName: string;
  /** Bytes of JSON the walk has built so far, aliases counted each time they are expanded. */
  bytes: number;
}

/**
 * The template in `text` as a JSON value (unchecked: {@link validateTemplate} judges it).
 * JSON when it parses as JSON; otherwise YAML with the JSON-compatible core schema, so
 * `2010-09-09` and `yes` stay strings, and every short-form tag becomes its JSON object.
 * A syntax error, an unknown tag, a duplicate key, a document that is not a mapping or text
 * over {@link MAX_TEMPLATE_BYTES} is INVALID_INPUT naming `sourceName` and line:column.
 */
export function readTemplateText(text: string, sourceName: string): unknown {
  const bytes = utf8ByteLength(text);
  if (bytes > MAX_TEMPLATE_BYTES) throw new SandboxPlaneError('INVALID_INPUT', `${sourceName}: ${bytes} bytes, more than the ${MAX_TEMPLATE_BYTES} a template may have`);
  if (text.trimStart().startsWith('{')) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      // Not JSON, but a YAML flow mapping still reads, and YAML's errors carry a line and column.
    }
  }
  return readYaml(text, sourceName);
}

function readYaml(text: string, sourceName: string): unknown {
  const lines = new LineCounter();
  let doc: Document;
  try {
    doc = parseDocument(text, {
      version: '1.2',
      schema: 'core',
      customTags: CUSTOM_TAGS,
      // Explicit `!!timestamp` or `!!binary` would give a Date or bytes; left unresolved, they are refused below.
      resolveKnownTags: false,
      uniqueKeys: true,
      merge: false,
      prettyErrors: false,
      lineCounter: lines,
    });
  } catch (err) {
    throw new SandboxPlaneError('INVALID_INPUT', `${sourceName}: not readable as YAML: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  // Warnings too: an unknown tag or a tag on the wrong kind of node is only a warning to the parser, but the template would mean something else.
  const problems = [...doc.errors, ...doc.warnings];
  if (problems.length > 0) {
    const listed = problems.slice(0, MAX_LISTED_ERRORS).map((problem) => `${at(lines, sourceName, problem.pos[0])}: ${describeYamlProblem(problem.code, problem.message)}`);
    const more = problems.length > listed.length ? `; … and ${problems.length - listed.length} more` : '';
    throw new SandboxPlaneError('INVALID_INPUT', `${listed.join('; ')}${more}`);
  }
  const walk: Walk = { doc, lines, sourceName, bytes: 0 };
  const contents = doc.contents;
  if (!isMap(contents)) {
    const kind = contents === null ? 'is empty' : `is ${isSeq(contents) ? 'a sequence' : 'a scalar'}`;
    throw new SandboxPlaneError('INVALID_INPUT', `${at(lines, sourceName, contents?.range?.[0] ?? 0)}: the document ${kind}; a template is a mapping of sections (Resources, …)`);
  }
  const template = toJson(contents, 0, walk);
  if (!isJsonObject(template)) throw fail(walk, contents, 'a short-form tag on the whole document: a template is a mapping of sections');
  return template;
}

function at(lines: LineCounter, sourceName: string, offset: number): string {
  const { line, col } = lines.linePos(offset);
  return `${sourceName}:${Math.max(line, 1)}:${col}`;
}

function describeYamlProblem(code: string, message: string): string {
  const tag = /^Unresolved tag: (.*)$/.exec(message)?.[1];
  if (code !== 'TAG_RESOLVE_FAILED' || tag === undefined) return message;
  // The parser finds no sequence or mapping form of !Ref or !Condition, so it calls them unknown.
  if (tag in SCALAR_ONLY_TAGS) return `${tag} takes a name, not a sequence or a mapping`;
  return `unknown tag ${tag} (known: ${[...SHORT_FORMS.keys()].join(', ')})`;
}

function fail(walk: Walk, node: unknown, message: string): SandboxPlaneError {
  const offset = (node as { range?: readonly number[] } | null)?.range?.[0] ?? 0;
  return new SandboxPlaneError('INVALID_INPUT', `${at(walk.lines, walk.sourceName, offset)}: ${message}`);
}

function toJson(node: unknown, depth: number, walk: Walk): unknown {
  if (depth > MAX_TEMPLATE_DEPTH) throw fail(walk, node, `nested more than ${MAX_TEMPLATE_DEPTH} levels deep`);
  // Counted as the JSON is built, so aliases (`&s` of 512 KiB, then 100,000 `*s`) stop here rather than exhaust memory later.
  walk.bytes += isScalar(node) ? jsonBytes(node.value) : 2;
  if (walk.bytes > MAX_TEMPLATE_BYTES) throw fail(walk, node, `the template expands (aliases included) to more than the ${MAX_TEMPLATE_BYTES} bytes a template may have`);
  if (node === null || node === undefined) return null;
  if (isAlias(node)) {
    const target = node.resolve(walk.doc);
    if (target === undefined) throw fail(walk, node, `alias *${node.source} names no anchor before it`);
    return toJson(target, depth + 1, walk);
  }
  const value = isScalar(node)
    ? scalarValue(node.value, node, walk)
    : isSeq(node)
      ? node.items.map((item) => toJson(item, depth + 1, walk))
      : isMap(node)
        ? mappingValue(node, depth, walk)
        : undefined;
  if (value === undefined) throw fail(walk, node, 'not a scalar, a sequence or a mapping');
  const tag = (node as { tag?: unknown }).tag;
  const key = typeof tag === 'string' ? SHORT_FORMS.get(tag) : undefined;
  if (key === undefined) return value;
  if (key === 'Fn::GetAtt' && typeof value === 'string') {
    const dot = value.indexOf('.');
    if (dot <= 0 || dot === value.length - 1) throw fail(walk, node, `!GetAtt ${value}: write LogicalId.Attribute or [LogicalId, Attribute]`);
    return { [key]: [value.slice(0, dot), value.slice(dot + 1)] };
  }
  return { [key]: value };
}

/** What a scalar costs in the template's JSON, at least: its text with quotes, plus a separator. */
function jsonBytes(value: unknown): number {
  return (typeof value === 'string' ? utf8ByteLength(value) + 2 : String(value).length) + 1;
}

function scalarValue(value: unknown, node: unknown, walk: Walk): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  throw fail(walk, node, `${String(value)} has no JSON form (quote it to keep it as text)`);
}

function mappingValue(node: { items: { key: unknown; value: unknown }[] }, depth: number, walk: Walk): Record<string, unknown> {
  const entries: [string, unknown][] = [];
  const seen = new Set<string>();
  for (const pair of node.items) {
    const key = mappingKey(pair.key, walk);
    if (seen.has(key)) throw fail(walk, pair.key, `duplicate key ${JSON.stringify(key)} (each key once)`);
    seen.add(key);
    walk.bytes += utf8ByteLength(key) + 3;
    entries.push([key, toJson(pair.value, depth + 1, walk)]);
  }
  // fromEntries defines own properties, so a `__proto__` key stays a key.
  return Object.fromEntries(entries);
}

function mappingKey(key: unknown, walk: Walk): string {
  if (!isScalar(key) || (typeof key.tag === 'string' && SHORT_FORMS.has(key.tag))) throw fail(walk, key, 'a mapping key must be plain text');
  if (typeof key.value === 'string') return key.value;
  // `1.0:` and `1:` are different keys as written; JSON keys are text, so the text as written is kept.
  if (typeof key.source === 'string' && key.value !== null) return key.source;
  return String(key.value);
}
