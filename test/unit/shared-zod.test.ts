/**
 * workflows/shared-zod.ts, as the workflow thread runs it (preloaded, before any schema):
 * schemas no longer carry bound copies of their methods, and parse as before.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import '../../src/workflows/shared-zod';
import { z } from 'zod';

describe('zod shared by the workflow runs', () => {
  test('a schema holds no bound copies of its methods', () => {
    const schema = z.object({ id: z.string() });
    for (const name of ['parse', 'safeParse', 'parseAsync', 'safeParseAsync', 'spa', 'optional', 'describe', 'isOptional']) {
      assert.equal(Object.hasOwn(schema, name), false, name);
      assert.equal(typeof Reflect.get(schema, name), 'function', name);
    }
  });

  test("a method a caller assigns to a schema is the schema's own, as without this module", () => {
    const schema = z.string();
    const replaced = (input: unknown) => `seen ${String(input)}`;
    Object.assign(schema, { parse: replaced });
    assert.equal(schema.parse('x'), 'seen x');
    assert.equal(z.string().parse('y'), 'y', 'other schemas keep the prototype method');
  });

  test('schemas parse, refine, transform and report issues as before', async () => {
    const schema = z
      .object({
        id: z.string().regex(/^[a-z]+$/, 'lower-case letters'),
        size: z.number().int().optional().default(2),
        mode: z.enum(['a', 'b']).nullable(),
        tags: z
          .string()
          .array()
          .refine((tags) => tags.length < 3, 'at most 2 tags'),
      })
      .transform((value) => ({ ...value, key: `${value.id}-${value.size}` }));
    assert.deepEqual(schema.parse({ id: 'abc', mode: 'a', tags: [] }), { id: 'abc', size: 2, mode: 'a', tags: [], key: 'abc-2' });
    assert.equal(schema.isOptional(), false);
    assert.equal(schema.optional().isOptional(), true);
    const failed = schema.safeParse({ id: 'ABC', mode: 'c', tags: ['x', 'y', 'z'] });
    assert.equal(failed.success, false);
    assert.deepEqual(failed.error?.issues.map((issue) => issue.message).sort(), ["Invalid enum value. Expected 'a' | 'b', received 'c'", 'at most 2 tags', 'lower-case letters']);
    assert.equal((await schema.spa({ id: 'x', mode: null, tags: [] })).success, true);
    assert.deepEqual(await z.string().or(z.number()).describe('either').parseAsync(3), 3);
  });
});
