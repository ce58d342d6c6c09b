import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import { expiresAtMsOf, stateOf, type Lineage, type PhaseNamed, type SandboxRecord } from '../domain/lifecycle-record';
import { iso } from './iso-time';
import type { IdentifiedRequest } from '../domain/sandbox-request';
import { SandboxCapability, SandboxExpiresAt, SandboxHost, SandboxPrincipal, SandboxState as SandboxStateKey } from '../domain/search-attributes';

/**
 * What the UI shows of a lifecycle (DESIGN §2): search attributes to filter by and the
 * details to read. Each upsert is a history event and a visibility write, so only what
 * changed from `before` is shown, in one upsert; `before === record` shows everything
 * (the first show), with who asked when `requester` is given.
 */
export function showRecord(before: SandboxRecord, record: SandboxRecord, requester?: IdentifiedRequest): void {
  const first = before === record;
  const attributes: SearchAttributeUpdatePair[] = [];
  const expiresAtMs = expiresAtMsOf(record.phase);
  if (stateOf(before.phase) !== stateOf(record.phase) || expiresAtMsOf(before.phase) !== expiresAtMs || first) {
    attributes.push({ key: SandboxStateKey, value: stateOf(record.phase) }, { key: SandboxExpiresAt, value: expiresAtMs === null ? null : new Date(expiresAtMs) });
  }
  if (requester !== undefined) attributes.push({ key: SandboxPrincipal, value: requester.principal }, { key: SandboxCapability, value: requester.capability });
  const host = record.host?.hostId ?? null;
  if (!first && (before.host?.hostId ?? null) !== host) attributes.push({ key: SandboxHost, value: host });
  if (attributes.length > 0) upsertSearchAttributes(attributes);
  if (before.waitingFor !== record.waitingFor || first) setCurrentDetails(record.waitingFor);
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
