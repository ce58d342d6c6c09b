/**
 * The commands callers send to the store role (DESIGN §10): every read and write of the
 * SQLite projection that a caller asks for travels as one of these, inside a
 * `storeCommand` workflow, so callers need only Temporal. The client checks a command
 * before sending it and the store worker checks it again, both with this one schema.
 */
import { z } from 'zod';
import { auditExportPageSchema, type AuditExportPage, type AuditVerification } from './audit-evidence';
import { apiKeyIdSchema, newApiKeySchema, type ApiKeyRecord } from './api-keys';
import { recipientPublicKeySchema, type SealedText } from './sealed-text';
import { CAPABILITIES } from './capabilities';
import { DEFAULT_EVENT_LIMIT, eventCursorSchema, eventLimitSchema, eventWaitSchema, isoTimeSchema, type EventPage } from './event-query';
import { hostIdSchema, hostRegistrationSchema, type HostView } from './hosts';
import type { LeakFinding } from './leaks';
import type { IacDecision } from './iac/iac-screening';
import { approvalPayloadSchema } from './lifecycle-messages';
import type { OperationRecord } from './lifecycle-record';
import { POLICY_EFFECTS, principalPatternSchema, type PolicyRow } from './policy';
import { principalSchema, sandboxIdSchema, sandboxRequestSchema } from './sandbox-request';
import { snapshotIdSchema, type SnapshotSource, type SnapshotSummary } from './snapshots';
import { newWebhookSchema, webhookIdSchema, type WebhookDelivery, type WebhookRecord } from './webhooks';
import { newTargetSchema, targetNameSchema, type TargetAuditEntry, type TargetRecord } from './targets';
import { maxSandboxHoursPerDaySchema, usageQuerySchema, type UsageRow } from './usage';

/** Checked as the workflow checks the approver of a signal, so a listed name can approve. */
export const approverNameSchema = approvalPayloadSchema.shape.approver;

/** A policy row's id, as `sandboxctl policy list` shows it. */
export const policyIdSchema = z.number().int('must be a whole number').min(1, 'must be at least 1');

/** A new policy row: who, which capability, which effect, and the row's limits (null: none). */
export const newPolicySchema = z
  .object({
    principalPattern: principalPatternSchema,
    capability: z.enum(CAPABILITIES),
    effect: z.enum(POLICY_EFFECTS),
    maxTtlSeconds: z.number().int('must be whole seconds').positive('must be positive').nullable().default(null),
    // Parsed exactly as a request's services are, so a row and a request compare like with like.
    services: sandboxRequestSchema.shape.services.nullable().default(null),
    maxConcurrent: z.number().int('must be a whole number').min(0, 'must be at least 0').nullable().default(null),
    maxSandboxHoursPerDay: maxSandboxHoursPerDaySchema.nullable().default(null),
  })
  .strict();
export type NewPolicyInput = z.input<typeof newPolicySchema>;

export const storeCommandSchema = z.discriminatedUnion('kind', [
  newPolicySchema.extend({ kind: z.literal('policy.add') }),
  z.object({ kind: z.literal('policy.list') }).strict(),
  z.object({ kind: z.literal('policy.remove'), id: policyIdSchema }).strict(),
  // The TOTP secret comes back sealed to `recipient` (the CLI's one-time key): the result is in history (DESIGN §12).
  z.object({ kind: z.literal('approvers.add'), name: approverNameSchema, recipient: recipientPublicKeySchema }).strict(),
  z.object({ kind: z.literal('approvers.list') }).strict(),
  z.object({ kind: z.literal('approvers.remove'), name: approverNameSchema }).strict(),
  // With a principal (a principal-bound caller), only that principal's sandbox: another's is NOT_FOUND.
  z.object({ kind: z.literal('audit'), sandboxId: sandboxIdSchema, principal: principalSchema.optional() }).strict(),
  // The tamper-evident trail (DESIGN §19), an operator's: checked in the store, which alone holds the chain key; exported a page at a time.
  z.object({ kind: z.literal('audit.verify') }).strict(),
  auditExportPageSchema.extend({ kind: z.literal('audit.export') }),
  z.object({ kind: z.literal('leaks') }).strict(),
  z.object({ kind: z.literal('hosts') }).strict(),
  z.object({ kind: z.literal('hosts.register'), registration: hostRegistrationSchema }).strict(),
  z.object({ kind: z.literal('hosts.remove'), hostId: hostIdSchema }).strict(),
  newTargetSchema.extend({ kind: z.literal('targets.add') }),
  z.object({ kind: z.literal('targets.list') }).strict(),
  z.object({ kind: z.literal('targets.remove'), name: targetNameSchema }).strict(),
  z.object({ kind: z.literal('targets.get'), name: targetNameSchema }).strict(),
  z.object({ kind: z.literal('targets.audit'), name: targetNameSchema }).strict(),
  // A principal's own snapshots; an operator's client (no principal) lists everyone's.
  z.object({ kind: z.literal('snapshots.list'), principal: principalSchema.optional(), sandboxId: sandboxIdSchema.optional() }).strict(),
  z.object({ kind: z.literal('snapshots.get'), principal: principalSchema, snapshotId: snapshotIdSchema }).strict(),
  // With a principal, only that principal's snapshot (another's is NOT_FOUND); without, an operator's: anyone's.
  z.object({ kind: z.literal('snapshots.delete'), snapshotId: snapshotIdSchema, principal: principalSchema.optional(), actor: z.string().min(1).max(200).optional() }).strict(),
  // Policy's verdict on an IaC run before it starts, so a template policy refuses never reaches history.
  z
    .object({
      kind: z.literal('iac.screen'),
      principal: principalSchema,
      services: z.array(z.string().min(1).max(64)).max(200),
      target: targetNameSchema.optional(),
    })
    .strict(),
  // A sandbox's family (DESIGN §15): the ids of its root's tree; another principal's is NOT_FOUND.
  z.object({ kind: z.literal('sandboxes.tree'), sandboxId: sandboxIdSchema, principal: principalSchema.optional() }).strict(),
  newApiKeySchema.extend({ kind: z.literal('keys.add') }),
  z.object({ kind: z.literal('keys.list') }).strict(),
  // Events (DESIGN §19): a principal's own (another's sandbox is NOT_FOUND), or everyone's for an operator; waits up to waitSeconds for one to come.
  z
    .object({
      kind: z.literal('events'),
      principal: principalSchema.optional(),
      sandboxId: sandboxIdSchema.optional(),
      sinceIso: isoTimeSchema.optional(),
      after: eventCursorSchema.optional(),
      limit: eventLimitSchema.default(DEFAULT_EVENT_LIMIT),
      waitSeconds: eventWaitSchema.default(0),
    })
    .strict(),
  z.object({ kind: z.literal('keys.revoke'), keyId: apiKeyIdSchema }).strict(),
  // The id is the client's draw (a retried add finds its own endpoint); the secret comes back sealed to `recipient`, never in history.
  newWebhookSchema.extend({ kind: z.literal('webhooks.add'), webhookId: webhookIdSchema, recipient: recipientPublicKeySchema }),
  z.object({ kind: z.literal('webhooks.list') }).strict(),
  z.object({ kind: z.literal('webhooks.remove'), webhookId: webhookIdSchema }).strict(),
  z.object({ kind: z.literal('webhooks.deliveries'), webhookId: webhookIdSchema, limit: z.number().int().min(1).max(1000).default(50) }).strict(),
  // Usage by principal and UTC day (DESIGN §19): with a principal, only that principal's; without, an operator's: everyone's.
  usageQuerySchema.extend({ kind: z.literal('usage') }),
]);
export type StoreCommand = z.output<typeof storeCommandSchema>;
export type StoreCommandInput = z.input<typeof storeCommandSchema>;
export type StoreCommandKind = StoreCommand['kind'];

/**
 * Commands a retry may repeat without changing the outcome. A policy row added twice is
 * two rows, and a row removed twice is NOT_FOUND the second time, so those run once; a
 * target added twice is refused the second time, so its add and remove run once too, as
 * does a snapshot's delete.
 */
export const RETRY_SAFE_KINDS: ReadonlySet<StoreCommandKind> = new Set<StoreCommandKind>([
  'policy.list',
  'approvers.add',
  'approvers.list',
  'approvers.remove',
  'audit',
  'audit.verify',
  'audit.export',
  'leaks',
  'hosts',
  'hosts.register',
  'targets.list',
  'targets.get',
  'targets.audit',
  'snapshots.list',
  'snapshots.get',
  'iac.screen',
  'sandboxes.tree',
  'keys.add',
  'keys.list',
  'keys.revoke',
  'webhooks.add',
  'webhooks.list',
  'webhooks.remove',
  'webhooks.deliveries',
  'usage',
  'events',
]);

/**
 * What a principal-bound caller (an agent) may ask of the store: its own audit trails, events and
 * snapshots (to read, and to delete), its own sandboxes' families, its own usage, and policy's verdict on its own IaC run. Everything else is an operator's (DESIGN §18), refused as PRINCIPAL_MISMATCH.
 */
export const PRINCIPAL_KINDS: ReadonlySet<StoreCommandKind> = new Set<StoreCommandKind>([
  'audit',
  'snapshots.list',
  'snapshots.get',
  'snapshots.delete',
  'iac.screen',
  'sandboxes.tree',
  'usage',
  'events',
]);

/** A policy row as the store keeps it. */
export interface PolicyRecord extends PolicyRow {
  readonly maxSandboxHoursPerDay: number | null;
  readonly createdAt: string;
}

export interface ApproverRecord {
  readonly name: string;
  readonly addedAt: string;
}

/** One row of a sandbox's audit trail. */
export interface AuditEntry extends OperationRecord {
  readonly seq: number;
  readonly sandboxId: string;
  readonly workflowId: string;
  readonly at: string;
}

/** A leak the cleanup sweep found, with when it was first and last seen. */
export interface LeakRecord extends LeakFinding {
  readonly id: number;
  readonly firstSeen: string;
  readonly lastSeen: string;
  /** `null` while outstanding; `removed` by a sweep; `gone` when no longer observed. */
  readonly resolution: 'removed' | 'gone' | null;
  readonly resolvedAt: string | null;
}

/** What each command answers; the shapes of `sandboxctl … --json` (DESIGN §11). */
export interface StoreCommandResults {
  'policy.add': PolicyRecord;
  'policy.list': { policies: PolicyRecord[] };
  'policy.remove': PolicyRecord;
  'approvers.add': ApproverRecord & { readonly enrolment: SealedText };
  'approvers.list': { approvers: ApproverRecord[] };
  'approvers.remove': ApproverRecord;
  audit: { sandboxId: string; operations: AuditEntry[] };
  'audit.verify': AuditVerification;
  'audit.export': AuditExportPage;
  leaks: { leaks: LeakRecord[] };
  hosts: { hosts: HostView[] };
  'hosts.register': HostView;
  'hosts.remove': HostView;
  'targets.add': TargetRecord;
  'targets.list': { targets: TargetRecord[] };
  'targets.remove': TargetRecord;
  'targets.get': TargetRecord;
  'targets.audit': { target: string; operations: TargetAuditEntry[] };
  'snapshots.list': { snapshots: SnapshotSummary[] };
  'snapshots.get': SnapshotSource;
  'snapshots.delete': SnapshotSummary;
  'iac.screen': IacDecision;
  'sandboxes.tree': { root: string; sandboxIds: string[] };
  'keys.add': ApiKeyRecord;
  'keys.list': { keys: ApiKeyRecord[] };
  'keys.revoke': ApiKeyRecord;
  'webhooks.add': WebhookRecord & { readonly secret: SealedText };
  'webhooks.list': { webhooks: WebhookRecord[] };
  'webhooks.remove': WebhookRecord;
  'webhooks.deliveries': { webhookId: string; deliveries: WebhookDelivery[] };
  usage: { rows: UsageRow[] };
  events: EventPage;
}

/** The store role's activity, as workflow code sees it (its type only; the worker wires the code). */
export interface StoreCommandActivities {
  runStoreCommand(command: StoreCommandInput): Promise<unknown>;
}
