/**
 * Text from agents (purpose, reasons, names, label values) is read by people in a
 * terminal and in the Temporal UI (DESIGN §12). This is the one rule for making it safe
 * to print: pure and deterministic, because the lifecycle workflow applies it when it
 * parses payloads.
 *
 * Removed: whole ANSI/ECMA-48 escape sequences (CSI, OSC, DCS, SOS, PM, APC, and the
 * two-character ones), so `ESC[2K` goes and leaves no `[2K` behind; then every other C0
 * and C1 control, DEL, and the invisible Unicode marks that reorder or hide text
 * (bidirectional overrides and isolates, zero-width characters, the byte-order mark).
 * Tabs, newlines and the Unicode line and paragraph separators become one space: the
 * fields are one line each, and a newline inside a reason could draw a line that looks
 * like another field of `sandboxctl status` (`capability cloud.sandbox`) underneath it.
 */

// Built from strings so the file itself holds no raw control characters.
const ESC = '\\u001b';
const C1_CSI = '\\u009b';
const STRING_END = `(?:\\u0007|${ESC}\\\\|\\u009c)`;
const ESCAPE_SEQUENCES = new RegExp(
  [
    // CSI: ESC [ or the one-byte CSI, parameters, intermediates, a final byte.
    `(?:${ESC}\\[|${C1_CSI})[\\u0030-\\u003f]*[\\u0020-\\u002f]*[\\u0040-\\u007e]?`,
    // OSC, DCS, SOS, PM, APC: up to the string terminator (or the end of the text).
    `(?:${ESC}[\\]PX^_]|[\\u0090\\u0098\\u009d-\\u009f])[\\s\\S]*?(?:${STRING_END}|$)`,
    // Every other escape: ESC, intermediates, one final byte.
    `${ESC}[\\u0020-\\u002f]*[\\u0030-\\u007e]?`,
  ].join('|'),
  'g',
);
const LINE_BREAKS = /[\t\n\v\f\r\u0085\u2028\u2029]+/g;
const INVISIBLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;

/**
 * `text` with escape sequences and control characters removed and line breaks turned
 * into spaces. Idempotent: cleaning clean text changes nothing.
 */
export function cleanDisplayText(text: string): string {
  return text.replace(ESCAPE_SEQUENCES, '').replace(LINE_BREAKS, ' ').replace(INVISIBLE, '');
}
