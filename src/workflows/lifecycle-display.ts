import { setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import type { Placement } from '../domain/hosts';
import { expiresAtMsOf, stateOf, type SandboxRecord } from '../domain/lifecycle-record';
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

export function showPlacement(placement: Placement): void {
  upsertSearchAttributes([{ key: SandboxHost, value: placement.hostId }]);
}
