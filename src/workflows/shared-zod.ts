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

function answerFromPrototype(name: string, method: { readonly name: string }): void {
  Object.defineProperty(ZodType.prototype, name, {
    configurable: true,
    get: () => method,
    set(this: object, value: unknown) {
      // The constructor's own copies (`this.spa = this.safeParseAsync`, then `bound parse`, …): dropped, the prototype's method serves.
      if (value === method || (typeof value === 'function' && value.name === `bound ${method.name}`)) return;
      // Anything else assigned to a schema stays the schema's own, as it would without this module.
      Object.defineProperty(this, name, { value, writable: true, configurable: true, enumerable: true });
    },
  });
}

const methodOf = (name: string) => Reflect.get(ZodType.prototype, name) as (...args: unknown[]) => unknown;
for (const name of BOUND_BY_CONSTRUCTOR) answerFromPrototype(name, methodOf(name));
// `spa` is the constructor's alias of safeParseAsync, bound too.
answerFromPrototype('spa', methodOf('safeParseAsync'));
