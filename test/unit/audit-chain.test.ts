import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { AUDIT_CHAIN_KEY_PURPOSE, SecretBox } from '../../src/crypto/secret-box';
import { parseSince, type AuditRecord } from '../../src/domain/audit-evidence';
import { isSandboxPlaneError } from '../../src/domain/errors';
import { OCSF_SCHEMA_VERSION, toOcsfApiActivity } from '../../src/domain/ocsf-api-activity';
import { Store } from '../../src/store';
import { auditRowHash, genesisHash, type ChainRow } from '../../src/store/audit-chain';
import { MIGRATIONS } from '../../src/store/migrations';
import type { OperationRecord } from '../../src/store';
import { projectionSnapshot } from '../helpers/projection-row';
import { assertOcsfApiActivity } from '../helpers/ocsf';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-audit-chain-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
let counter = 0;
const freshFile = () => path.join(dir, `store-${(counter += 1)}`, 'plane.sqlite');

const KEY = randomBytes(32);

function operation(step: number, overrides: Partial<OperationRecord> = {}): OperationRecord {
  return { runId: 'run-1', step, action: step === 1 ? 'requested' : 'ready', actor: 'agent-1', effect: 'allow', reason: null, summary: { step }, ...overrides };
}

/** A keyed store with `rows` audit rows of sandbox `sbx-a` (and one target row when asked). */
function keyedStore(rows: number, options: { target?: boolean } = {}): Store {
  const store = Store.open(freshFile());
  store.auditChain.useKey(KEY);
  for (let step = 1; step <= rows; step += 1) store.sandboxes.record(projectionSnapshot({ id: 'sbx-a', runId: 'run-1' }), operation(step));
  if (options.target === true) store.targets.appendOperation('staging-eu', 'iac-run-1', operation(1, { action: 'iac_planned' }));
  return store;
}

/** What a tamperer with the file (and SQLite) does first: the append-only triggers go. */
function dropTriggers(store: Store): void {
  store.db.exec('DROP TRIGGER operations_no_update; DROP TRIGGER operations_no_delete');
}

function seqs(store: Store): number[] {
  return (store.db.prepare('SELECT seq FROM operations ORDER BY seq').all() as { seq: number }[]).map((row) => row.seq);
}

function withStore(store: Store, work: (store: Store) => void): void {
  try {
    work(store);
  } finally {
    store.close();
  }
}

describe('the audit chain (DESIGN §19)', () => {
  test('rows the store writes are chained as they are written, and verify', () => {
    withStore(keyedStore(4, { target: true }), (store) => {
      const result = store.auditChain.verify();
      assert.equal(result.ok, true);
      assert.equal(result.rows, 5);
      assert.equal(result.firstBad, null);
      const [operations, targets] = result.streams;
      assert.equal(operations?.rows, 4);
      assert.equal(targets?.rows, 1);
      const rows = store.db.prepare('SELECT prev_hash, row_hash FROM operations ORDER BY seq').all() as { prev_hash: string; row_hash: string }[];
      assert.equal(rows[0]?.prev_hash, genesisHash(KEY, 'operations'), 'the first row links to a keyed start, not a run of zeros');
      assert.doesNotMatch(rows[0]?.prev_hash ?? '', /0{12}/);
      for (let i = 1; i < rows.length; i += 1) assert.equal(rows[i]?.prev_hash, rows[i - 1]?.row_hash);
      assert.equal(operations?.head, rows[3]?.row_hash);
    });
  });

  test('a retried write finds its row and chains nothing twice', () => {
    withStore(keyedStore(2), (store) => {
      const before = store.db.prepare('SELECT seq, row_hash FROM operations ORDER BY seq').all();
      assert.equal(store.sandboxes.record(projectionSnapshot({ id: 'sbx-a', runId: 'run-1' }), operation(2)), false);
      assert.equal(store.sandboxes.appendAudit('sbx-a', 'sandbox-sbx-a', operation(2)), false);
      assert.equal(store.targets.appendOperation('staging-eu', 'iac-run-1', operation(1)), true);
      assert.equal(store.targets.appendOperation('staging-eu', 'iac-run-1', operation(1)), false);
      assert.deepEqual(store.db.prepare('SELECT seq, row_hash FROM operations ORDER BY seq').all(), before);
      assert.equal(store.auditChain.verify().ok, true);
    });
  });

  test('a row rolled back with its transaction leaves the chain whole', () => {
    withStore(keyedStore(2), (store) => {
      assert.throws(() =>
        store.sandboxes.atomically(() => {
          store.sandboxes.appendAudit('sbx-a', 'sandbox-sbx-a', operation(3));
          throw new Error('rolled back');
        }),
      );
      store.sandboxes.appendAudit('sbx-a', 'sandbox-sbx-a', operation(4));
      assert.equal(store.auditChain.verify().ok, true);
    });
  });

  test('an edited row is found, by its seq', () => {
    withStore(keyedStore(4), (store) => {
      dropTriggers(store);
      const [, second] = seqs(store);
      store.db.prepare("UPDATE operations SET reason = 'nothing to see' WHERE seq = ?").run(second);
      const result = store.auditChain.verify();
      assert.equal(result.ok, false);
      assert.deepEqual({ stream: result.firstBad?.stream, seq: result.firstBad?.seq, problem: result.firstBad?.problem }, { stream: 'operations', seq: second, problem: 'edited' });
      assert.equal(result.rows, 4);
    });
  });

  test('a removed row is found at the row after it', () => {
    withStore(keyedStore(4), (store) => {
      dropTriggers(store);
      const [, second, third] = seqs(store);
      store.db.prepare('DELETE FROM operations WHERE seq = ?').run(second);
      const result = store.auditChain.verify();
      assert.equal(result.ok, false);
      assert.equal(result.firstBad?.seq, third);
      assert.equal(result.firstBad?.problem, 'removed_or_reordered');
    });
  });

  test('two rows swapped are found', () => {
    withStore(keyedStore(4), (store) => {
      dropTriggers(store);
      const [, second, third] = seqs(store) as number[];
      store.db.transaction(() => {
        store.db.prepare('UPDATE operations SET seq = -1 WHERE seq = ?').run(second);
        store.db.prepare('UPDATE operations SET seq = ? WHERE seq = ?').run(second, third);
        store.db.prepare('UPDATE operations SET seq = ? WHERE seq = -1').run(third);
      })();
      const result = store.auditChain.verify();
      assert.equal(result.ok, false);
      assert.equal(result.firstBad?.seq, second);
      assert.equal(result.firstBad?.problem, 'removed_or_reordered');
    });
  });

  test('a whole chain rewritten with another key is found at its first row', () => {
    withStore(keyedStore(3), (store) => {
      dropTriggers(store);
      const forger = randomBytes(32);
      // The forger copies the first row's link from the file; every hash after it is theirs.
      let prev: string | undefined;
      const rows = store.db
        .prepare('SELECT seq, sandbox_id AS subject, workflow_id, run_id, step, action, actor, effect, reason, summary, at, prev_hash, row_hash FROM operations ORDER BY seq')
        .all() as ChainRow[];
      for (const row of rows) {
        prev ??= row.prev_hash as string;
        const edited = { ...row, reason: 'forged' };
        const hash = auditRowHash(forger, 'operations', prev, edited);
        store.db.prepare('UPDATE operations SET reason = ?, prev_hash = ?, row_hash = ? WHERE seq = ?').run('forged', prev, hash, row.seq);
        prev = hash;
      }
      const result = store.auditChain.verify();
      assert.equal(result.ok, false);
      assert.equal(result.firstBad?.seq, rows[0]?.seq);
      assert.equal(result.firstBad?.problem, 'edited');
    });
  });

  test('a row written past the store (no hash) is named unchained, and the store does not chain it later', () => {
    withStore(keyedStore(2), (store) => {
      store.db
        .prepare("INSERT INTO operations (sandbox_id, workflow_id, run_id, step, action, actor, effect, at) VALUES ('sbx-a', 'sandbox-sbx-a', 'run-1', 9, 'ready', 'x', 'allow', 'now')")
        .run();
      assert.equal(store.auditChain.useKey(KEY), 0);
      const result = store.auditChain.verify();
      assert.equal(result.firstBad?.problem, 'unchained');
      assert.equal(result.firstBad?.seq, seqs(store)[2]);
    });
  });

  test('the tables stay append-only: only a missing hash may be filled, and nothing else with it', () => {
    withStore(keyedStore(1), (store) => {
      assert.throws(() => store.db.prepare("UPDATE operations SET row_hash = 'x'").run(), /append-only/);
      assert.throws(() => store.db.prepare("UPDATE operations SET reason = 'x'").run(), /append-only/);
      assert.throws(() => store.db.prepare('DELETE FROM operations').run(), /append-only/);
      store.db.prepare("INSERT INTO operations (sandbox_id, workflow_id, step, action, actor, effect, at) VALUES ('sbx-a', 'w', 1, 'a', 'b', 'c', 'now')").run();
      assert.throws(() => store.db.prepare("UPDATE operations SET prev_hash = 'p', row_hash = 'h', actor = 'someone else' WHERE row_hash IS NULL").run(), /append-only/);
      assert.equal(store.db.prepare("UPDATE operations SET prev_hash = 'p', row_hash = 'h' WHERE row_hash IS NULL").run().changes, 1);
      store.targets.appendOperation('staging-eu', 'iac-run-1', operation(1));
      assert.throws(() => store.db.prepare("UPDATE target_operations SET reason = 'x'").run(), /append-only/);
    });
  });

  test('rows of an earlier build are chained once, when the store takes its key, and new rows chain on', () => {
    const file = freshFile();
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const raw = new Database(file);
    for (const migration of MIGRATIONS.slice(0, 13)) raw.exec(migration);
    raw.pragma('user_version = 13');
    raw.close();
    const old = Store.open(file, { migrate: false });
    old.db.exec("INSERT INTO targets (name, environment, region, added_at) VALUES ('staging-eu', 'staging', 'eu-west-2', 'now')");
    old.close();
    // An unmigrated store cannot write through the current repositories (no hash columns): write as the old build did.
    const v13 = new Database(file);
    const now = new Date().toISOString();
    v13
      .prepare(
        `INSERT INTO sandboxes (id, workflow_id, principal, capability, adapter, services, state, request_digest, created_at, updated_at)
         VALUES ('sbx-old', 'sandbox-sbx-old', 'agent-1', 'cloud.sandbox', 'memory', '["s3"]', 'READY', 'sha256:x', ?, ?)`,
      )
      .run(now, now);
    for (let step = 1; step <= 3; step += 1) {
      v13
        .prepare("INSERT INTO operations (sandbox_id, workflow_id, run_id, step, action, actor, effect, at) VALUES ('sbx-old', 'sandbox-sbx-old', 'r', ?, 'ready', 'a', 'allow', ?)")
        .run(step, now);
    }
    v13
      .prepare("INSERT INTO target_operations (target, workflow_id, run_id, step, action, actor, effect, at) VALUES ('staging-eu', 'iac-x', 'r', 1, 'iac_planned', 'a', 'allow', ?)")
      .run(now);
    v13.close();

    withStore(Store.open(file), (store) => {
      assert.equal(store.schemaVersion, MIGRATIONS.length);
      assert.equal(store.auditChain.useKey(KEY), 4);
      assert.equal(store.auditChain.useKey(KEY), 0, 'chained once');
      store.sandboxes.appendAudit('sbx-old', 'sandbox-sbx-old', operation(4));
      const result = store.auditChain.verify();
      assert.deepEqual({ ok: result.ok, rows: result.rows }, { ok: true, rows: 5 });
      assert.throws(() => store.db.prepare("UPDATE operations SET actor = 'x'").run(), /append-only/);
    });
  });

  test('a store without its key writes rows unchained, and verify needs the key', () => {
    withStore(Store.open(freshFile()), (store) => {
      store.sandboxes.record(projectionSnapshot({ id: 'sbx-b' }), operation(1));
      assert.equal(store.auditChain.keyed, false);
      assert.throws(
        () => store.auditChain.verify(),
        (err: unknown) => isSandboxPlaneError(err) && err.code === 'INVALID_STATE',
      );
      // The store role takes its key at start: the never-chained stream is chained then.
      assert.equal(store.auditChain.useKey(KEY), 1);
      assert.equal(store.auditChain.verify().ok, true);
    });
  });

  test("the chain key is the store key file's, derived for this purpose alone", () => {
    const file = path.join(dir, 'store.key');
    const box = SecretBox.fromKeyFile(file);
    const key = box.deriveKey(AUDIT_CHAIN_KEY_PURPOSE);
    assert.equal(key.length, 32);
    assert.deepEqual(SecretBox.fromKeyFile(file).deriveKey(AUDIT_CHAIN_KEY_PURPOSE), key);
    assert.notDeepEqual(box.deriveKey('something else'), key);
    assert.notDeepEqual(key, Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64'));
  });
});

describe('audit export', () => {
  test('pages through every stream in order, by a cursor, and --since filters by time', () => {
    withStore(keyedStore(5, { target: true }), (store) => {
      const seen: AuditRecord[] = [];
      let after = null;
      let pages = 0;
      for (;;) {
        const page = store.auditChain.exportPage({ after, limit: 2 });
        seen.push(...page.records);
        pages += 1;
        if (page.next === null) break;
        after = page.next;
      }
      assert.equal(seen.length, 6);
      assert.ok(pages >= 3);
      assert.deepEqual(
        seen.map((record) => record.stream),
        ['operations', 'operations', 'operations', 'operations', 'operations', 'target_operations'],
      );
      assert.equal(seen[5]?.target, 'staging-eu');
      assert.ok(seen.every((record) => record.hash !== null && record.prevHash !== null));
      assert.equal(store.auditChain.exportPage({ after: null, since: new Date(Date.now() + 60_000).toISOString(), limit: 500 }).records.length, 0);
    });
  });

  test('OCSF records carry the attributes API Activity (6003) requires', () => {
    withStore(keyedStore(2, { target: true }), (store) => {
      const { records } = store.auditChain.exportPage({ after: null, limit: 500 });
      for (const record of records) {
        const event = toOcsfApiActivity(record, { version: '1.2.3' });
        assertOcsfApiActivity(event);
        assert.equal((event.metadata as { version: string }).version, OCSF_SCHEMA_VERSION);
      }
      const ready = toOcsfApiActivity(records[1] as AuditRecord, { version: '1.2.3' });
      assert.deepEqual(ready.resources, [{ uid: 'sbx-a', type: 'sandbox' }]);
      assert.equal(ready.time, Date.parse((records[1] as AuditRecord).at));
    });
  });

  test('--since takes an ISO time or a duration back from now, and names what it takes otherwise', () => {
    const now = new Date('2025-02-01T12:00:00Z');
    assert.equal(parseSince('2h', now), '2025-02-01T10:00:00.000Z');
    assert.equal(parseSince('7d', now), '2025-01-25T12:00:00.000Z');
    assert.equal(parseSince('2025-01-31T08:00:00+01:00', now), '2025-01-31T07:00:00.000Z');
    assert.equal(parseSince('2025-01-31', now), '2025-01-31T00:00:00.000Z');
    assert.throws(
      () => parseSince('yesterday', now),
      (err: unknown) => isSandboxPlaneError(err) && err.code === 'INVALID_INPUT',
    );
  });
});
