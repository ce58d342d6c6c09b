import { randomBytes, randomUUID } from 'node:crypto';
import { ApplicationFailure, TimeoutFailure, WorkflowFailedError } from '@temporalio/client';
import {
  HOST_MEMORY_REPORT_WORKFLOW,
  HOST_MEMORY_REPORT_WORKFLOW_ID_PREFIX,
  STORE_COMMAND_WORKFLOW,
  STORE_COMMAND_WORKFLOW_ID_PREFIX,
  WARM_POOL_REPORT_WORKFLOW,
  WARM_POOL_REPORT_WORKFLOW_ID_PREFIX,
} from '../domain/contract-names';
import { SandboxPlaneError } from '../domain/errors';
import type { HostMemoryReport, HostReport, HostView } from '../domain/hosts';
import type { ApiKeyRecord, NewApiKey } from '../domain/api-keys';
import type { AuditCursor, AuditExportPage, AuditRecord, AuditVerification } from '../domain/audit-evidence';
import { refuseUnlessOperator } from '../domain/operator-only';
import { newApiKey } from '../crypto/api-key-hash';
import {
  PRINCIPAL_KINDS,
  storeCommandSchema,
  type ApproverRecord,
  type AuditEntry,
  type LeakRecord,
  type NewPolicyInput,
  type PolicyRecord,
  type StoreCommandInput,
  type StoreCommandKind,
  type StoreCommandResults,
} from '../domain/store-commands';
import type { EventPage } from '../domain/event-query';
import type { IacDecision } from '../domain/iac/iac-screening';
import type { SnapshotSource, SnapshotSummary } from '../domain/snapshots';
import type { NewTargetInput, TargetAuditEntry, TargetRecord } from '../domain/targets';
import { storeQueue } from '../domain/task-queues';
import { parseOrThrow } from '../domain/validation';
import type { UsageRow } from '../domain/usage';
import type { WarmPoolReport } from '../domain/warm-pool';
import { newWebhookSchema, type NewWebhookInput, type WebhookDelivery, type WebhookRecord } from '../domain/webhooks';
import { newRecipient } from '../crypto/sealed-box';
import { toSandboxError } from './client-errors';
import { PlaneClient, type ConnectOptions, type PlaneClientOptions } from './plane-client';

/** What `new StoreClient(...)` takes: a connected Temporal client, the workers' queue, and the caller (DESIGN §18: a bound client reads only its own audit trails and snapshots, and is refused operator commands). */
export type StoreClientOptions = PlaneClientOptions;

/** How long one command may take, start to answer: the store command's own 15 s pickup wait fits inside. */
const COMMAND_TIMEOUT_SECONDS = 30;

type CommandOf<K extends StoreCommandKind> = Extract<StoreCommandInput, { kind: K }>;

/** `store-policy-add-<uuid>`: the kind shows in the Temporal UI's list of executions. */
export function storeCommandWorkflowId(kind: StoreCommandKind): string {
  return `${STORE_COMMAND_WORKFLOW_ID_PREFIX}${kind.replace(/\./g, '-')}-${randomUUID()}`;
}

/**
 * Policy rows, approvers, audit trails, leaks, hosts and targets, through Temporal only: each
 * call is one `storeCommand` workflow that the store role (`<tq>-store`) serves, so a
 * caller needs no access to the store's file, and each policy change is a visible
 * execution. Every method throws a {@link SandboxPlaneError}: NOT_FOUND for an unknown
 * row, approver, sandbox or target; STORE_UNAVAILABLE when no worker answers in time.
 *
 * @example
 * const store = await StoreClient.connect({ address: '127.0.0.1:7233', namespace: 'default', taskQueue: 'sandboxplane' });
 * await store.addPolicy({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
 */
export class StoreClient extends PlaneClient {
  /** Connects to Temporal; {@link close} releases the connection. */
  static async connect(options: ConnectOptions): Promise<StoreClient> {
    return PlaneClient.connectOwning(options, (parts) => new StoreClient(parts));
  }

  /** Adds a policy row; the worker applies it to the next request it screens. Limits left out are `null` (none). */
  async addPolicy(policy: NewPolicyInput): Promise<PolicyRecord> {
    return this.run({ kind: 'policy.add', ...policy }, `policy add: ${policy.principalPattern} / ${policy.capability} → ${policy.effect}`);
  }

  /** Every policy row, oldest first. */
  async listPolicies(): Promise<PolicyRecord[]> {
    return (await this.run({ kind: 'policy.list' })).policies;
  }

  /** Removes a policy row and returns it; NOT_FOUND when there is no row with this id. */
  async removePolicy(id: number): Promise<PolicyRecord> {
    return this.run({ kind: 'policy.remove', id }, `policy remove: row ${id}`);
  }

  /**
   * Enrols an approver (DESIGN §12) and returns their `otpauth://` URI, once: put it
   * into their authenticator app now. It travels sealed to a key that lives only in this
   * call, so the command's history holds nothing anyone can open. INVALID_STATE when the
   * approver already has an authenticator (remove them first to give them a new one).
   */
  async addApprover(name: string): Promise<ApproverRecord & { readonly otpauthUri: string }> {
    const recipient = newRecipient();
    const { enrolment, ...approver } = await this.run({ kind: 'approvers.add', name, recipient: recipient.publicKey }, `approvers add: ${name}`);
    return { ...approver, otpauthUri: recipient.open(enrolment) };
  }

  /** Every listed approver, by name. */
  async listApprovers(): Promise<ApproverRecord[]> {
    return (await this.run({ kind: 'approvers.list' })).approvers;
  }

  /** Removes an approver (their later approvals are ignored); NOT_FOUND when not listed. */
  async removeApprover(name: string): Promise<ApproverRecord> {
    return this.run({ kind: 'approvers.remove', name }, `approvers remove: ${name}`);
  }

  /** A sandbox's audit trail, oldest first; NOT_FOUND when the store has never seen the sandbox. */
  async audit(sandboxId: string): Promise<AuditEntry[]> {
    return (await this.run({ kind: 'audit', sandboxId, ...(this.principal !== undefined ? { principal: this.principal } : {}) })).operations;
  }

  /**
   * Checks the whole audit trail's hash chains in the store (DESIGN §19), which alone holds
   * the chain key: `ok`, the rows checked, and the first row found edited, removed or
   * reordered, or written unchained. An operator's command.
   */
  async verifyAudit(): Promise<AuditVerification> {
    return this.run({ kind: 'audit.verify' });
  }

  /**
   * Every audit row with its chain fields, oldest first per stream (sandboxes' rows, then
   * targets'), at or after `since` (an ISO time) when given; fetched a page at a time, so a
   * trail of any length stays inside Temporal's payload limit. An operator's command.
   */
  async *exportAudit(options: { since?: string } = {}): AsyncGenerator<AuditRecord> {
    for (let after: AuditCursor | null = null; ;) {
      const page: AuditExportPage = await this.run({ kind: 'audit.export', after, ...(options.since !== undefined ? { since: options.since } : {}) });
      yield* page.records;
      if (page.next === null) return;
      after = page.next;
    }
  }

  /**
   * Makes an API key for `principal` (DESIGN §18): the key is in the result this once;
   * the store keeps only a slow hash of it, made here, so the key never travels.
   */
  async addKey(principal: string, options: { ratePerMinute?: number; maxInFlight?: number } = {}): Promise<ApiKeyRecord & NewApiKey> {
    const { keyId, key, secretHash } = await newApiKey();
    const record = await this.run(
      {
        kind: 'keys.add',
        keyId,
        principal,
        secretHash,
        ...(options.ratePerMinute !== undefined ? { ratePerMinute: options.ratePerMinute } : {}),
        ...(options.maxInFlight !== undefined ? { maxInFlight: options.maxInFlight } : {}),
      },
      `keys add: ${principal}`,
    );
    return { ...record, key };
  }

  /** Every API key, revoked ones too; never a secret. */
  async keys(): Promise<ApiKeyRecord[]> {
    return (await this.run({ kind: 'keys.list' })).keys;
  }

  /** Revokes a key: the gateway refuses it from its next request. NOT_FOUND for an unknown id. */
  async revokeKey(keyId: string): Promise<ApiKeyRecord> {
    return this.run({ kind: 'keys.revoke', keyId }, `keys revoke: ${keyId}`);
  }

  /** Outstanding leaks the cleanup sweep found and would not (or could not) remove. */
  async leaks(): Promise<LeakRecord[]> {
    return (await this.run({ kind: 'leaks' })).leaks;
  }

  /** Retires a host no docker worker serves and no sandbox holds (HOST_IN_USE otherwise); returns it as it was. */
  async removeHost(hostId: string): Promise<HostView> {
    return this.run({ kind: 'hosts.remove', hostId });
  }

  /** The registered Docker hosts, with whether a worker polls each lately. */
  async hosts(): Promise<HostView[]> {
    return (await this.run({ kind: 'hosts' })).hosts;
  }

  /**
   * Registers a target of promotion (DESIGN §14). `profile` names a profile in the AWS
   * shared config and credentials files of the worker that serves targets: only the name
   * travels and is stored, never a secret. `endpoint` and `profile` left out are `null`
   * (the region's own endpoints, the worker's default credential chain). INVALID_STATE
   * when a target of that name is registered already (remove it first).
   *
   * @example
   * await store.addTarget({ name: 'staging-eu', environment: 'staging', region: 'eu-west-2', profile: 'plane-staging' });
   */
  async addTarget(target: NewTargetInput): Promise<TargetRecord> {
    return this.run({ kind: 'targets.add', ...target }, `targets add: ${target.name} (${target.environment}, ${target.region})`);
  }

  /** Every registered target, by name. */
  async targets(): Promise<TargetRecord[]> {
    return (await this.run({ kind: 'targets.list' })).targets;
  }

  /** One registered target; NOT_FOUND when there is none by that name. */
  async target(name: string): Promise<TargetRecord> {
    return this.run({ kind: 'targets.get', name });
  }

  /** Removes a target and returns it as it was; its audit trail stays. NOT_FOUND when there is none by that name. */
  async removeTarget(name: string): Promise<TargetRecord> {
    return this.run({ kind: 'targets.remove', name }, `targets remove: ${name}`);
  }

  /**
   * The audit trail of IaC runs against a target, oldest first; a removed target's trail
   * too. NOT_FOUND when the store has never seen the name (no target, no rows).
   */
  async targetAudit(name: string): Promise<TargetAuditEntry[]> {
    return (await this.run({ kind: 'targets.audit', name })).operations;
  }

  /**
   * Snapshots (DESIGN §15), newest first: `principal`'s own, or everyone's when left out
   * (an operator's view); of one sandbox with `sandboxId`.
   */
  async snapshots(filter: { principal?: string; sandboxId?: string } = {}): Promise<SnapshotSummary[]> {
    return (await this.run({ kind: 'snapshots.list', ...filter })).snapshots;
  }

  /** One of `principal`'s snapshots, with the adapter and services of its sandbox; NOT_FOUND when it is not theirs. */
  async snapshot(principal: string, snapshotId: string): Promise<SnapshotSource> {
    return this.run({ kind: 'snapshots.get', principal, snapshotId });
  }

  /**
   * Deletes a snapshot and returns what it was: `principal`'s own (another's is NOT_FOUND),
   * or anyone's when left out (an operator). INVALID_STATE for the snapshot a PAUSED sandbox
   * resumes from. Forks and restores of it are NOT_FOUND from then on.
   */
  async deleteSnapshot(snapshotId: string, options: { principal?: string; actor?: string } = {}): Promise<SnapshotSummary> {
    return this.run({ kind: 'snapshots.delete', snapshotId, ...options }, `snapshots delete: ${snapshotId}`);
  }

  /**
   * The ids of `sandboxId`'s family (DESIGN §15): its root first, then the root's forks,
   * oldest first, ended ones too. NOT_FOUND for another principal's sandbox (`principal`
   * set), as for one that never was.
   */
  async tree(sandboxId: string, principal?: string): Promise<{ root: string; sandboxIds: string[] }> {
    return this.run({ kind: 'sandboxes.tree', sandboxId, ...(principal !== undefined ? { principal } : {}) });
  }

  /**
   * Usage by principal and UTC day (DESIGN §19), newest day first: `filter.principal`'s
   * (this client's own, when it is bound to a principal) or everyone's, from the UTC day
   * `filter.since` (YYYY-MM-DD) on. Live sandboxes count up to now.
   */
  async usage(filter: { principal?: string; since?: string } = {}): Promise<UsageRow[]> {
    if (this.principal !== undefined && filter.principal !== undefined && filter.principal !== this.principal) return [];
    const principal = this.principal ?? filter.principal;
    return (await this.run({ kind: 'usage', ...(principal !== undefined ? { principal } : {}), ...(filter.since !== undefined ? { since: filter.since } : {}) })).rows;
  }

  /** Policy's verdict on `principal`'s IaC run over `services` (against `target`, for a promotion), before the run starts. */
  async screenIacRun(input: { principal: string; services: readonly string[]; target?: string }): Promise<IacDecision> {
    return this.run({ kind: 'iac.screen', principal: input.principal, services: [...input.services], ...(input.target !== undefined ? { target: input.target } : {}) });
  }

  /** Every live docker host's warm pools (DESIGN §13), asked of each host's docker worker now. */
  async warmPools(): Promise<WarmPoolReport> {
    this.refuseUnlessOperator('pools');
    return (await this.askHosts(WARM_POOL_REPORT_WORKFLOW, WARM_POOL_REPORT_WORKFLOW_ID_PREFIX)) as WarmPoolReport;
  }

  /**
   * The hosts as {@link hosts} gives them, each with the memory this plane's running
   * containers on it use now (`memoryInUseBytes`), asked of each live host's docker
   * worker (DESIGN §12): what placement's requests and limits are estimates of. The
   * store's view does not wait on the engines: a read that fails leaves every
   * `memoryInUseBytes` null.
   */
  async hostsWithMemoryInUse(): Promise<HostReport[]> {
    this.refuseUnlessOperator('hosts');
    const unread: HostMemoryReport = { hosts: [], unanswered: [] };
    const [hosts, memory] = await Promise.all([
      this.hosts(),
      (this.askHosts(HOST_MEMORY_REPORT_WORKFLOW, HOST_MEMORY_REPORT_WORKFLOW_ID_PREFIX) as Promise<HostMemoryReport>).catch(() => unread),
    ]);
    const inUse = new Map(memory.hosts.map((host) => [host.hostId, host.bytes]));
    return hosts.map((host) => ({ ...host, memoryInUseBytes: inUse.get(host.hostId) ?? null }));
  }

  /** Runs one of the reports that ask every live docker host (its worker answers for its own engine). */
  private async askHosts(workflowType: string, idPrefix: string): Promise<unknown> {
    try {
      return await this.client.workflow.execute(workflowType, {
        taskQueue: this.taskQueue,
        workflowId: `${idPrefix}${randomUUID()}`,
        workflowExecutionTimeout: `${COMMAND_TIMEOUT_SECONDS}s`,
      });
    } catch (err) {
      throw this.explain(err, 'hosts');
    }
  }

  /**
   * Registers a webhook endpoint (DESIGN §19) and returns it with its signing secret
   * (`whsec_…`, Standard Webhooks' form), shown this once: the store keeps it sealed.
   * Operators only.
   */
  async addWebhook(webhook: NewWebhookInput): Promise<WebhookRecord & { readonly secret: string }> {
    const checked = parseOrThrow(newWebhookSchema, webhook, 'webhook');
    const recipient = newRecipient();
    const webhookId = `wh_${randomBytes(8).toString('hex')}`;
    const { secret, ...added } = await this.run({ kind: 'webhooks.add', ...checked, webhookId, recipient: recipient.publicKey }, `webhooks add: ${checked.url}`);
    return { ...added, secret: recipient.open(secret) };
  }

  /** The live webhook endpoints (never their secrets). */
  async webhooks(): Promise<WebhookRecord[]> {
    return (await this.run({ kind: 'webhooks.list' })).webhooks;
  }

  /** Stops deliveries to an endpoint; NOT_FOUND when it is not registered. */
  async removeWebhook(webhookId: string): Promise<WebhookRecord> {
    return this.run({ kind: 'webhooks.remove', webhookId }, `webhooks remove: ${webhookId}`);
  }

  /** The newest delivery attempts to an endpoint, oldest first. */
  async webhookDeliveries(webhookId: string, limit?: number): Promise<WebhookDelivery[]> {
    return (await this.run({ kind: 'webhooks.deliveries', webhookId, ...(limit !== undefined ? { limit } : {}) })).deliveries;
  }

  /**
   * Events (DESIGN §19), oldest first: this client's principal's only when it is bound,
   * everyone's for an operator; of one sandbox with `sandboxId` (NOT_FOUND for another
   * principal's, as for one that never was). Start at `sinceIso`, or `after` the `next`
   * of an earlier read; with `waitSeconds` (at most 20) and nothing to return yet, the
   * store waits that long for an event to come before it answers with none.
   */
  async events(query: { sandboxId?: string; sinceIso?: string; after?: string; limit?: number; waitSeconds?: number } = {}): Promise<EventPage> {
    const command = { kind: 'events' as const, ...query, ...(this.principal !== undefined ? { principal: this.principal } : {}) };
    return this.run(command, 'events', query.waitSeconds ?? 0);
  }

  /** Runs one command as a `storeCommand` workflow on `<tq>` and waits for its answer (and `waitSeconds` more, for a read that waits in the store). */
  private async run<K extends StoreCommandKind>(command: CommandOf<K>, summary: string = command.kind, waitSeconds = 0): Promise<StoreCommandResults[K]> {
    const checked = parseOrThrow(storeCommandSchema, command, `${command.kind} command`);
    if (!PRINCIPAL_KINDS.has(checked.kind)) this.refuseUnlessOperator(checked.kind);
    try {
      return (await this.client.workflow.execute(STORE_COMMAND_WORKFLOW, {
        taskQueue: this.taskQueue,
        workflowId: storeCommandWorkflowId(checked.kind),
        args: [checked],
        workflowExecutionTimeout: `${COMMAND_TIMEOUT_SECONDS + waitSeconds}s`,
        staticSummary: summary,
      })) as StoreCommandResults[K];
    } catch (err) {
      throw this.explain(err, checked.kind);
    }
  }

  /** Operator commands (DESIGN §18) are PRINCIPAL_MISMATCH to a principal-bound caller. */
  private refuseUnlessOperator(what: string): void {
    refuseUnlessOperator(this.principal, what);
  }

  /** The store's verdict with the hint it gave, or STORE_UNAVAILABLE when no worker ran the command at all. */
  private explain(err: unknown, kind: StoreCommandKind): SandboxPlaneError {
    if (err instanceof WorkflowFailedError && err.cause instanceof TimeoutFailure) {
      return new SandboxPlaneError('STORE_UNAVAILABLE', `no worker answered ${kind} within ${COMMAND_TIMEOUT_SECONDS} s (task queues ${this.taskQueue} and ${storeQueue(this.taskQueue)})`, {
        hint: `Start the plane's workers: \`sandboxctl worker\` (all roles), or a lifecycle worker on ${this.taskQueue} plus a store worker (\`sandboxctl worker --role store\`).`,
        cause: err,
      });
    }
    const mapped = toSandboxError(err, kind);
    const hint = carriedHint(err);
    return hint === undefined ? mapped : new SandboxPlaneError(mapped.code, mapped.message, { hint, details: mapped.details, cause: err });
  }
}

/** The hint the store put on its failure (activities/activity-failure.ts keeps it in the first detail), if any. */
function carriedHint(err: unknown): string | undefined {
  const failure = err instanceof WorkflowFailedError ? err.cause : err;
  if (!(failure instanceof ApplicationFailure)) return undefined;
  const first: unknown = failure.details?.[0];
  const hint = typeof first === 'object' && first !== null ? (first as { hint?: unknown }).hint : undefined;
  return typeof hint === 'string' && hint !== '' ? hint : undefined;
}
