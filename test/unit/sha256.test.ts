import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import fc from 'fast-check';
import { sha256Hex } from '../../src/domain/sha256';

// The workflow computes request digests with this; the SDK's must be the same bytes' digest.
test('sha256Hex agrees with node:crypto on any string, including astral characters and block edges', () => {
  for (const text of ['', 'abc', 'x'.repeat(55), 'x'.repeat(56), 'x'.repeat(64), 'héllo wörld 😀']) {
    assert.equal(sha256Hex(text), createHash('sha256').update(text, 'utf8').digest('hex'), JSON.stringify(text));
  }
  fc.assert(
    fc.property(fc.fullUnicodeString({ maxLength: 300 }), (text) => sha256Hex(text) === createHash('sha256').update(text, 'utf8').digest('hex')),
    { numRuns: 300 },
  );
});
