/** The one rule for agent text that people read (DESIGN §12): no escape sequence, no control character, one line. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { cleanDisplayText } from '../../src/domain/display-text';
import { approvalPayloadSchema, destroyPayloadSchema, extendPayloadSchema } from '../../src/domain/lifecycle-messages';
import { sandboxRequestSchema } from '../../src/domain/sandbox-request';

/** Anything that could move a cursor, recolour, retitle, hide, reorder or break a line. */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2028\u2029\u2060-\u2064\u2066-\u2069\ufeff]/;

describe('cleanDisplayText', () => {
  test('removes whole escape sequences, not only their ESC', () => {
    assert.equal(cleanDisplayText('ok\u001b[2K\u001b[1Anext'), 'oknext', 'erase line, cursor up');
    assert.equal(cleanDisplayText('\u001b[38;5;196mred\u001b[0m'), 'red', 'colours');
    assert.equal(cleanDisplayText('a\u001b]0;window title\u0007b'), 'ab', 'OSC ended by BEL');
    assert.equal(cleanDisplayText('a\u001b]8;;http://x\u001b\\link\u001b]8;;\u001b\\b'), 'alinkb', 'OSC 8 hyperlink ended by ST');
    assert.equal(cleanDisplayText('a\u001bPq#0;2;0;0;0\u001b\\b'), 'ab', 'DCS');
    assert.equal(cleanDisplayText('a\u009b2Jb\u009d0;t\u009cc'), 'abc', 'the one-byte C1 CSI and OSC');
    assert.equal(cleanDisplayText('a\u001bcb\u001b7c\u001b(Bd'), 'abcd', 'two- and three-character escapes');
    assert.equal(cleanDisplayText('cut off\u001b['), 'cut off', 'an unfinished sequence at the end');
  });

  test('drops other controls and invisible reordering marks; line breaks and tabs become one space', () => {
    assert.equal(cleanDisplayText('a\u0000b\u0007c\u0008d\u007fe\u0085f'), 'abcde f', 'C0 and DEL go; NEL is a line break');
    assert.equal(cleanDisplayText('pay \u202etxt.exe\u202c now'), 'pay txt.exe now', 'bidi override');
    assert.equal(cleanDisplayText('a\u200bb\ufeffc\u2066d\u2069'), 'abcd', 'zero-width and isolates');
    assert.equal(cleanDisplayText('line one\r\nline two\tend\u2028x'), 'line one line two end x');
    assert.equal(cleanDisplayText('café — 東京 🚀'), 'café — 東京 🚀', 'printable text stays as it is');
  });

  test('never leaves anything unsafe, and cleaning clean text changes nothing', () => {
    const hostile = fc.stringOf(fc.oneof(fc.fullUnicode(), fc.constantFrom('\u001b', '\u009b', '[', ']', '\u0007', '\\', '\n', '\u202e', '2', 'K', ';')), { maxLength: 80 });
    fc.assert(
      fc.property(hostile, (text) => {
        const clean = cleanDisplayText(text);
        assert.doesNotMatch(clean, UNSAFE);
        assert.equal(cleanDisplayText(clean), clean);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('where agent text enters and where it is printed', () => {
  test('the request schema cleans the purpose and label values', () => {
    const parsed = sandboxRequestSchema.parse({ principal: 'agent-1', services: ['s3'], purpose: ' try\u001b[2K\u001b[1A it\n ', labels: { team: 'a\u001b[8mb' } });
    assert.equal(parsed.purpose, 'try it');
    assert.deepEqual(parsed.labels, { team: 'ab' });
  });

  test('the approve, deny, extend and destroy payloads clean reasons and names', () => {
    assert.deepEqual(approvalPayloadSchema.parse({ approver: 'alice\u001b[0m', reason: 'ok\u001b[1A\rshown' }), { approver: 'alice', reason: 'ok shown' });
    assert.equal(extendPayloadSchema.parse({ ttlSeconds: 60, reason: 'more\u009b2J', actor: 'bob\u0007' }).reason, 'more');
    assert.deepEqual(destroyPayloadSchema.parse({ reason: 'done\u001b]0;x\u0007', actor: 'c\u202ed' }), { reason: 'done', actor: 'cd' });
  });
});
