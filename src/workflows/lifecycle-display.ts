import { setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import type { Placement } from '../domain/hosts';
import { expiresAtMsOf, stateOf, type Lineage, type PhaseNamed, type SandboxRecord } from '../domain/lifecycle-record';
import { iso } from './iso-time';
import type { IdentifiedRequest } from '../domain/sandbox-request';
import { SandboxCapability, SandboxExpiresAt, SandboxHost, SandboxPrincipal, SandboxState as SandboxStateKey } from '../domain/search-attributes';

/**
 * What the UI shows of a lifecycle (DESIGN §2): search attributes to filter by and the
 * details to read. Each upsert is a history event, so only what changed from `before` is
 * shown; `before === record` shows everything (the first show).
 */
export function showRecord(before: SandboxRecord, record: SandboxRecord): void {
  const expiresAtMs = expiresAtMsOf(record.phase);
  if (stateOf(before.phase) !== stateOf(record.phase) || expiresAtMsOf(before.phase) !== expiresAtMs || before === record) {
    upsertSearchAttributes([
      { key: SandboxStateKey, value: stateOf(record.phase) },
      { key: SandboxExpiresAt, value: expiresAtMs === null ? null : new Date(expiresAtMs) },
    ]);
  }
  if (before.waitingFor !== record.waitingFor || before === record) setCurrentDetails(record.waitingFor);
}

/** Who asked for the sandbox and what for: set once, for a request that was admitted. */
export function showRequester(request: IdentifiedRequest): void {
  upsertSearchAttributes([
    { key: SandboxPrincipal, value: request.principal },
    { key: SandboxCapability, value: request.capability },
  ]);
}

export function showPlacement(placement: Placement | null): void {
  upsertSearchAttributes([{ key: SandboxHost, value: placement === null ? null : placement.hostId }]);
}

/** The details a READY sandbox shows: where it answers, when it expires, and how to extend or end it. */
export function readyDetails(phase: PhaseNamed<'ready'>): string {
  const { restarts, lastRestartAtMs } = phase.health;
  const restarted =
    restarts > 0 && lastRestartAtMs !== null
      ? ` Its emulator died and was restarted at ${iso(lastRestartAtMs)}: everything created in the sandbox before then is lost.` +
        (phase.runtime.credentials !== undefined ? ' Its credentials are new: read clientConfig from status again (the old ones are refused).' : '')
      : '';
  return (
    `Ready at ${phase.runtime.endpoint}.${restarted} Expires at ${iso(phase.expiresAtMs)} unless extended (update "extend" with ` +
    `{"ttlSeconds": N}) or destroyed earlier (update "destroy").${forkDetails(phase.screening.lineage)}`
  );
}

/** What a fork says of its family: its TTL never passes its root's. */
export function forkDetails(lineage: Lineage | undefined): string {
  if (lineage === undefined) return '';
  const root = lineage.root === lineage.parent ? 'its root' : `its root ${lineage.root}`;
  if (lineage.rootExpiresAt === null) return ` A fork of ${lineage.parent}; ${root} had ended when it was forked, so its own TTL bounds it (\`sandboxctl tree\` lists the family).`;
  return ` A fork of ${lineage.parent}: its expiry never passes ${root}'s (\`sandboxctl tree\` lists the family).`;
}
