/**
 * Events (DESIGN §19): what changed, why and by whom, said once per change of a sandbox,
 * IaC run, snapshot or approval. An event is derived from the audit row that records the
 * change, in the store's transaction that writes the row: the audit trail stays the one
 * record, and this module is the one rule for reading it as events.
 */
import { z } from 'zod';
import type { OperationRecord } from './lifecycle-record';
import { sha256Hex } from './sha256';

export const EVENT_KINDS = [
  'sandbox.requested',
  'sandbox.awaiting_approval',
  'sandbox.ready',
  'sandbox.extended',
  'sandbox.paused',
  'sandbox.resumed',
  'sandbox.restored',
  'sandbox.unhealthy',
  'sandbox.destroyed',
  'sandbox.failed',
  'iac.planned',
  'iac.awaiting_approval',
  'iac.applied',
  'iac.failed',
  'iac.denied',
  'snapshot.created',
  'snapshot.deleted',
  'approval.granted',
  'approval.denied',
  'approval.refused',
] as const;
export type EventKind = (typeof EVENT_KINDS)[number];

export const EVENT_REASONS = ['agent', 'operator', 'ttl', 'policy', 'approval', 'health', 'sweep', 'error'] as const;
export type EventReason = (typeof EVENT_REASONS)[number];

/** One event as `sandboxctl events --json`, the gateway and a webhook's body carry it (DESIGN §11). */
export interface PlaneEvent {
  readonly eventId: string;
  readonly time: string;
  readonly kind: EventKind;
  /** `null` for an IaC run against a target (no sandbox). */
  readonly sandboxId: string | null;
  /** The IaC run's id for `iac.*` events (and approvals of one); `null` otherwise. */
  readonly runId: string | null;
  readonly principal: string;
  readonly actor: string;
  readonly reason: EventReason;
  /** The sandbox's state before and after the change (`null` where the change is not one of state). */
  readonly from: string | null;
  readonly to: string | null;
  readonly detail: Readonly<Record<string, unknown>>;
}

/** An event as the store keeps it: with its place in the one order of all events. */
export interface StoredEvent extends PlaneEvent {
  readonly seq: number;
}

/**
 * The prefix of an actor acting through a principal-bound client (the gateway's keys, a
 * bound SDK, MCP or CLI): the agent itself, as opposed to an operator's client.
 */
export const AGENT_ACTOR_PREFIX = 'agent:';

/** `actor` as a bound client sends it: marked as the agent's, once. */
export function agentActor(actor: string): string {
  return actor.startsWith(AGENT_ACTOR_PREFIX) ? actor : `${AGENT_ACTOR_PREFIX}${actor}`.slice(0, 200);
}

/** What the store knows of an audit row when it is written. */
export interface AuditFacts extends Omit<OperationRecord, 'runId'> {
  /** `operations` (a sandbox's trail) or `target_operations` (a target's). */
  readonly stream: 'sandbox' | 'target';
  readonly sandboxId: string | null;
  readonly workflowId: string;
  readonly runId: string;
  readonly at: string;
  /** The sandbox's (or the IaC run's) principal. */
  readonly principal: string;
  /** The sandbox's state before and after the row's transaction (`null` for a target's row). */
  readonly from: string | null;
  readonly to: string | null;
  /** Why the sandbox began to end: its `destroying`/`withdrawn` row's actor and reason, for the row that says it ended. */
  readonly ending?: { readonly actor: string; readonly reason: string | null };
}

/**
 * The id of the event of an audit row: the same for the same row however often its write
 * is retried (rows are unique by stream, workflow, run and step), so a webhook's receiver
 * can drop a second delivery by it (Standard Webhooks' `webhook-id`).
 */
export function eventIdOf(facts: Pick<AuditFacts, 'stream' | 'workflowId' | 'runId' | 'step'>): string {
  return `evt_${sha256Hex(`${facts.stream}\u0000${facts.workflowId}\u0000${facts.runId}\u0000${facts.step}`).slice(0, 32)}`;
}

/** Why an actor acted, by who it is: the timer is the TTL, the sweep is the sweep, a bound client is the agent. */
function reasonOfActor(actor: string, principal: string): EventReason {
  if (actor === 'timer') return 'ttl';
  if (actor === 'sweep') return 'sweep';
  if (actor === 'policy') return 'policy';
  if (actor === 'worker') return 'error';
  if (actor === principal || actor.startsWith(AGENT_ACTOR_PREFIX)) return 'agent';
  return 'operator';
}

function text(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/** Small facts a receiver acts on; never credentials (the summary is already redacted). */
function pick(summary: Readonly<Record<string, unknown>>, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) if (summary[key] !== undefined) out[key] = summary[key];
  return out;
}

/** `actor` when the one who caused the change is not the row's writer (a destroy is asked by someone, done by the worker). */
type Derived = Pick<PlaneEvent, 'kind' | 'reason'> & { readonly detail?: Record<string, unknown>; readonly actor?: string };

function sandboxEvent(facts: AuditFacts): Derived | undefined {
  const { action, actor, effect, summary, principal } = facts;
  switch (action) {
    case 'requested':
      return { kind: 'sandbox.requested', reason: 'agent', detail: pick(summary, ['services', 'adapter', 'capability']) };
    case 'screened':
      if (effect === 'require_approval') return { kind: 'sandbox.awaiting_approval', reason: 'policy' };
      if (effect === 'deny') return { kind: 'sandbox.failed', reason: 'policy', detail: { code: (summary.decision as { code?: unknown } | undefined)?.code ?? 'DENIED' } };
      return undefined;
    case 'approved':
      return { kind: 'approval.granted', reason: 'approval' };
    case 'denied':
      return { kind: 'approval.denied', reason: 'approval' };
    case 'approval_expired':
      return { kind: 'sandbox.failed', reason: 'ttl', detail: { code: 'APPROVAL_TIMEOUT' } };
    case 'placement_refused':
    case 'provision_failed':
    case 'destroy_failed':
      return { kind: 'sandbox.failed', reason: 'error', detail: pick(summary, ['code']) };
    case 'ready':
      return { kind: 'sandbox.ready', reason: 'agent', detail: pick(summary, ['endpoint', 'expiresAt', 'fromSnapshot', 'parent', 'root', 'pooled']) };
    case 'extended':
      return {
        kind: 'sandbox.extended',
        reason: reasonOfActor(actor, principal),
        detail: { ...pick(summary, ['bySeconds', 'clampedToRoot']), ...(typeof summary.to === 'string' ? { expiresAt: summary.to } : {}) },
      };
    case 'paused':
      return { kind: 'sandbox.paused', reason: reasonOfActor(actor, principal), detail: pick(summary, ['snapshotId']) };
    case 'resumed':
      return { kind: 'sandbox.resumed', reason: reasonOfActor(actor, principal) };
    case 'restored':
      return { kind: 'sandbox.restored', reason: reasonOfActor(actor, principal), detail: pick(summary, ['snapshotId']) };
    case 'emulator_restarted':
      return { kind: 'sandbox.unhealthy', reason: 'health', detail: pick(summary, ['restarts']) };
    case 'withdrawn':
      return { kind: 'sandbox.destroyed', reason: reasonOfActor(actor, principal) };
    case 'destroyed':
      return endedEvent(facts);
    case 'reconciled':
      return { kind: facts.to === 'DESTROYED' ? 'sandbox.destroyed' : 'sandbox.failed', reason: 'sweep' };
    case 'snapshot_taken':
      return { kind: 'snapshot.created', reason: reasonOfActor(actor, principal), detail: pick(summary, ['snapshotId', 'bytes']) };
    case 'snapshot_deleted':
      return { kind: 'snapshot.deleted', reason: reasonOfActor(actor, principal), detail: pick(summary, ['snapshotId']) };
    default:
      if (action.endsWith('_ignored')) return { kind: 'approval.refused', reason: 'approval', detail: { why: facts.reason } };
      return iacEvent(facts);
  }
}

/** A sandbox that ended: why is its `destroying` row's (the TTL, the agent, an operator), or its emulator's death. */
function endedEvent(facts: AuditFacts): Derived {
  const ending = facts.ending;
  if (facts.to === 'FAILED') return { kind: 'sandbox.failed', reason: 'health', detail: { why: ending?.reason ?? null } };
  if (ending === undefined) return { kind: 'sandbox.destroyed', reason: 'operator' };
  const byCancellation = ending.actor === 'temporal-cancellation';
  return { kind: 'sandbox.destroyed', reason: byCancellation ? 'operator' : reasonOfActor(ending.actor, facts.principal), actor: ending.actor, detail: { why: ending.reason } };
}

function iacEvent(facts: AuditFacts): Derived | undefined {
  const { action, summary } = facts;
  const base = pick(summary, ['stack', 'mode', 'digest', 'templateDigest']);
  switch (action) {
    case 'iac_planned':
      return { kind: 'iac.planned', reason: 'agent', detail: { ...base, ...pick(summary, ['changes', 'replacements', 'deletions']) } };
    case 'iac_awaiting_approval':
      return { kind: 'iac.awaiting_approval', reason: 'policy', detail: base };
    case 'iac_approved':
      return { kind: 'approval.granted', reason: 'approval', detail: base };
    case 'iac_applied':
      return { kind: 'iac.applied', reason: 'agent', detail: { ...base, ...pick(summary, ['allVerified']) } };
    case 'iac_denied': {
      const code = text(summary.code);
      return { kind: 'iac.denied', reason: code === 'APPROVAL_DENIED' || code === 'RATE_LIMITED' ? 'approval' : 'policy', detail: { ...base, code } };
    }
    case 'iac_failed':
      return { kind: 'iac.failed', reason: 'error', detail: { ...base, code: text(summary.code) } };
    default:
      return undefined;
  }
}

/** The event an audit row says, or `undefined` for a row that records no change a receiver acts on (a placement, a warning, a checkpoint). */
export function eventOf(facts: AuditFacts): PlaneEvent | undefined {
  const derived = sandboxEvent(facts);
  if (derived === undefined) return undefined;
  const iacRunId = text(facts.summary.iacRunId);
  return {
    eventId: eventIdOf(facts),
    time: facts.at,
    kind: derived.kind,
    sandboxId: facts.sandboxId,
    runId: iacRunId,
    principal: facts.principal,
    actor: derived.actor ?? facts.actor,
    reason: derived.reason,
    from: facts.from,
    to: facts.to,
    detail: derived.detail ?? {},
  };
}

/** `--events` of a webhook: exact kinds, or `sandbox.*`-style families. */
export const eventFilterSchema = z
  .string()
  .regex(/^(sandbox|iac|snapshot|approval)\.(\*|[a-z_]+)$/, 'must be an event kind (sandbox.ready) or a family (sandbox.*)')
  .refine((value) => value.endsWith('.*') || (EVENT_KINDS as readonly string[]).includes(value), { message: `must be one of ${EVENT_KINDS.join(', ')}, or a family such as sandbox.*` });

/** Whether `kind` is one `filters` asks for (none: all). */
export function kindMatches(kind: string, filters: readonly string[]): boolean {
  if (filters.length === 0) return true;
  return filters.some((filter) => (filter.endsWith('.*') ? kind.startsWith(filter.slice(0, -1)) : kind === filter));
}
