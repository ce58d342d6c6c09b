import { inSpan } from '../telemetry/spans';
import { randomBytes } from 'node:crypto';
import { type UpdateDefinition, WithStartWorkflowOperation, WorkflowExecutionAlreadyStartedError, type WorkflowHandle, WorkflowNotFoundError } from '@temporalio/client';
import { z } from 'zod';
import { sandboxIdFromWorkflowId, SANDBOX_LIFECYCLE_WORKFLOW, workflowIdFor } from '../domain/contract-names';
import { isErrorCode } from '../domain/error-codes';
import { SandboxPlaneError } from '../domain/errors';
import { hasReached, type ApprovalAttempt, type AwaitStatePayload, type AwaitStateTarget, type SandboxStatus } from '../domain/lifecycle-messages';
import { listingFromDetails, type ResourceListing, type ResourceRef } from '../domain/resources';
import { eventsQuerySchema, type EventPage, type EventsQuery } from '../domain/event-query';
import { agentActor, type PlaneEvent } from '../domain/events';
import { requestDigestOf, sandboxIdSchema, sandboxRequestSchema, type IdentifiedRequest, type SandboxRequestInput } from '../domain/sandbox-request';
import { SandboxCapability, SandboxExpiresAt, SandboxPrincipal, SandboxState as SandboxStateKey } from '../domain/search-attributes';
import { SANDBOX_STATES, isTerminal, UNSUCCESSFUL_END_STATES, type SandboxState } from '../domain/sandbox-states';
import { parseOrThrow } from '../domain/validation';
import type { UsageRow } from '../domain/usage';
import { DEFAULT_FORK_MAX, snapshotIdSchema, type SnapshotSummary } from '../domain/snapshots';
import { forkCountSchema, forkMany, outcomeOf, type FamilyOutcome, type ForkResult, type SandboxTree } from './sandbox-family';
import {
  awaitStateUpdate,
  decideUpdate,
  destroyUpdate,
  extendUpdate,
  pauseUpdate,
  resourcesUpdate,
  restoreUpdate,
  resumeUpdate,
  snapshotUpdate,
  statusQuery,
  type LifecycleInput,
} from '../workflows/sandbox-messages';
import { toSandboxError, unlessNotFound } from './client-errors';
import { quoted } from './visibility-query';
import { followEvents, type FollowQuery } from './event-follow';
import { IacClient } from './iac-client';
import { StoreClient } from './store-client';
import { PlaneClient, type ConnectOptions, type PlaneClientOptions } from './plane-client';
import { statusSeenBy, withTimeLeft } from './status-view';

/** How long `create` waits: until the request is screened, until the sandbox is READY, or until it has ended. */
export type CreateWait = 'accepted' | 'ready' | 'ended';

export interface CreateOptions {
  /**
   * `accepted` (default): return once screened. `ready`: return once READY (through
   * approval, if needed). `ended`: return once the sandbox has ended (DESTROYED after its TTL).
   * The wait happens inside Temporal (an update sent with the start), not by polling.
   */
  readonly wait?: CreateWait;
  /** Give up waiting after this long with WAIT_TIMEOUT; the sandbox itself goes on. Default 10 minutes, at most a day. */
  readonly timeoutMs?: number;
}

/** One row of `list`: what the search attributes say, without asking the worker. */
export interface SandboxSummary {
  readonly id: string;
  readonly workflowId: string;
  readonly state: SandboxState | null;
  readonly principal: string | null;
  readonly capability: string | null;
  readonly expiresAt: string | null;
  readonly startedAt: string;
  /** Temporal's view: RUNNING until the lifecycle has ended. */
  readonly workflowStatus: string;
}

export interface ListFilter {
  readonly state?: SandboxState;
  readonly principal?: string;
  /** At most this many rows, newest first. Default 100. */
  readonly limit?: number;
}

/** The result of an approve or deny, as the workflow judged it. */
export interface ApprovalOutcome {
  readonly attempt: ApprovalAttempt;
  readonly status: SandboxStatus;
}

export interface SandboxClientOptions extends PlaneClientOptions {
  /** The most sandboxes one `fork` with `count` makes (SANDBOXPLANE_FORK_MAX; default 20). */
  readonly forkMax?: number;
}

/** A request from a principal-bound client may leave the principal out: it is the client's. */
export type BoundRequestInput = Omit<SandboxRequestInput, 'principal'> & { readonly principal?: string };

/** What a fork may name besides its snapshot: the request's fields, and `count` for many at once. */
export type ForkRequest = Partial<BoundRequestInput> & { readonly count?: number };

const DEFAULT_CREATE_TIMEOUT_MS = 10 * 60_000;
/** The longest wait the `awaitState` update takes (its `timeoutSeconds` is at most a day). */
const MAX_CREATE_TIMEOUT_MS = 86_400_000;

/**
 * Checked before the start: the wait travels as the update sent with the start, and a
 * start goes ahead even when the workflow refuses that update, so a bad option would
 * leave a sandbox behind that its caller was told was refused.
 */
const createOptionsSchema = z
  .object({
    wait: z.enum(['accepted', 'ready', 'ended']).default('accepted'),
    timeoutMs: z.number().positive('must be positive').max(MAX_CREATE_TIMEOUT_MS, `must be at most a day (${MAX_CREATE_TIMEOUT_MS})`).default(DEFAULT_CREATE_TIMEOUT_MS),
  })
  .strict();
/** Answers after which any update is sent again: the run handed over to a fresh one before taking it. */
const CONTINUED_CODES: ReadonlySet<string> = new Set(['RUN_CONTINUED']);

/** ...and an idempotent one also when the server lost it (NOT_FOUND; see resendingUpdate). */
const RESENT_CODES: ReadonlySet<string> = new Set(['NOT_FOUND', 'RUN_CONTINUED']);

/** How often an update is sent in all, at most (see sendUpdate). */
const UPDATE_SENDS = 3;

const AWAIT_TARGET: Readonly<Record<CreateWait, AwaitStateTarget>> = { accepted: 'screened', ready: 'ready', ended: 'ended' };

/** sha256 of the canonical request text: a repeated id must repeat the same request. */
export function requestDigest(request: IdentifiedRequest): string {
  return requestDigestOf(request);
}

/** A fresh sandbox id for a request that names none (no idempotency then). */
export function generateSandboxId(): string {
  return `sbx-${randomBytes(6).toString('hex')}`;
}

/**
 * The typed SDK agents and tools use to get and manage sandboxes. Every method throws
 * a {@link SandboxPlaneError} whose `code` is from the taxonomy (`POLICY_DENIED`,
 * `NOT_FOUND`, `TTL_EXCEEDS_CEILING`, ...) and whose `hint` says what to do.
 *
 * @example
 * const sandboxes = await SandboxClient.connect({ address: '127.0.0.1:7233', namespace: 'default', taskQueue: 'sandboxplane' });
 * const sandbox = await sandboxes.create({ principal: 'agent-7', services: ['s3'], ttlSeconds: 900 }, { wait: 'ready' });
 * const s3 = new S3Client(sandbox.clientConfig!);
 */
export class SandboxClient extends PlaneClient {
  private readonly forkMax: number;

  constructor(options: SandboxClientOptions) {
    super(options);
    this.forkMax = options.forkMax ?? DEFAULT_FORK_MAX;
  }

  /** Connects to Temporal; {@link close} releases the connection. */
  static async connect(options: ConnectOptions): Promise<SandboxClient> {
    return PlaneClient.connectOwning(options, (parts) => new SandboxClient({ ...parts, ...(options.forkMax !== undefined ? { forkMax: options.forkMax } : {}) }));
  }

  /** Infrastructure as code in this client's sandboxes (plans, applies, approvals), as the same caller. */
  get iac(): IacClient {
    return new IacClient(this.sameCaller);
  }

  /** Snapshots, usage, events and the rest of what the store role keeps, as the same caller, over the same connection. */
  get store(): StoreClient {
    return new StoreClient(this.sameCaller);
  }

  /**
   * Asks for a sandbox. The id is the idempotency key: the same id with the same request
   * returns the same sandbox (one workflow, one provisioning); the same id with a
   * different request is refused with IDEMPOTENCY_CONFLICT. A request that ends DENIED,
   * EXPIRED or FAILED throws with that code; `error.details.status` holds the status.
   */
  async create(input: SandboxRequestInput | BoundRequestInput, options: CreateOptions = {}): Promise<SandboxStatus> {
    const parsed = parseOrThrow(sandboxRequestSchema, this.asCaller(input), 'sandbox request');
    try {
      return await this.createParsed(parsed, options);
    } catch (err) {
      // A bound caller does not get to read another principal's sandbox through a reused id.
      if (this.principal !== undefined && err instanceof SandboxPlaneError && err.code === 'IDEMPOTENCY_CONFLICT') {
        throw new SandboxPlaneError('IDEMPOTENCY_CONFLICT', `sandbox id ${parsed.id ?? ''} is taken by another request`, { hint: 'Choose another id, or leave it out.' });
      }
      throw err;
    }
  }

  private createParsed(parsed: z.output<typeof sandboxRequestSchema>, options: CreateOptions): Promise<SandboxStatus> {
    const { wait, timeoutMs } = parseOrThrow(createOptionsSchema, options, 'create options');
    const request: IdentifiedRequest = { ...parsed, id: parsed.id ?? generateSandboxId() };
    // The span a trace is found by (DESIGN §17): Jaeger's search for sandbox.id=<id> lands on the create.
    return inSpan('sandbox create', { 'sandbox.id': request.id, 'sandbox.adapter': request.adapter, 'sandbox.wait': wait }, (span) =>
      this.startAndAwait(request, wait, timeoutMs).then((status) => {
        span.setAttribute('sandbox.state', status.state);
        return status;
      }),
    );
  }

  private async startAndAwait(request: IdentifiedRequest, wait: CreateOptions['wait'] & string, timeoutMs: number): Promise<SandboxStatus> {
    const digest = requestDigest(request);
    const workflowId = workflowIdFor(request.id);
    const until = AWAIT_TARGET[wait];
    const lifecycleInput: LifecycleInput = { request };
    const startOperation = new WithStartWorkflowOperation(SANDBOX_LIFECYCLE_WORKFLOW, {
      taskQueue: this.taskQueue,
      workflowId,
      args: [lifecycleInput],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      typedSearchAttributes: [
        { key: SandboxStateKey, value: 'REQUESTED' },
        { key: SandboxPrincipal, value: request.principal },
        { key: SandboxCapability, value: request.capability },
      ],
      staticSummary: `sandbox ${request.id} for ${request.principal}: ${request.services.join(', ')}`,
    });
    const awaitArgs: [AwaitStatePayload] = [{ until, requestDigest: digest, timeoutSeconds: Math.max(1, Math.ceil(timeoutMs / 1000)) }];
    let status: SandboxStatus;
    try {
      // One call: starts the lifecycle (or joins the running one) and waits inside it.
      status = await this.client.workflow.executeUpdateWithStart(awaitStateUpdate, { args: awaitArgs, startWorkflowOperation: startOperation });
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) {
        const mapped = toSandboxError(err, request.id);
        if (!RESENT_CODES.has(mapped.code)) throw mapped;
        const resent = await this.resendingUpdate(request.id, awaitStateUpdate, awaitArgs);
        return this.settle(resent === 'ended' ? await this.finalStatus(request.id) : resent, until, timeoutMs);
      }
      // The id belongs to a lifecycle that has ended: answer with how it ended, if it was this request.
      status = await this.finalStatus(request.id);
      if (status.requestDigest !== digest) {
        throw new SandboxPlaneError('IDEMPOTENCY_CONFLICT', `sandbox ${request.id} exists for a different request`, {
          details: { sandboxId: request.id },
        });
      }
    }
    return this.settle(status, until, timeoutMs);
  }

  /** The request with the caller's principal: filled in when left out, refused when it names another. */
  private asCaller(input: SandboxRequestInput | BoundRequestInput): unknown {
    if (this.principal === undefined) return input;
    const asked = (input as { principal?: unknown }).principal;
    if (asked !== undefined && asked !== this.principal) {
      throw new SandboxPlaneError('PRINCIPAL_MISMATCH', `this client acts as ${this.principal} and cannot ask for a sandbox as ${String(asked)}`, {
        hint: `Leave the principal out (it is ${this.principal}), or use a client started for that principal.`,
      });
    }
    return { ...input, principal: this.principal };
  }

  /**
   * What this caller may see of a sandbox: everything for an operator; for a bound
   * caller only its own sandboxes (another's is NOT_FOUND, as if it did not exist), and
   * no approver names.
   */
  private seenBy(status: SandboxStatus): SandboxStatus {
    return statusSeenBy(this.principal, status);
  }

  /** For a bound caller, NOT_FOUND unless the sandbox is its own; before anything is sent to it. */
  private async ensureOwn(id: string): Promise<void> {
    if (this.principal !== undefined) await this.status(id);
  }

  /** The sandbox's status, or `undefined` when there is no sandbox with this id. */
  async get(id: string): Promise<SandboxStatus | undefined> {
    return unlessNotFound(this.status(id));
  }

  /** The sandbox's status (the workflow's `status` query); NOT_FOUND when there is none. */
  async status(id: string): Promise<SandboxStatus> {
    const sandboxId = this.checkId(id);
    let status: SandboxStatus;
    try {
      status = await this.client.workflow.getHandle(workflowIdFor(sandboxId)).query(statusQuery);
    } catch (err) {
      throw toSandboxError(err, sandboxId);
    }
    return withTimeLeft(this.seenBy(status));
  }

  /** Sandboxes by search attributes, newest first; visibility can lag a second behind. */
  async list(filter: ListFilter = {}): Promise<SandboxSummary[]> {
    const clauses = [`WorkflowType = ${quoted(SANDBOX_LIFECYCLE_WORKFLOW)}`];
    if (filter.state !== undefined) {
      if (!SANDBOX_STATES.includes(filter.state)) {
        throw new SandboxPlaneError('INVALID_INPUT', `state must be one of ${SANDBOX_STATES.join(', ')}, got '${filter.state}'`);
      }
      clauses.push(`SandboxState = ${quoted(filter.state)}`);
    }
    if (this.principal !== undefined && filter.principal !== undefined && filter.principal !== this.principal) return [];
    const principal = this.principal ?? filter.principal;
    if (principal !== undefined) clauses.push(`SandboxPrincipal = ${quoted(principal)}`);
    const limit = filter.limit ?? 100;
    const rows: SandboxSummary[] = [];
    try {
      for await (const execution of this.client.workflow.list({ query: clauses.join(' AND ') })) {
        const attributes = execution.typedSearchAttributes;
        const expiresAt = attributes.get(SandboxExpiresAt);
        rows.push({
          id: sandboxIdFromWorkflowId(execution.workflowId) ?? execution.workflowId,
          workflowId: execution.workflowId,
          state: (attributes.get(SandboxStateKey) as SandboxState | undefined) ?? null,
          principal: attributes.get(SandboxPrincipal) ?? null,
          capability: attributes.get(SandboxCapability) ?? null,
          expiresAt: expiresAt === undefined ? null : expiresAt.toISOString(),
          startedAt: execution.startTime.toISOString(),
          workflowStatus: execution.status.name,
        });
        if (rows.length >= limit) break;
      }
    } catch (err) {
      throw toSandboxError(err, '(list)');
    }
    return rows;
  }

  /**
   * Moves expiry later by `ttlSeconds`. Refused (TTL_EXCEEDS_CEILING) when that would
   * pass now + the max TTL or the sandbox's maximum lifetime; INVALID_STATE unless READY
   * or PAUSED (a paused sandbox's TTL keeps running).
   */
  async extend(id: string, change: { ttlSeconds: number; reason?: string; actor?: string }): Promise<SandboxStatus> {
    const sandboxId = this.checkId(id);
    await this.ensureOwn(sandboxId);
    const status = await this.sendUpdate(sandboxId, (handle) => handle.executeUpdate(extendUpdate, { args: [this.byCaller(change)] }));
    return withTimeLeft(await this.withClientConfig(this.seenBy(status)));
  }

  /**
   * `options` with the actor the audit trail and events name: a principal-bound client is
   * the agent itself (`agent:<actor>`, its principal when no actor is given), so an event
   * says `agent` rather than `operator` (DESIGN §19).
   */
  private byCaller<T extends { actor?: string }>(options: T): T {
    if (this.principal === undefined) return options;
    return { ...options, actor: agentActor(options.actor ?? this.principal) };
  }

  /**
   * Update results are kept in the workflow history, so they never carry credentials;
   * for a READY sandbox the client settings (its own credentials) come from the `status`
   * query, whose answer is not recorded.
   */
  private async withClientConfig(status: SandboxStatus): Promise<SandboxStatus> {
    if (status.state !== 'READY') return status;
    let current: SandboxStatus;
    try {
      current = await this.client.workflow.getHandle(status.workflowId).query(statusQuery);
    } catch (err) {
      throw toSandboxError(err, status.id);
    }
    return { ...status, clientConfig: current.state === 'READY' ? current.clientConfig : null };
  }

  /**
   * What a READY sandbox holds (buckets, tables, queues), asked of its emulator, when
   * every requested service could be listed: an empty list always means "looked, found
   * nothing". RESOURCES_PARTIAL when some service cannot be listed (one UNAVAILABLE here),
   * RESOURCE_DISCOVERY_FAILED when the emulator cannot say; {@link resourceListing}
   * returns what could be listed instead.
   */
  async resources(id: string): Promise<ResourceRef[]> {
    const sandboxId = this.checkId(id);
    await this.ensureOwn(sandboxId);
    return this.sendUpdate(sandboxId, (handle) => handle.executeUpdate(resourcesUpdate));
  }

  /**
   * What a READY sandbox holds, service by service: `resources` of the services that
   * could be listed, and `unlisted` naming each that could not, with its kind and reason.
   * Throws RESOURCE_DISCOVERY_FAILED only when nothing could be asked (no emulator).
   */
  async resourceListing(id: string): Promise<ResourceListing> {
    try {
      return { resources: await this.resources(id), unlisted: [] };
    } catch (err) {
      const listing = err instanceof SandboxPlaneError ? listingFromDetails(err.details) : undefined;
      if (listing === undefined) throw err;
      return listing;
    }
  }

  /**
   * Tears the sandbox down now and resolves once it is DESTROYED (or DESTROY_FAILED).
   * Destroying a sandbox that already ended returns its final status.
   */
  async destroy(id: string, options: { reason?: string; actor?: string } = {}): Promise<SandboxStatus> {
    const sandboxId = this.checkId(id);
    await this.ensureOwn(sandboxId);
    const status = await this.resendingUpdate(sandboxId, destroyUpdate, [this.byCaller(options)]);
    return status === 'ended' ? this.finalStatus(sandboxId) : withTimeLeft(this.seenBy(status));
  }

  /**
   * Takes a snapshot of a READY sandbox's emulator state (DESIGN §15), kept by the plane
   * and owned by the sandbox's principal: fork it with `create({ fromSnapshot })`, or put
   * it back with {@link restore}. SNAPSHOT_UNSUPPORTED for an emulator that cannot give its
   * state (Floci), SNAPSHOT_TOO_LARGE over the cap; INVALID_STATE unless READY.
   *
   * @example
   * const { snapshotId } = await sandboxes.snapshot('sbx-1');
   */
  async snapshot(id: string, options: { actor?: string } = {}): Promise<SnapshotSummary> {
    const sandboxId = this.checkId(id);
    await this.ensureOwn(sandboxId);
    return this.sendUpdate(sandboxId, (handle) => handle.executeUpdate(snapshotUpdate, { args: [this.byCaller(options)] }));
  }

  /**
   * Puts a snapshot's state back into a READY sandbox and resolves once it is there. The
   * sandbox keeps its credentials when the snapshot is its own; a snapshot of another of
   * your sandboxes brings new ones (status shows them). NOT_FOUND for a snapshot that is not
   * yours; SERVICE_NOT_ALLOWED when it holds state of a service this sandbox lacks.
   */
  async restore(id: string, snapshotId: string, options: { actor?: string } = {}): Promise<SandboxStatus> {
    const sandboxId = this.checkId(id);
    const snapshot = parseOrThrow(snapshotIdSchema, snapshotId, 'snapshot id');
    await this.ensureOwn(sandboxId);
    const status = await this.sendUpdate(sandboxId, (handle) => handle.executeUpdate(restoreUpdate, { args: [{ snapshotId: snapshot, ...this.byCaller(options) }] }));
    return withTimeLeft(await this.withClientConfig(this.seenBy(status)));
  }

  /**
   * Forks a snapshot (DESIGN §15): a new sandbox with the snapshot's state, in a container
   * and with credentials of its own; `create` with `fromSnapshot`, with the adapter and
   * services of the snapshot's sandbox unless `request` names them. NOT_FOUND for a
   * snapshot that is not the caller's (a bound client's principal, or `request.principal`).
   * With `count`, that many at once (at most SANDBOXPLANE_FORK_MAX), each under an id of
   * its own: every fork's outcome, READY or its own failure, never all-or-nothing. Each
   * fork's status names its `parent` and `root`; its TTL never passes its root's.
   *
   * @example
   * const fork = await sandboxes.fork(snapshotId, {}, { wait: 'ready' });
   * const { sandboxes: tries } = await sandboxes.fork(snapshotId, { count: 5 }, { wait: 'ready' });
   */
  async fork(snapshotId: string, request: ForkRequest & { count: number }, options?: CreateOptions): Promise<ForkResult>;
  async fork(snapshotId: string, request?: ForkRequest, options?: CreateOptions): Promise<SandboxStatus>;
  async fork(snapshotId: string, { count, ...request }: ForkRequest = {}, options: CreateOptions = {}): Promise<SandboxStatus | ForkResult> {
    const fromSnapshot = parseOrThrow(snapshotIdSchema, snapshotId, 'snapshot id');
    const principal = this.principal ?? request.principal;
    if (principal === undefined)
      throw new SandboxPlaneError('INVALID_INPUT', 'principal: required to fork a snapshot (whose snapshot is it?)', {
        hint: 'Pass request.principal, or use a client bound to a principal.',
      });
    if (count !== undefined) {
      parseOrThrow(forkCountSchema(this.forkMax), count, 'count');
      if (request.id !== undefined) throw new SandboxPlaneError('INVALID_INPUT', 'id: names one sandbox; a fork with count draws an id for each (leave id out)');
    }
    const source = request.services !== undefined && request.adapter !== undefined ? undefined : await this.store.snapshot(principal, fromSnapshot);
    const services = request.services ?? [...(source?.services ?? [])];
    const adapter = request.adapter ?? source?.adapter;
    const forked = { ...request, principal, services, ...(adapter !== undefined ? { adapter } : {}), fromSnapshot };
    if (count === undefined) return this.create(forked, options);
    return forkMany({ createOne: (id) => this.create({ ...forked, id }, options), get: (id) => this.get(id) }, count, this.forkMax, generateSandboxId);
  }

  /**
   * A sandbox's family (DESIGN §15): its root and every sandbox forked from the root's tree,
   * the root first, ended ones too. NOT_FOUND for another principal's sandbox.
   *
   * @example
   * const { root, sandboxes: family } = await sandboxes.tree('sbx-1');
   */
  async tree(id: string): Promise<SandboxTree> {
    const sandboxId = this.checkId(id);
    const { root, sandboxIds } = await this.store.tree(sandboxId, this.principal);
    const statuses = await Promise.all(sandboxIds.map((member) => this.get(member)));
    return { root, sandboxes: statuses.filter((status): status is SandboxStatus => status !== undefined) };
  }

  /** Destroys every sandbox of `id`'s family that has not ended, at once; the family afterwards, each outcome named. */
  async destroyTree(id: string, options: { reason?: string; actor?: string } = {}): Promise<SandboxTree> {
    const { root, sandboxes: family } = await this.tree(id);
    const outcomes = await Promise.all(family.map((member) => ('state' in member && isTerminal(member.state) ? member : outcomeOf(member.id, this.destroy(member.id, options), this))));
    return { root, sandboxes: outcomes };
  }

  /**
   * Extends every live sandbox of `id`'s family by `ttlSeconds`: the root first, then its
   * forks, each clamped to the root's new expiry (a fork never outlives its root).
   */
  async extendTree(id: string, change: { ttlSeconds: number; reason?: string; actor?: string }): Promise<SandboxTree> {
    const { root, sandboxes: family } = await this.tree(id);
    const live = (member: FamilyOutcome) => 'state' in member && (member.state === 'READY' || member.state === 'PAUSED');
    const rootMember = family.find((member) => member.id === root);
    const rootOutcome = rootMember !== undefined && live(rootMember) ? await outcomeOf(root, this.extend(root, change), this) : rootMember;
    const forks = await Promise.all(family.filter((member) => member.id !== root).map((member) => (live(member) ? outcomeOf(member.id, this.extend(member.id, change), this) : member)));
    return { root, sandboxes: [...(rootOutcome !== undefined ? [rootOutcome] : []), ...forks] };
  }

  /**
   * Pauses a READY sandbox (DESIGN §15): a snapshot of its state, then its container goes
   * and its host's capacity is freed; resolves PAUSED. Its TTL keeps running ({@link extend}
   * works while paused). A snapshot that cannot be taken leaves it READY, with the reason.
   */
  async pause(id: string, options: { actor?: string } = {}): Promise<SandboxStatus> {
    const sandboxId = this.checkId(id);
    await this.ensureOwn(sandboxId);
    const status = await this.sendUpdate(sandboxId, (handle) => handle.executeUpdate(pauseUpdate, { args: [this.byCaller(options)] }));
    return withTimeLeft(this.seenBy(status));
  }

  /**
   * Resumes a PAUSED sandbox: a new container (maybe on another host, at another endpoint)
   * gets the snapshot back, with the sandbox's own key; resolves READY, with the client
   * settings to use from now on.
   */
  async resume(id: string, options: { actor?: string } = {}): Promise<SandboxStatus> {
    const sandboxId = this.checkId(id);
    await this.ensureOwn(sandboxId);
    const status = await this.sendUpdate(sandboxId, (handle) => handle.executeUpdate(resumeUpdate, { args: [this.byCaller(options)] }));
    return withTimeLeft(await this.withClientConfig(this.seenBy(status)));
  }

  /**
   * Snapshots, newest first: this client's principal's (everyone's for an operator's
   * client, or `filter.principal`'s), of one sandbox with `filter.sandboxId`.
   */
  async snapshots(filter: { sandboxId?: string; principal?: string } = {}): Promise<SnapshotSummary[]> {
    if (this.principal !== undefined && filter.principal !== undefined && filter.principal !== this.principal) return [];
    const principal = this.principal ?? filter.principal;
    const sandboxId = filter.sandboxId === undefined ? undefined : this.checkId(filter.sandboxId);
    return this.store.snapshots({
      ...(principal !== undefined ? { principal } : {}),
      ...(sandboxId !== undefined ? { sandboxId } : {}),
    });
  }

  /**
   * Usage by principal and UTC day (DESIGN §19), newest day first: this client's
   * principal's (everyone's for an operator's client, or `filter.principal`'s), from the UTC
   * day `filter.since` (YYYY-MM-DD) on. Each row: sandboxes that became READY that day, their
   * READY seconds (live ones up to now), CPU seconds, the highest peak memory of any one, and
   * the requests their emulators served (moto counts them; floci and memory add 0).
   */
  async usage(filter: { principal?: string; since?: string } = {}): Promise<UsageRow[]> {
    return this.store.usage(filter);
  }

  /**
   * Events (DESIGN §19), oldest first, with the cursor to read on from (`next`): this
   * client's principal's only when it is bound, everyone's for an operator's client. With
   * `sandboxId`, that sandbox's (NOT_FOUND for another principal's, as for one that never
   * was). With `waitSeconds` and nothing to return yet, the read waits in the store for an
   * event to come, and answers with none when the wait is over.
   *
   * @example
   * const { events, next } = await sandboxes.events({ sandboxId: 'sbx-1', since: '1h' });
   */
  async events(query: EventsQuery = {}): Promise<EventPage> {
    const { since, ...rest } = query;
    const checked = parseOrThrow(eventsQuerySchema, { ...rest, ...(since !== undefined ? { since: since instanceof Date ? since.toISOString() : since } : {}) }, 'events query');
    return this.store.events(checked);
  }

  /**
   * Every event from `since` (by default: from now on), or `after` a cursor, as it comes:
   * each read waits in the store for the next event, so nothing polls. Ends when `signal`
   * aborts (at the latest once the read under way answers, within 20 s).
   *
   * @example
   * for await (const event of sandboxes.followEvents({ sandboxId: 'sbx-1' })) console.log(event.kind, event.reason);
   */
  followEvents(query: FollowQuery = {}): AsyncGenerator<PlaneEvent, void, undefined> {
    return followEvents((page) => this.events(page), query);
  }

  /**
   * Deletes one of this client's principal's snapshots (any snapshot, for an operator's
   * client) and returns what it was; its quota is free again. NOT_FOUND for a snapshot that
   * is not the caller's; INVALID_STATE for the one a PAUSED sandbox resumes from.
   *
   * @example
   * await sandboxes.deleteSnapshot('snap-0123456789abcdef');
   */
  async deleteSnapshot(snapshotId: string, options: { actor?: string } = {}): Promise<SnapshotSummary> {
    const snapshot = parseOrThrow(snapshotIdSchema, snapshotId, 'snapshot id');
    return this.store.deleteSnapshot(snapshot, {
      ...(this.principal !== undefined ? { principal: this.principal } : {}),
      ...this.byCaller(options),
    });
  }

  /**
   * Approves a sandbox AWAITING_APPROVAL and returns the workflow's verdict (the `decide`
   * update, judged exactly like the UI's `approve` signal). `code` is the approver's
   * current TOTP code; without a valid, unused one the approval is refused with
   * APPROVAL_UNVERIFIED (DESIGN §12). An unlisted approver or the requester themself is
   * refused with APPROVER_NOT_ALLOWED; INVALID_STATE when the
   * sandbox is not awaiting approval. The attempt is in the audit trail either way.
   */
  async approve(id: string, approval: { approver: string; reason?: string; code?: string }): Promise<ApprovalOutcome> {
    return this.decide(id, 'approve', approval);
  }

  /** Denies a sandbox AWAITING_APPROVAL (it ends DENIED) and returns the verdict; see {@link approve}. */
  async deny(id: string, denial: { approver: string; reason?: string; code?: string }): Promise<ApprovalOutcome> {
    return this.decide(id, 'deny', denial);
  }

  private checkId(id: string): string {
    return parseOrThrow(sandboxIdSchema, id, 'sandbox id');
  }

  /**
   * What `create` returns: a refusal or failure as an error carrying its code, a wait
   * that ran out as WAIT_TIMEOUT, and a READY sandbox with its client settings.
   */
  private async settle(reported: SandboxStatus, until: AwaitStateTarget, timeoutMs: number): Promise<SandboxStatus> {
    // A refusal's text and its status are shown to the caller: as the caller may see them.
    const status = this.seenBy(reported);
    if (UNSUCCESSFUL_END_STATES.has(status.state)) {
      const reportedCode = status.error?.code ?? status.decision?.code;
      const code = isErrorCode(reportedCode) ? reportedCode : 'INTERNAL';
      throw new SandboxPlaneError(code, `sandbox ${status.id} is ${status.state}: ${status.error?.message ?? status.waitingFor}`, {
        details: { ...status.decision?.details, status },
      });
    }
    if (!hasReached(until, status.state)) {
      throw new SandboxPlaneError('WAIT_TIMEOUT', `sandbox ${status.id} is still ${status.state} after ${Math.round(timeoutMs / 1000)} s: ${status.waitingFor}`, {
        details: { status },
      });
    }
    return withTimeLeft(await this.withClientConfig(status));
  }

  /**
   * Sends an update to the sandbox's current run, again (UPDATE_SENDS times in all) while
   * it answers one of `resendOn`, the codes after which sending again is safe. Any other
   * failure is thrown, explained (INVALID_STATE for a run that has ended).
   */
  private async sendUpdate<Ret>(id: string, send: (handle: WorkflowHandle) => Promise<Ret>, resendOn = CONTINUED_CODES): Promise<Ret> {
    const handle = this.client.workflow.getHandle(workflowIdFor(id));
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await send(handle);
      } catch (err) {
        const mapped = await this.explainClosed(err, id);
        if (!resendOn.has(mapped.code) || attempt >= UPDATE_SENDS) throw mapped;
      }
    }
  }

  /**
   * Sends an idempotent update (awaitState, destroy), again also when the server lost it:
   * under load an update that arrives with a workflow task that then times out is
   * dropped and its caller hears NOT_FOUND although the run goes on. Resolves to
   * `ended` when the run has ended (or the update says it already has).
   */
  private async resendingUpdate<Ret, Args extends [unknown, ...unknown[]]>(id: string, update: UpdateDefinition<Ret, Args>, args: Args): Promise<Ret | 'ended'> {
    try {
      return await this.sendUpdate(id, (handle) => handle.executeUpdate(update, { args }), RESENT_CODES);
    } catch (err) {
      if (err instanceof SandboxPlaneError && err.code === 'INVALID_STATE') return 'ended';
      throw err;
    }
  }

  /** How an ended lifecycle ended: its result, or (for a run that was terminated or failed) its last status. */
  private async finalStatus(id: string): Promise<SandboxStatus> {
    const handle = this.client.workflow.getHandle<(input: LifecycleInput) => Promise<SandboxStatus>>(workflowIdFor(id));
    try {
      return withTimeLeft(this.seenBy(await handle.result()));
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw toSandboxError(err, id);
      return this.status(id);
    }
  }

  private async decide(id: string, decision: 'approve' | 'deny', payload: { approver: string; reason?: string; code?: string }): Promise<ApprovalOutcome> {
    const sandboxId = this.checkId(id);
    await this.ensureOwn(sandboxId);
    const outcome = await this.sendUpdate(sandboxId, (handle) =>
      handle.executeUpdate(decideUpdate, {
        args: [{ decision, approver: payload.approver, reason: payload.reason ?? '', ...(payload.code !== undefined ? { code: payload.code } : {}) }],
      }),
    );
    return { attempt: outcome.attempt, status: withTimeLeft(this.seenBy(outcome.status)) };
  }

  /** An update to a workflow that has ended fails with a server error; say so in taxonomy terms. */
  private async explainClosed(err: unknown, id: string): Promise<SandboxPlaneError> {
    const mapped = toSandboxError(err, id);
    if (mapped.code !== 'INTERNAL' && mapped.code !== 'NOT_FOUND') return mapped;
    const status = await this.get(id);
    if (status !== undefined && isTerminal(status.state)) {
      return new SandboxPlaneError('INVALID_STATE', `sandbox ${id} is ${status.state}`, { details: { status } });
    }
    return mapped;
  }
}
