/**
 * Loaded once per workflow thread, before any workflow run (the bundle's `preloadModules`,
 * worker/workflow-code.ts), so zod is one module shared by every run instead of being
 * evaluated anew with each cached run, and its schemas no longer carry ~25 bound copies of
 * their methods each. Every run evaluates `src/domain` afresh and builds its ~550 schemas:
 * the bound copies were most of a cached run's memory (docs/performance.md, P5).
 *
 * zod's constructor binds these methods onto each instance (`this.parse =
 * this.parse.bind(this)`). Here the prototype answers them and drops the binding, so
 * `schema.parse(x)` works as before; only a method taken off its schema (`const { parse } =
 * schema`) would lose its `this`, which workflow and domain code never do.
 */
import { ZodType } from 'zod';

const BOUND_BY_CONSTRUCTOR = [
  'parse',
  'safeParse',
  'parseAsync',
  'safeParseAsync',
  'refine',
  'refinement',
  'superRefine',
  'optional',
  'nullable',
  'nullish',
  'array',
  'promise',
  'or',
  'and',
  'transform',
  'brand',
  'default',
  'catch',
  'describe',
  'pipe',
  'readonly',
  'isNullable',
  'isOptional',
] as const;

function answerFromPrototype(name: string, method: unknown): void {
  Object.defineProperty(ZodType.prototype, name, {
    configurable: true,
    get: () => method,
    // The constructor's per-instance binding: dropped, the prototype's method serves.
    set: () => undefined,
  });
}

for (const name of BOUND_BY_CONSTRUCTOR) answerFromPrototype(name, Reflect.get(ZodType.prototype, name));
// `spa` is the constructor's alias of safeParseAsync, bound too.
answerFromPrototype('spa', Reflect.get(ZodType.prototype, 'safeParseAsync'));
