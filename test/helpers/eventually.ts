import assert from 'node:assert/strict';

/**
 * Polls `probe` every 250 ms until it returns something other than `undefined`, and
 * returns that; fails naming `what` (and `lastSeen()`, if given) after `timeoutMs`.
 */
export async function eventually<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 60_000, lastSeen?: () => string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out after ${timeoutMs} ms waiting for ${what}${lastSeen === undefined ? '' : `; last seen: ${lastSeen()}`}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
