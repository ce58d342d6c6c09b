import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { isSandboxPlaneError } from '../../src/domain/errors';
import { LATEST_SCHEMA_VERSION, Store } from '../../src/store';
import { MIGRATIONS } from '../../src/store/migrations';
import { projectionSnapshot } from '../helpers/projection-row';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-store-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
let counter = 0;
const freshFile = () => path.join(dir, `store-${(counter += 1)}`, 'plane.sqlite');

function tables(store: Store): string[] {
  return (store.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as { name: string }[]).map((row) => row.name);
}

function insertSandbox(store: Store, id: string): void {
  const now = new Date().toISOString();
  store.db
    .prepare(
      `INSERT INTO sandboxes (id, workflow_id, principal, capability, adapter, services, state, request_digest, created_at, updated_at)
       VALUES (?, ?, 'agent-1', 'cloud.sandbox', 'memory', '["s3"]', 'PROVISIONING', 'sha256:x', ?, ?)`,
    )
    .run(id, `sandbox-${id}`, now, now);
}

function insertOperation(store: Store, sandboxId: string, step: number): void {
  store.db
    .prepare(
      `INSERT INTO operations (sandbox_id, workflow_id, step, action, actor, effect, at)
       VALUES (?, ?, ?, 'create', 'agent-1', 'allow', ?)`,
    )
    .run(sandboxId, `sandbox-${sandboxId}`, step, new Date().toISOString());
}

describe('Store', () => {
  test('a fresh file is created, migrated to the latest version, in WAL mode with foreign keys on', () => {
    const file = freshFile();
    const store = Store.open(file);
    try {
      assert.ok(fs.existsSync(file));
      assert.equal(store.schemaVersion, LATEST_SCHEMA_VERSION);
      assert.ok(store.isCurrent);
      assert.deepEqual(tables(store), [
        'api_keys',
        'approval_failures',
        'approvers',
        'events',
        'hosts',
        'leaks',
        'operations',
        'policies',
        'sandbox_usage',
        'sandboxes',
        'snapshot_contents',
        'snapshots',
        'target_operations',
        'targets',
        'usage_readings',
        'webhook_deliveries',
        'webhooks',
      ]);
      assert.equal(store.db.pragma('journal_mode', { simple: true }), 'wal');
      assert.equal(store.db.pragma('foreign_keys', { simple: true }), 1);
      assert.ok((store.db.pragma('busy_timeout', { simple: true }) as number) > 0);
    } finally {
      store.close();
    }
  });

  test('opening again is a no-op that keeps the data', () => {
    const file = freshFile();
    const first = Store.open(file);
    insertSandbox(first, 'keep-me');
    first.close();
    const second = Store.open(file);
    try {
      assert.equal(second.schemaVersion, LATEST_SCHEMA_VERSION);
      assert.equal((second.db.prepare('SELECT count(*) AS n FROM sandboxes').get() as { n: number }).n, 1);
    } finally {
      second.close();
    }
  });

  test('a database from a newer version is refused with a clear error and left untouched', () => {
    const file = freshFile();
    Store.open(file).close();
    const raw = new Database(file);
    raw.pragma(`user_version = ${LATEST_SCHEMA_VERSION + 5}`);
    raw.close();
    const before = fs.readFileSync(file);
    assert.throws(
      () => Store.open(file),
      (err: unknown) =>
        isSandboxPlaneError(err) &&
        err.code === 'STORE_VERSION_TOO_NEW' &&
        err.message.includes(`schema version ${LATEST_SCHEMA_VERSION + 5}`) &&
        err.message.includes(`up to ${LATEST_SCHEMA_VERSION}`) &&
        /upgrade/.test(err.hint),
    );
    assert.deepEqual(fs.readFileSync(file), before);
  });

  test('a version-3 database keeps its audit trail through migration 4, still append-only, now keyed by run too', () => {
    const file = freshFile();
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const raw = new Database(file);
    for (const migration of MIGRATIONS.slice(0, 3)) raw.exec(migration);
    raw.pragma('user_version = 3');
    raw.close();
    const v3 = Store.open(file, { migrate: false });
    insertSandbox(v3, 'old');
    insertOperation(v3, 'old', 1);
    insertOperation(v3, 'old', 2);
    v3.close();

    const store = Store.open(file);
    try {
      assert.equal(store.schemaVersion, LATEST_SCHEMA_VERSION);
      assert.deepEqual(
        store.sandboxes.audit('old').map((op) => op.step),
        [1, 2],
        'the old rows are kept, in order',
      );
      assert.throws(() => store.db.prepare("UPDATE operations SET actor = 'x'").run(), /append-only/);
      assert.throws(() => store.db.prepare('DELETE FROM operations').run(), /append-only/);
      const operation = { step: 2, action: 'ready', actor: 'worker', effect: 'ready', reason: null, summary: {} };
      assert.equal(store.sandboxes.appendAudit('old', 'sandbox-old', operation), false, 'the same step of the same run is written once');
      assert.equal(store.sandboxes.appendAudit('old', 'sandbox-old', { ...operation, runId: 'reset-run' }), true, "another run's step 2 is its own row");
    } finally {
      store.close();
    }
  });

  test('foreign keys are enforced: no audit row for a sandbox that does not exist', () => {
    const store = Store.open(freshFile());
    try {
      assert.throws(() => insertOperation(store, 'ghost', 1), /FOREIGN KEY constraint failed/);
      insertSandbox(store, 'real');
      insertOperation(store, 'real', 1);
    } finally {
      store.close();
    }
  });

  test('the audit trail is append-only and keyed by workflow id and step', () => {
    const store = Store.open(freshFile());
    try {
      insertSandbox(store, 'audited');
      insertOperation(store, 'audited', 1);
      assert.throws(() => store.db.prepare("UPDATE operations SET reason = 'rewritten'").run(), /append-only/);
      assert.throws(() => store.db.prepare('DELETE FROM operations').run(), /append-only/);
      assert.throws(() => insertOperation(store, 'audited', 1), /UNIQUE constraint failed/);
    } finally {
      store.close();
    }
  });

  test('policy effects are limited to allow, require_approval and deny', () => {
    const store = Store.open(freshFile());
    try {
      assert.throws(
        () => store.db.prepare("INSERT INTO policies (principal_pattern, capability, effect, created_at) VALUES ('*', 'cloud.sandbox', 'maybe', 'now')").run(),
        /CHECK constraint failed/,
      );
    } finally {
      store.close();
    }
  });

  test('read-only opening without migration reports the version and changes nothing', () => {
    const file = freshFile();
    Store.open(file).close();
    const store = Store.open(file, { readonly: true, migrate: false });
    try {
      assert.equal(store.schemaVersion, LATEST_SCHEMA_VERSION);
    } finally {
      store.close();
    }
  });
});

describe('LeakRepository', () => {
  const finding = (subject: string) => ({ kind: 'orphan_container' as const, subject, sandboxId: null, detail: `container ${subject}` });

  test('a leak no longer seen is gone, one seen again is outstanding again, a removed one is resolved', () => {
    const store = Store.open(freshFile());
    try {
      store.leaks.recordSweep({ outstanding: [finding('a'), finding('b')], removed: [] }, new Date('2026-01-01T00:00:00Z'));
      assert.deepEqual(
        store.leaks.outstanding().map((leak) => leak.subject),
        ['a', 'b'],
      );

      store.leaks.recordSweep({ outstanding: [finding('a')], removed: [finding('c')] }, new Date('2026-01-01T00:05:00Z'));
      assert.deepEqual(
        store.leaks.outstanding().map((leak) => [leak.subject, leak.firstSeen, leak.lastSeen]),
        [['a', '2026-01-01T00:00:00.000Z', '2026-01-01T00:05:00.000Z']],
      );
      const bySubject = new Map(store.leaks.recent().map((leak) => [leak.subject, leak]));
      assert.equal(bySubject.get('b')?.resolution, 'gone');
      assert.equal(bySubject.get('c')?.resolution, 'removed');

      store.leaks.recordSweep({ outstanding: [finding('a'), finding('b')], removed: [] }, new Date('2026-01-01T00:10:00Z'));
      const reopened = store.leaks.outstanding().find((leak) => leak.subject === 'b');
      assert.equal(reopened?.resolution, null);
      assert.equal(reopened?.resolvedAt, null);
      assert.equal(reopened?.firstSeen, '2026-01-01T00:00:00.000Z', 'the first sighting is kept');
    } finally {
      store.close();
    }
  });
});

describe('quota and reconciliation in the projection', () => {
  const op = (step: number, action: string) => ({ step, action, actor: 'test', effect: action, reason: null, summary: {} });

  test('only sandboxes whose workflow may still run count toward quota: not DESTROY_FAILED, not a reconciled row', () => {
    const store = Store.open(freshFile());
    try {
      const states = ['READY', 'AWAITING_APPROVAL', 'DESTROY_FAILED', 'DESTROYED', 'PROVISIONING'] as const;
      states.forEach((state, index) => store.sandboxes.record(projectionSnapshot({ id: `q-${index}`, principal: 'agent-q', state }), op(1, 'requested')));
      assert.equal(store.sandboxes.countLive('agent-q', 'none'), 3);

      assert.equal(store.sandboxes.reconcile('q-0', 'DESTROYED', 'sweep-1', op(1, 'reconciled')), true);
      assert.equal(store.sandboxes.state('q-0'), 'DESTROYED');
      assert.equal(store.sandboxes.countLive('agent-q', 'none'), 2);
      assert.deepEqual(
        store.sandboxes.audit('q-0').map((row) => row.action),
        ['requested', 'reconciled'],
      );
      assert.equal(store.sandboxes.reconcile('q-3', 'DESTROY_FAILED', 'sweep-1', op(2, 'reconciled')), false, 'a closed row stays as it is');
      assert.equal(store.sandboxes.state('q-3'), 'DESTROYED');
    } finally {
      store.close();
    }
  });

  test('the sweep sees DESTROY_FAILED rows with their adapter, and may move them on to DESTROYED once', () => {
    const store = Store.open(freshFile());
    try {
      const states = ['READY', 'DESTROY_FAILED', 'DESTROYED', 'FAILED'] as const;
      states.forEach((state, index) => store.sandboxes.record(projectionSnapshot({ id: `r-${index}`, state, adapter: 'moto' }), op(1, 'requested')));
      assert.deepEqual(store.sandboxes.inventoryRows([]), { 'r-0': { state: 'READY', adapter: 'moto', host: null }, 'r-1': { state: 'DESTROY_FAILED', adapter: 'moto', host: null } });
      assert.deepEqual(Object.keys(store.sandboxes.inventoryRows(['r-2', 'unknown'])).sort(), ['r-0', 'r-1', 'r-2']);

      assert.equal(store.sandboxes.reconcile('r-1', 'DESTROY_FAILED', 'sweep-1', op(1, 'reconciled')), false, 'nothing to write: it stays DESTROY_FAILED');
      assert.equal(store.sandboxes.reconcile('r-1', 'DESTROYED', 'sweep-2', op(1, 'reconciled')), true);
      assert.equal(store.sandboxes.state('r-1'), 'DESTROYED');
      assert.deepEqual(
        store.sandboxes.audit('r-1').map((row) => row.action),
        ['requested', 'reconciled'],
      );
      assert.equal(store.sandboxes.reconcile('r-3', 'DESTROYED', 'sweep-2', op(2, 'reconciled')), false, 'FAILED is final');
    } finally {
      store.close();
    }
  });

  test('recordedRuntime reads the newest audit row that records runtime ids', () => {
    const store = Store.open(freshFile());
    try {
      const snapshot = projectionSnapshot({ id: 'rt-1', adapter: 'moto' });
      assert.equal(store.sandboxes.recordedRuntime('rt-1'), undefined);
      store.sandboxes.record(snapshot, op(1, 'requested'));
      store.sandboxes.record(snapshot, { ...op(2, 'ready'), summary: { endpoint: 'http://x', runtimeIds: ['c-old'] } });
      assert.deepEqual(store.sandboxes.recordedRuntime('rt-1'), { runtimeIds: ['c-old'] });
      store.sandboxes.record(snapshot, { ...op(3, 'restarted'), summary: { runtimeIds: ['c-new'], engineId: 'E1' } });
      store.sandboxes.record(snapshot, { ...op(4, 'destroying'), summary: {} });
      assert.deepEqual(store.sandboxes.recordedRuntime('rt-1'), { runtimeIds: ['c-new'], engineId: 'E1' });
    } finally {
      store.close();
    }
  });
});
