import { agentView } from '../domain/caller-view';
import type { SandboxStatus } from '../domain/lifecycle-messages';
import { isTerminal } from '../domain/sandbox-states';
import { sandboxNotFound } from './sandbox-not-found';

/** Adds what only the caller's clock knows: seconds left before expiry. */
export function withTimeLeft(status: SandboxStatus, nowMs: number = Date.now()): SandboxStatus {
  const live = status.expiresAt !== null && !isTerminal(status.state);
  return {
    ...status,
    timeLeftSeconds: live ? Math.max(0, Math.round((Date.parse(status.expiresAt as string) - nowMs) / 1000)) : null,
  };
}

/**
 * What a caller may see of a sandbox: everything for an operator (`principal` undefined);
 * for a bound caller only its own sandboxes (another's is NOT_FOUND, as if it did not
 * exist), and no approver names.
 */
export function statusSeenBy(principal: string | undefined, status: SandboxStatus): SandboxStatus {
  // A run of a build before lineage (DESIGN §15) answers without it: it is no fork.
  const seen = { ...status, parent: status.parent ?? null, root: status.root ?? status.id };
  if (principal === undefined) return seen;
  if (seen.principal !== principal) throw sandboxNotFound(seen.id);
  return agentView(seen);
}
