import assert from 'node:assert/strict';
import type { SandboxClient } from '../../src/client/sandbox-client';
import type { SandboxStatus } from '../../src/domain/lifecycle-messages';
import type { SandboxState } from '../../src/domain/sandbox-states';

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

/** Polls the `status` query until sandbox `id` is in `state`, and returns that status; fails with the last state and what it was waiting for. */
export async function waitForState(sandboxes: Pick<SandboxClient, 'status'>, id: string, state: SandboxState, timeoutMs = 60_000): Promise<SandboxStatus> {
  let last: SandboxStatus | undefined;
  return eventually(
    `sandbox ${id} to be ${state}`,
    async () => {
      last = await sandboxes.status(id);
      return last.state === state ? last : undefined;
    },
    timeoutMs,
    () => `${last?.state}: ${last?.waitingFor}`,
  );
}
