import { ApiKeyRepository } from './api-key-repository';
import { AuditChain } from './audit-chain';
import { AuditTap } from './audit-tap';
import { EventRepository } from './event-repository';
import { MetricsQueries } from './metrics-queries';
import { openDatabase, schemaVersion, type OpenDatabaseOptions, type SqliteDatabase } from './database';
import { LATEST_SCHEMA_VERSION } from './migrations';
import { HostRepository } from './host-repository';
import { LeakRepository } from './leak-repository';
import { ApproverRepository, PolicyRepository } from './policy-repository';
import { SandboxRepository } from './sandbox-repository';
import { SnapshotRepository } from './snapshot-repository';
import { TargetRepository } from './target-repository';
import { WebhookRepository } from './webhook-repository';
import { UsageRepository } from './usage-repository';

/**
 * The SQLite projection: inventory and audit trail that operators query without
 * reading workflow histories. One writer (the worker that owns the projection queue).
 */
export class Store {
  readonly sandboxes: SandboxRepository;
  readonly policies: PolicyRepository;
  readonly approvers: ApproverRepository;
  readonly leaks: LeakRepository;
  readonly hosts: HostRepository;
  readonly targets: TargetRepository;
  readonly snapshots: SnapshotRepository;
  readonly apiKeys: ApiKeyRepository;
  /** What each sandbox accrued (DESIGN §19). */
  readonly usage: UsageRepository;
  readonly metrics: MetricsQueries;
  readonly events: EventRepository;
  readonly webhooks: WebhookRepository;
  /** Each audit row once it is written and committed (the worker's metrics listen). */
  readonly audits: AuditTap;
  /** The hash chains over the audit tables (DESIGN §19); keyed by the store role at start. */
  readonly auditChain: AuditChain;

  private constructor(
    readonly file: string,
    readonly db: SqliteDatabase,
  ) {
    this.audits = new AuditTap((audit) =>
      'sandboxId' in audit
        ? this.sandboxes.operation(audit.workflowId, audit.operation.step, audit.operation.runId) !== undefined
        : this.targets.hasOperation(audit.workflowId, audit.operation.step, audit.operation.runId),
    );
    this.events = new EventRepository(db);
    this.auditChain = new AuditChain(db);
    this.sandboxes = new SandboxRepository(db, this.audits, this.auditChain, this.events);
    this.policies = new PolicyRepository(db);
    this.approvers = new ApproverRepository(db);
    this.leaks = new LeakRepository(db);
    this.hosts = new HostRepository(db);
    this.targets = new TargetRepository(db, this.audits, this.auditChain, this.events);
    this.snapshots = new SnapshotRepository(db);
    this.apiKeys = new ApiKeyRepository(db);
    this.usage = new UsageRepository(db);
    this.metrics = new MetricsQueries(db);
    this.webhooks = new WebhookRepository(db, this.events);
  }

  /** Opens (creating and migrating unless told otherwise) the store at `file`. */
  static open(file: string, options: OpenDatabaseOptions = {}): Store {
    return new Store(file, openDatabase(file, options));
  }

  get schemaVersion(): number {
    return schemaVersion(this.db);
  }

  get isCurrent(): boolean {
    return this.schemaVersion === LATEST_SCHEMA_VERSION;
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
