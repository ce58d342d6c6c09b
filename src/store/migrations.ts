/**
 * Schema migrations, applied in order; `PRAGMA user_version` records how many ran.
 * Append new entries, never edit a released one: a database in the field has run it.
 */
export const MIGRATIONS: readonly string[] = Object.freeze([
  // 1: inventory, append-only audit, policy rows, approvers.
  `
  CREATE TABLE sandboxes (
    id              TEXT PRIMARY KEY,
    workflow_id     TEXT NOT NULL UNIQUE,
    principal       TEXT NOT NULL,
    capability      TEXT NOT NULL,
    adapter         TEXT NOT NULL,
    services        TEXT NOT NULL CHECK (json_valid(services)),
    state           TEXT NOT NULL,
    purpose         TEXT,
    labels          TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(labels)),
    request_digest  TEXT NOT NULL,
    endpoint        TEXT,
    expires_at      TEXT,
    last_step       INTEGER NOT NULL DEFAULT 0,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
  ) STRICT;
  CREATE INDEX sandboxes_state ON sandboxes (state);
  CREATE INDEX sandboxes_principal_state ON sandboxes (principal, state);

  CREATE TABLE operations (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    sandbox_id  TEXT NOT NULL REFERENCES sandboxes (id),
    workflow_id TEXT NOT NULL,
    step        INTEGER NOT NULL,
    action      TEXT NOT NULL,
    actor       TEXT NOT NULL,
    effect      TEXT NOT NULL,
    reason      TEXT,
    summary     TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(summary)),
    at          TEXT NOT NULL,
    UNIQUE (workflow_id, step)
  ) STRICT;
  CREATE INDEX operations_sandbox ON operations (sandbox_id, seq);
  CREATE TRIGGER operations_no_update BEFORE UPDATE ON operations
    BEGIN SELECT RAISE(ABORT, 'operations is append-only'); END;
  CREATE TRIGGER operations_no_delete BEFORE DELETE ON operations
    BEGIN SELECT RAISE(ABORT, 'operations is append-only'); END;

  CREATE TABLE policies (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    principal_pattern  TEXT NOT NULL,
    capability         TEXT NOT NULL,
    effect             TEXT NOT NULL CHECK (effect IN ('allow', 'require_approval', 'deny')),
    max_ttl_seconds    INTEGER CHECK (max_ttl_seconds IS NULL OR max_ttl_seconds > 0),
    allowed_services   TEXT CHECK (allowed_services IS NULL OR json_valid(allowed_services)),
    max_concurrent     INTEGER CHECK (max_concurrent IS NULL OR max_concurrent >= 0),
    created_at         TEXT NOT NULL
  ) STRICT;

  CREATE TABLE approvers (
    name      TEXT PRIMARY KEY,
    added_at  TEXT NOT NULL
  ) STRICT;
  `,
  // 2: leaks found by the cleanup sweep, one row per kind and subject.
  `
  CREATE TABLE leaks (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    kind        TEXT NOT NULL CHECK (kind IN ('orphan_container', 'stranded_sandbox', 'live_mismatch')),
    subject     TEXT NOT NULL,
    sandbox_id  TEXT,
    detail      TEXT NOT NULL,
    first_seen  TEXT NOT NULL,
    last_seen   TEXT NOT NULL,
    resolution  TEXT CHECK (resolution IS NULL OR resolution IN ('removed', 'gone')),
    resolved_at TEXT,
    UNIQUE (kind, subject)
  ) STRICT;
  CREATE INDEX leaks_outstanding ON leaks (resolution, last_seen);
  `,
  // 3: the workflow run that owns a sandbox row: an id reused after its history is gone
  // must not inherit (or overwrite) the earlier sandbox's record.
  `
  ALTER TABLE sandboxes ADD COLUMN run_id TEXT;
  `,
  // 4: audit rows keyed by the workflow run that wrote them too: a reset run numbers its
  // steps again from the reset point, and its rows must not be taken for the old run's
  // (and dropped as already written). The row remembers which run wrote it last.
  `
  CREATE TABLE operations_v4 (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    sandbox_id  TEXT NOT NULL REFERENCES sandboxes (id),
    workflow_id TEXT NOT NULL,
    run_id      TEXT NOT NULL DEFAULT '',
    step        INTEGER NOT NULL,
    action      TEXT NOT NULL,
    actor       TEXT NOT NULL,
    effect      TEXT NOT NULL,
    reason      TEXT,
    summary     TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(summary)),
    at          TEXT NOT NULL,
    UNIQUE (workflow_id, run_id, step)
  ) STRICT;
  INSERT INTO operations_v4 (seq, sandbox_id, workflow_id, run_id, step, action, actor, effect, reason, summary, at)
    SELECT seq, sandbox_id, workflow_id, '', step, action, actor, effect, reason, summary, at FROM operations;
  DROP TABLE operations;
  ALTER TABLE operations_v4 RENAME TO operations;
  CREATE INDEX operations_sandbox ON operations (sandbox_id, seq);
  CREATE TRIGGER operations_no_update BEFORE UPDATE ON operations
    BEGIN SELECT RAISE(ABORT, 'operations is append-only'); END;
  CREATE TRIGGER operations_no_delete BEFORE DELETE ON operations
    BEGIN SELECT RAISE(ABORT, 'operations is append-only'); END;
  ALTER TABLE sandboxes ADD COLUMN last_run_id TEXT;
  `,
  // 5: docker hosts (the registry placement chooses from), the host each sandbox was
  // placed on, and a leak kind for sandboxes that wait on a host no worker serves.
  `
  CREATE TABLE hosts (
    host_id       TEXT PRIMARY KEY,
    task_queue    TEXT NOT NULL,
    adapters      TEXT NOT NULL CHECK (json_valid(adapters)),
    capacity      INTEGER NOT NULL CHECK (capacity > 0),
    engine_id     TEXT,
    identity      TEXT NOT NULL,
    registered_at TEXT NOT NULL,
    updated_at    TEXT NOT NULL
  ) STRICT;
  ALTER TABLE sandboxes ADD COLUMN host TEXT;
  CREATE INDEX sandboxes_host_state ON sandboxes (host, state);

  CREATE TABLE leaks_v5 (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    kind        TEXT NOT NULL CHECK (kind IN ('orphan_container', 'stranded_sandbox', 'live_mismatch', 'host_unreachable')),
    subject     TEXT NOT NULL,
    sandbox_id  TEXT,
    detail      TEXT NOT NULL,
    first_seen  TEXT NOT NULL,
    last_seen   TEXT NOT NULL,
    resolution  TEXT CHECK (resolution IS NULL OR resolution IN ('removed', 'gone')),
    resolved_at TEXT,
    UNIQUE (kind, subject)
  ) STRICT;
  INSERT INTO leaks_v5 SELECT * FROM leaks;
  DROP TABLE leaks;
  ALTER TABLE leaks_v5 RENAME TO leaks;
  CREATE INDEX leaks_outstanding ON leaks (resolution, last_seen);
  `,
  // 6: the warm pools each docker host keeps (adapter -> idle containers); they hold capacity.
  `
  ALTER TABLE hosts ADD COLUMN warm_pool TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(warm_pool));
  `,
  // 7: approvals carry proof (DESIGN §12): each approver's TOTP secret, sealed with the
  // store's key, and the last code step used (each code counts once) with the approval that used it.
  `
  ALTER TABLE approvers ADD COLUMN totp_secret TEXT;
  ALTER TABLE approvers ADD COLUMN last_code_step INTEGER;
  ALTER TABLE approvers ADD COLUMN last_code_use TEXT;
  ALTER TABLE approvers ADD COLUMN enrolled_for TEXT;
  `,
  // 8: operator-registered targets of promotion (DESIGN §14): a profile's name, never a
  // secret; and the append-only trail of IaC runs against each, with no foreign key so a
  // removed target keeps its trail. The partial index serves the promotion gate's search
  // for a verified sandbox apply (SandboxRepository.findIacProof).
  `
  CREATE TABLE targets (
    name        TEXT PRIMARY KEY,
    environment TEXT NOT NULL CHECK (environment IN ('staging', 'production')),
    region      TEXT NOT NULL,
    endpoint    TEXT,
    profile     TEXT,
    added_at    TEXT NOT NULL
  ) STRICT;

  CREATE TABLE target_operations (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    target      TEXT NOT NULL,
    workflow_id TEXT NOT NULL,
    run_id      TEXT NOT NULL DEFAULT '',
    step        INTEGER NOT NULL,
    action      TEXT NOT NULL,
    actor       TEXT NOT NULL,
    effect      TEXT NOT NULL,
    reason      TEXT,
    summary     TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(summary)),
    at          TEXT NOT NULL,
    UNIQUE (workflow_id, run_id, step)
  ) STRICT;
  CREATE INDEX target_operations_target ON target_operations (target, seq);
  CREATE TRIGGER target_operations_no_update BEFORE UPDATE ON target_operations
    BEGIN SELECT RAISE(ABORT, 'target_operations is append-only'); END;
  CREATE TRIGGER target_operations_no_delete BEFORE DELETE ON target_operations
    BEGIN SELECT RAISE(ABORT, 'target_operations is append-only'); END;

  CREATE INDEX operations_iac_applied ON operations (at) WHERE action = 'iac_applied';
  `,
  // 9: snapshots (DESIGN §15): content kept once per digest (gzip, sealed with the store's
  // key: it holds what derives the sandbox's key), and each snapshot a row naming its
  // sandbox, principal and content. The sandbox's services say which sandboxes its state
  // may go into.
  `
  CREATE TABLE snapshot_contents (
    digest  TEXT PRIMARY KEY,
    sealed  TEXT NOT NULL,
    bytes   INTEGER NOT NULL
  ) STRICT;

  CREATE TABLE snapshots (
    snapshot_id TEXT PRIMARY KEY,
    sandbox_id  TEXT NOT NULL,
    principal   TEXT NOT NULL,
    adapter     TEXT NOT NULL,
    services    TEXT NOT NULL CHECK (json_valid(services)),
    digest      TEXT NOT NULL REFERENCES snapshot_contents (digest),
    created_at  TEXT NOT NULL
  ) STRICT;
  CREATE INDEX snapshots_principal ON snapshots (principal, created_at);
  `,
  // 10: each docker host's memory as its worker measured it (DESIGN §12): the engine's,
  // the share the plane's containers may take, and what one sandbox of each adapter holds.
  `
  ALTER TABLE hosts ADD COLUMN memory TEXT CHECK (memory IS NULL OR json_valid(memory));
  `,
  // 11: the gateway's API keys (DESIGN §18), each stored as a slow hash (scrypt) of its
  // secret, never the key; and wrong approval codes per name (listed or not, so a lock-out
  // cannot tell which names are approvers).
  `
  CREATE TABLE api_keys (
    key_id          TEXT PRIMARY KEY,
    principal       TEXT NOT NULL,
    secret_hash     TEXT NOT NULL,
    rate_per_minute INTEGER NOT NULL CHECK (rate_per_minute > 0),
    created_at      TEXT NOT NULL,
    revoked_at      TEXT
  ) STRICT;
  CREATE INDEX api_keys_principal ON api_keys (principal);

  CREATE TABLE approval_failures (
    name          TEXT PRIMARY KEY,
    failures      INTEGER NOT NULL,
    lockouts      INTEGER NOT NULL,
    locked_until  TEXT,
    last_use      TEXT
  ) STRICT;
  `,
  // 12: how many requests each gateway key may have in flight at once (DESIGN §18).
  `
  ALTER TABLE api_keys ADD COLUMN max_in_flight INTEGER NOT NULL DEFAULT 16 CHECK (max_in_flight > 0);
  `,
  // 13: a fork's family (DESIGN §15): the sandbox its snapshot was taken of, and the first
  // of its tree, written once at screening; `tree` lists a root's sandboxes by it.
  `
  ALTER TABLE sandboxes ADD COLUMN parent TEXT;
  ALTER TABLE sandboxes ADD COLUMN root TEXT;
  CREATE INDEX sandboxes_root ON sandboxes (root) WHERE root IS NOT NULL;
  `,
  // 14: events (DESIGN §19), one per audit row that records a change, written with the row
  // in its transaction (so in one order across sandboxes and targets); the operators'
  // webhook endpoints (the signing secret sealed with the store's key) and what each
  // delivery of an event to one of them came to.
  `
  CREATE TABLE events (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id    TEXT NOT NULL UNIQUE,
    time        TEXT NOT NULL,
    kind        TEXT NOT NULL,
    sandbox_id  TEXT,
    run_id      TEXT,
    principal   TEXT NOT NULL,
    actor       TEXT NOT NULL,
    reason      TEXT NOT NULL,
    from_state  TEXT,
    to_state    TEXT,
    detail      TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(detail))
  ) STRICT;
  CREATE INDEX events_sandbox ON events (sandbox_id, seq);
  CREATE INDEX events_principal ON events (principal, seq);
  CREATE INDEX events_time ON events (time);

  CREATE TABLE webhooks (
    webhook_id  TEXT PRIMARY KEY,
    url         TEXT NOT NULL,
    kinds       TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(kinds)),
    principal   TEXT,
    secret      TEXT NOT NULL,
    after_seq   INTEGER NOT NULL,
    created_at  TEXT NOT NULL,
    removed_at  TEXT
  ) STRICT;

  CREATE TABLE webhook_deliveries (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook_id  TEXT NOT NULL,
    event_id    TEXT NOT NULL,
    event_seq   INTEGER NOT NULL,
    attempt     INTEGER NOT NULL,
    outcome     TEXT NOT NULL CHECK (outcome IN ('delivered', 'failed', 'gave_up')),
    status      INTEGER,
    error       TEXT,
    duration_ms INTEGER NOT NULL,
    at          TEXT NOT NULL
  ) STRICT;
  CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, id);
  `,
  // 15: usage (DESIGN §19): one row per sandbox that became READY, counted to the UTC day it
  // first did; the last read of each of its containers, so a later read adds only what grew;
  // and a policy row's cap on sandbox-hours per principal per day.
  `
  CREATE TABLE sandbox_usage (
    sandbox_id        TEXT PRIMARY KEY,
    principal         TEXT NOT NULL,
    adapter           TEXT NOT NULL,
    day               TEXT NOT NULL,
    started_at        TEXT NOT NULL,
    ended_at          TEXT,
    live_ms           INTEGER NOT NULL DEFAULT 0 CHECK (live_ms >= 0),
    live_since_ms     INTEGER,
    cpu_ns            INTEGER NOT NULL DEFAULT 0 CHECK (cpu_ns >= 0),
    peak_memory_bytes INTEGER NOT NULL DEFAULT 0 CHECK (peak_memory_bytes >= 0),
    requests          INTEGER CHECK (requests IS NULL OR requests >= 0),
    updated_at        TEXT NOT NULL
  ) STRICT;
  CREATE INDEX sandbox_usage_principal_day ON sandbox_usage (principal, day);
  CREATE INDEX sandbox_usage_day ON sandbox_usage (day);

  CREATE TABLE usage_readings (
    sandbox_id    TEXT NOT NULL,
    container_id  TEXT NOT NULL,
    cpu_ns        INTEGER NOT NULL,
    requests      INTEGER,
    read_at_ms    INTEGER NOT NULL,
    PRIMARY KEY (sandbox_id, container_id)
  ) STRICT;

  ALTER TABLE policies ADD COLUMN max_sandbox_hours_per_day REAL CHECK (max_sandbox_hours_per_day IS NULL OR max_sandbox_hours_per_day > 0);
  `,
  // 16: the audit trail is tamper-evident (DESIGN §19): each row of operations and of
  // target_operations (one chain per table) carries the hash of the row before it and its own,
  // an HMAC under a key outside this file (store/audit-chain.ts). Rows are chained as the store
  // inserts them; rows already here are chained once when the store role starts with its key
  // (SQL cannot compute an HMAC). The tables stay append-only: the one UPDATE allowed fills a
  // row's missing hashes and changes nothing else.
  `
  ALTER TABLE operations ADD COLUMN prev_hash TEXT;
  ALTER TABLE operations ADD COLUMN row_hash TEXT;
  ALTER TABLE target_operations ADD COLUMN prev_hash TEXT;
  ALTER TABLE target_operations ADD COLUMN row_hash TEXT;
  DROP TRIGGER operations_no_update;
  CREATE TRIGGER operations_no_update BEFORE UPDATE ON operations
    WHEN NOT (OLD.row_hash IS NULL AND OLD.prev_hash IS NULL AND NEW.row_hash IS NOT NULL AND NEW.prev_hash IS NOT NULL
      AND NEW.seq IS OLD.seq AND NEW.sandbox_id IS OLD.sandbox_id AND NEW.workflow_id IS OLD.workflow_id AND NEW.run_id IS OLD.run_id AND NEW.step IS OLD.step AND NEW.action IS OLD.action AND NEW.actor IS OLD.actor AND NEW.effect IS OLD.effect AND NEW.reason IS OLD.reason AND NEW.summary IS OLD.summary AND NEW.at IS OLD.at)
    BEGIN SELECT RAISE(ABORT, 'operations is append-only'); END;
  DROP TRIGGER target_operations_no_update;
  CREATE TRIGGER target_operations_no_update BEFORE UPDATE ON target_operations
    WHEN NOT (OLD.row_hash IS NULL AND OLD.prev_hash IS NULL AND NEW.row_hash IS NOT NULL AND NEW.prev_hash IS NOT NULL
      AND NEW.seq IS OLD.seq AND NEW.target IS OLD.target AND NEW.workflow_id IS OLD.workflow_id AND NEW.run_id IS OLD.run_id AND NEW.step IS OLD.step AND NEW.action IS OLD.action AND NEW.actor IS OLD.actor AND NEW.effect IS OLD.effect AND NEW.reason IS OLD.reason AND NEW.summary IS OLD.summary AND NEW.at IS OLD.at)
    BEGIN SELECT RAISE(ABORT, 'target_operations is append-only'); END;
  `,
]);

export const LATEST_SCHEMA_VERSION = MIGRATIONS.length;

/** The version the gateway's key table has all it reads (migration 12, its in-flight bound): the gateway reads files from it on. */
export const API_KEYS_SCHEMA_VERSION = 12;
