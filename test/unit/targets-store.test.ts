/**
 * Targets in the store (DESIGN §14): the repository, its append-only audit trail, the
 * store role's commands, the promotion gate's search for a verified sandbox apply, and
 * migration 8 over a store of the previous version. A real SQLite file; no servers.
 */
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/config';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { ApplicationFailure } from '@temporalio/common';
import { createStoreCommandActivities } from '../../src/activities/store-command-activities';
import { SecretBox } from '../../src/crypto/secret-box';
import { isSandboxPlaneError } from '../../src/domain/errors';
import type { OperationRecord } from '../../src/domain/lifecycle-record';
import type { TargetAuditEntry, TargetRecord } from '../../src/domain/targets';
import { LATEST_SCHEMA_VERSION, MIGRATIONS, Store } from '../../src/store';
import type { HostDirectory } from '../../src/store/host-directory';
import { projectionSnapshot } from '../helpers/projection-row';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-targets-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
let counter = 0;
const freshFile = () => path.join(dir, `store-${(counter += 1)}`, 'plane.sqlite');

/** Opens a fresh store for one test and closes it after. */
function withStore(work: (store: Store) => void | Promise<void>): () => Promise<void> {
  return async () => {
    const store = Store.open(freshFile());
    try {
      await work(store);
    } finally {
      store.close();
    }
  };
}

function assertPlaneError(code: string, pattern?: RegExp) {
  return (err: unknown) => {
    assert.ok(isSandboxPlaneError(err), `a SandboxPlaneError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    if (pattern !== undefined) assert.match(`${err.message} ${err.hint}`, pattern);
    return true;
  };
}

const step = (n: number, overrides: Partial<OperationRecord> = {}): OperationRecord => ({
  runId: 'run-1',
  step: n,
  action: n === 1 ? 'iac_planned' : 'iac_applied',
  actor: 'plane',
  effect: n === 1 ? 'planned' : 'applied',
  reason: null,
  summary: { stack: 'web' },
  ...overrides,
});

describe('TargetRepository', () => {
  test(
    'add, get, list and remove; a target added twice is refused and kept as it was',
    withStore((store) => {
      const at = new Date('2026-03-01T10:00:00.000Z');
      const staging = store.targets.add({ name: 'staging-eu', environment: 'staging', region: 'eu-west-2', profile: 'plane-staging' }, at);
      assert.deepEqual(staging, { name: 'staging-eu', environment: 'staging', region: 'eu-west-2', endpoint: null, profile: 'plane-staging', addedAt: at.toISOString() });
      const prod = store.targets.add({ name: 'prod', environment: 'production', region: 'us-east-1', endpoint: 'http://127.0.0.1:5000', profile: null });
      assert.deepEqual(
        store.targets.list().map((t) => t.name),
        ['prod', 'staging-eu'],
        'by name',
      );
      assert.deepEqual(store.targets.get('prod'), prod);
      assert.equal(store.targets.get('nosuch'), undefined);

      assert.throws(
        () => store.targets.add({ name: 'staging-eu', environment: 'production', region: 'us-east-1' }),
        assertPlaneError('INVALID_STATE', /registered already.*targets remove staging-eu/s),
      );
      assert.deepEqual(store.targets.get('staging-eu'), staging, 'nothing is overwritten');

      assert.deepEqual(store.targets.remove('staging-eu'), staging);
      assert.deepEqual(store.targets.list(), [prod]);
      assert.throws(() => store.targets.remove('staging-eu'), assertPlaneError('NOT_FOUND', /sandboxctl targets list/));
      const again = store.targets.add({ name: 'staging-eu', environment: 'production', region: 'us-east-1' });
      assert.equal(again.environment, 'production', 'once removed, the name can be registered again');
    }),
  );

  test(
    'the environment is checked by the table too',
    withStore((store) => {
      assert.throws(() => store.db.prepare("INSERT INTO targets (name, environment, region, added_at) VALUES ('x', 'dev', 'us-east-1', 'now')").run(), /CHECK constraint failed/);
    }),
  );

  test(
    "the audit trail: a step written twice is one row, another run's step is its own, rows are append-only and outlive the target",
    withStore((store) => {
      store.targets.add({ name: 'staging-eu', environment: 'staging', region: 'eu-west-2' });
      assert.equal(store.targets.appendOperation('staging-eu', 'iac-r1', step(1)), true);
      assert.equal(store.targets.appendOperation('staging-eu', 'iac-r1', step(1, { reason: 'a retry' })), false, 'a retried write writes nothing');
      assert.equal(store.targets.appendOperation('staging-eu', 'iac-r1', step(2)), true);
      assert.equal(store.targets.appendOperation('staging-eu', 'iac-r1', step(1, { runId: 'run-2' })), true, "a reset run's step 1 is its own row");
      assert.equal(store.targets.appendOperation('staging-eu', 'iac-r9', step(1, { runId: undefined })), true, 'a row written outside a run');
      assert.equal(store.targets.appendOperation('other', 'iac-r3', step(1)), true, "another target's row");

      const trail = store.targets.audit('staging-eu');
      assert.deepEqual(
        trail.map((op) => [op.workflowId, op.runId, op.step, op.action, op.reason]),
        [
          ['iac-r1', 'run-1', 1, 'iac_planned', null],
          ['iac-r1', 'run-1', 2, 'iac_applied', null],
          ['iac-r1', 'run-2', 1, 'iac_planned', null],
          ['iac-r9', null, 1, 'iac_planned', null],
        ],
      );
      const first = trail[0] as TargetAuditEntry;
      assert.deepEqual(Object.keys(first).sort(), ['action', 'actor', 'at', 'effect', 'reason', 'runId', 'seq', 'step', 'summary', 'target', 'workflowId']);
      assert.deepEqual([first.target, first.summary], ['staging-eu', { stack: 'web' }]);

      assert.throws(() => store.db.prepare("UPDATE target_operations SET actor = 'x'").run(), /append-only/);
      assert.throws(() => store.db.prepare('DELETE FROM target_operations').run(), /append-only/);

      store.targets.remove('staging-eu');
      assert.deepEqual(store.targets.audit('staging-eu'), trail, 'a removed target keeps its trail');
      assert.deepEqual(store.targets.audit('nosuch'), []);
    }),
  );
});

describe('the store role: targets commands', () => {
  /** The target commands touch no host: a registry that is never asked. */
  const noHosts: HostDirectory = {
    list: () => Promise.reject(new Error('not asked')),
    register: () => Promise.reject(new Error('not asked')),
    remove: () => Promise.reject(new Error('not asked')),
  };

  async function failureOf(run: (command: unknown) => Promise<unknown>, command: unknown): Promise<ApplicationFailure> {
    try {
      await run(command);
    } catch (err) {
      assert.ok(err instanceof ApplicationFailure, `an ApplicationFailure, got ${String(err)}`);
      return err;
    }
    assert.fail(`${JSON.stringify(command)} succeeded`);
  }

  test(
    'add, list, get, remove and audit answer with their documented shapes and taxonomy types',
    withStore(async (store) => {
      const { runStoreCommand: run } = createStoreCommandActivities({
        store,
        hosts: noHosts,
        secrets: SecretBox.fromKeyFile(path.join(path.dirname(store.file), 'store.key')),
        flags: loadConfig({}).flags,
      });
      const added = (await run({ kind: 'targets.add', name: 'staging-eu', environment: 'staging', region: 'eu-west-2', profile: 'plane-staging' })) as TargetRecord;
      assert.deepEqual({ ...added, addedAt: '' }, { name: 'staging-eu', environment: 'staging', region: 'eu-west-2', endpoint: null, profile: 'plane-staging', addedAt: '' });
      assert.deepEqual(await run({ kind: 'targets.list' }), { targets: [added] });
      assert.deepEqual(await run({ kind: 'targets.get', name: 'staging-eu' }), added);

      const twice = await failureOf(run, { kind: 'targets.add', name: 'staging-eu', environment: 'staging', region: 'eu-west-2' });
      assert.equal(twice.type, 'INVALID_STATE');
      const refused = await failureOf(run, { kind: 'targets.add', name: 'x', environment: 'staging', region: 'eu-west-2', endpoint: 'https://k:s@x.example' });
      assert.equal(refused.type, 'INVALID_INPUT');
      assert.match(refused.message, /endpoint: must not carry credentials/);
      assert.ok(!refused.message.includes('k:s'), 'the refusal does not repeat the secret');

      assert.deepEqual(await run({ kind: 'targets.audit', name: 'staging-eu' }), { target: 'staging-eu', operations: [] }, 'a registered target with no runs');
      store.targets.appendOperation('staging-eu', 'iac-r1', step(1));
      assert.deepEqual(await run({ kind: 'targets.remove', name: 'staging-eu' }), added);
      const { operations } = (await run({ kind: 'targets.audit', name: 'staging-eu' })) as { operations: TargetAuditEntry[] };
      assert.deepEqual(
        operations.map((op) => op.action),
        ['iac_planned'],
        "a removed target's trail is still shown",
      );

      for (const command of [
        { kind: 'targets.remove', name: 'staging-eu' },
        { kind: 'targets.get', name: 'staging-eu' },
        { kind: 'targets.audit', name: 'nosuch' },
      ]) {
        const missing = await failureOf(run, command);
        assert.equal(missing.type, 'NOT_FOUND', command.kind);
        assert.equal(missing.nonRetryable, true);
        assert.match(String((missing.details?.[0] as { hint?: string }).hint), /targets list/);
      }
    }),
  );
});

describe('SandboxRepository.findIacProof', () => {
  const DIGEST = 'sha256:template-a';
  const SINCE = '2026-03-01T00:00:00.000Z';

  /** A sandbox of `principal` with one audit row of an IaC run written at `at`. */
  function applied(store: Store, id: string, at: string, summary: Record<string, unknown>, options: { principal?: string; action?: string } = {}): void {
    const principal = options.principal ?? 'agent-1';
    if (!store.sandboxes.exists(id)) {
      store.sandboxes.record(
        projectionSnapshot({ id, principal, capability: 'cloud.iac.local', state: 'READY' }),
        step(1, { action: 'ready', runId: `run-${id}` }),
        new Date('2026-02-01T00:00:00Z'),
      );
    }
    const seq = store.db.prepare('SELECT count(*) AS n FROM operations').get() as { n: number };
    const row = { runId: `iac-run-${seq.n}`, step: 1, action: options.action ?? 'iac_applied', actor: 'plane', effect: 'applied', reason: null, summary };
    assert.equal(store.sandboxes.appendAudit(id, `iac-${seq.n}`, row, new Date(at)), true);
  }

  const proof = (iacRunId: string, extra: Record<string, unknown> = {}) => ({ templateDigest: DIGEST, principal: 'agent-1', allVerified: true, iacRunId, ...extra });

  test(
    'finds the newest verified apply of the digest by the principal inside the window, and nothing else',
    withStore((store) => {
      const find = (input: Partial<{ principal: string; templateDigest: string; sinceIso: string }> = {}) =>
        store.sandboxes.findIacProof({ principal: 'agent-1', templateDigest: DIGEST, sinceIso: SINCE, ...input });
      assert.equal(find(), undefined, 'an empty store holds no proof');

      applied(store, 'sb-old', '2026-02-28T23:59:59.999Z', proof('r-too-old'));
      applied(store, 'sb-1', '2026-03-01T08:00:00.000Z', proof('r-unverified', { allVerified: false }));
      applied(store, 'sb-1', '2026-03-01T08:30:00.000Z', proof('r-truthy', { allVerified: 1 }));
      applied(store, 'sb-1', '2026-03-01T08:40:00.000Z', proof('r-text', { allVerified: 'true' }));
      applied(store, 'sb-1', '2026-03-01T09:00:00.000Z', proof('r-other-digest', { templateDigest: 'sha256:template-b' }));
      applied(store, 'sb-2', '2026-03-01T09:30:00.000Z', proof('r-other-principal', { principal: 'agent-2' }), { principal: 'agent-2' });
      applied(store, 'sb-1', '2026-03-01T09:45:00.000Z', proof('r-failed'), { action: 'iac_failed' });
      applied(store, 'sb-1', '2026-03-01T09:50:00.000Z', { templateDigest: DIGEST, principal: 'agent-1', allVerified: true });
      assert.equal(find(), undefined, 'none of these is a proof');

      applied(store, 'sb-1', '2026-03-01T10:00:00.000Z', proof('r-first'));
      applied(store, 'sb-3', '2026-03-01T11:00:00.000Z', proof('r-newest'));
      applied(store, 'sb-1', '2026-03-01T12:00:00.000Z', proof('r-later-other-digest', { templateDigest: 'sha256:template-c' }));
      const found = find();
      assert.ok(found !== undefined);
      assert.deepEqual({ ...found, workflowId: '' }, { sandboxId: 'sb-3', workflowId: '', iacRunId: 'r-newest', at: '2026-03-01T11:00:00.000Z' });
      assert.match(found.workflowId, /^iac-\d+$/);

      assert.equal(find({ sinceIso: '2026-03-01T11:00:00.001Z' }), undefined, 'the window starts at sinceIso');
      assert.equal(find({ sinceIso: '2026-03-01T11:00:00.000Z' })?.iacRunId, 'r-newest', 'a row at sinceIso counts');
      assert.equal(find({ sinceIso: '2026-02-28T00:00:00.000Z' })?.iacRunId, 'r-newest');
      assert.equal(find({ principal: 'agent-2' })?.iacRunId, 'r-other-principal');
      assert.equal(find({ principal: 'agent-' }), undefined, 'the principal is matched whole');
      assert.equal(find({ templateDigest: 'sha256:template-b' })?.iacRunId, 'r-other-digest');
    }),
  );
});

describe('migration 8', () => {
  test('a version-7 store gains targets and their trail, keeping its sandboxes, whose applies count as proof', () => {
    const file = freshFile();
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const raw = new Database(file);
    for (const migration of MIGRATIONS.slice(0, 7)) raw.exec(migration);
    raw.pragma('user_version = 7');
    // Rows as a version-7 build wrote them (this build's repositories write to tables it added since).
    const at = '2026-03-01T10:00:00.000Z';
    raw
      .prepare(
        `INSERT INTO sandboxes (id, workflow_id, run_id, principal, capability, adapter, services, state, request_digest, last_step, created_at, updated_at)
         VALUES ('sb-old', 'sandbox-sb-old', 'run-old', 'agent-1', 'cloud.sandbox', 'memory', '["s3"]', 'READY', 'sha256:x', 1, ?, ?)`,
      )
      .run(at, at);
    const operation = raw.prepare(
      `INSERT INTO operations (sandbox_id, workflow_id, run_id, step, action, actor, effect, reason, summary, at) VALUES ('sb-old', ?, ?, ?, ?, 'worker', 'ok', NULL, ?, ?)`,
    );
    operation.run('sandbox-sb-old', 'run-old', 1, 'ready', '{}', at);
    operation.run('iac-old', 'iac-old-run', 2, 'iac_applied', JSON.stringify(proof()), at);
    raw.close();

    const store = Store.open(file);
    try {
      assert.ok(LATEST_SCHEMA_VERSION >= 8);
      assert.equal(store.schemaVersion, LATEST_SCHEMA_VERSION);
      assert.deepEqual(store.targets.list(), []);
      store.targets.add({ name: 'staging-eu', environment: 'staging', region: 'eu-west-2' });
      assert.equal(store.targets.appendOperation('staging-eu', 'iac-new', step(1)), true);
      assert.equal(store.sandboxes.audit('sb-old').length, 2, "the sandbox's trail is kept");
      assert.equal(store.sandboxes.findIacProof({ principal: 'agent-1', templateDigest: 'sha256:t', sinceIso: '2026-03-01T00:00:00Z' })?.iacRunId, 'r-old');
    } finally {
      store.close();
    }

    function proof() {
      return { templateDigest: 'sha256:t', principal: 'agent-1', allVerified: true, iacRunId: 'r-old' };
    }
  });
});
