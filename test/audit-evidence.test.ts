/**
 * `sandboxctl audit verify` and `audit export` against a real Temporal dev server, an
 * in-process worker and the real CLI (DESIGN §11, §19): the trail a sandbox's life wrote
 * verifies; a row edited in the SQLite file is found and named (exit 3, AUDIT_TAMPERED);
 * the export is JSON Lines, or OCSF API Activity events.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import type { AuditRecord, AuditVerification } from '../src/domain/audit-evidence';
import { runCli } from './harness/cli';
import { cliFailure, cliOutput } from './helpers/cli-json';
import { assertOcsfApiActivity } from './helpers/ocsf';
import { startTestWorker, type TestWorker } from './harness/test-worker';
import { testTemporalAddress } from './harness/test-temporal';

const jsonLines = (text: string) =>
  text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

// In order: the trail is written and verified, exported, then tampered with.
describe('sandboxctl audit verify / export', () => {
  let worker: TestWorker;
  const cli = (...args: string[]) => runCli(args, worker.env);

  before(async () => {
    worker = await startTestWorker(await testTemporalAddress());
    worker.store.policies.add({ principalPattern: 'agent-audit', capability: 'cloud.sandbox', effect: 'allow' });
  });
  after(async () => worker?.stop());

  test("a sandbox's life leaves a trail that verifies", async () => {
    await worker.sandboxes.create({ id: 'audit-chain', principal: 'agent-audit', services: ['s3'], adapter: 'memory' }, { wait: 'ready' });
    await worker.sandboxes.destroy('audit-chain');
    const result = cliOutput<AuditVerification>(await cli('audit', 'verify', '--json'));
    assert.equal(result.ok, true);
    assert.equal(result.firstBad, null);
    assert.ok(result.rows >= 4, `rows: ${result.rows}`);
    const human = await cli('audit', 'verify');
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /audit trail verifies/);
    // `audit ID` still shows one sandbox's trail.
    const { operations } = cliOutput<{ operations: { action: string }[] }>(await cli('audit', 'audit-chain', '--json'));
    assert.equal(operations.length, result.rows);
  });

  test('export writes JSON Lines with the chain fields, or OCSF API Activity (6003) events', async () => {
    const jsonl = await cli('audit', 'export');
    assert.equal(jsonl.code, 0, jsonl.stderr);
    const records = jsonLines(jsonl.stdout) as unknown as AuditRecord[];
    assert.ok(records.length >= 4);
    assert.ok(records.every((record) => record.stream === 'operations' && record.sandboxId === 'audit-chain' && /^[0-9a-f]{64}$/.test(record.hash ?? '')));
    for (let i = 1; i < records.length; i += 1) assert.equal(records[i]?.prevHash, records[i - 1]?.hash);

    const ocsf = await cli('audit', 'export', '--format', 'ocsf', '--since', '1h');
    assert.equal(ocsf.code, 0, ocsf.stderr);
    const events = jsonLines(ocsf.stdout);
    assert.equal(events.length, records.length);
    for (const event of events) {
      assertOcsfApiActivity(event);
      assert.equal(event.class_uid, 6003);
    }
    assert.deepEqual(events[0]?.resources, [{ uid: 'audit-chain', type: 'sandbox' }]);

    const none = await cli('audit', 'export', '--since', new Date(Date.now() + 3_600_000).toISOString());
    assert.equal(none.code, 0, none.stderr);
    assert.equal(none.stdout, '');
    cliFailure(await cli('audit', 'export', '--format', 'csv', '--json'), 2, 'INVALID_INPUT');
  });

  test('an operator command: a principal-bound caller is refused', async () => {
    cliFailure(await runCli(['audit', 'verify', '--json'], { ...worker.env, SANDBOXPLANE_PRINCIPAL: 'agent-audit' }), 3, 'PRINCIPAL_MISMATCH');
  });

  test('a row edited in the SQLite file is found: exit 3, AUDIT_TAMPERED, naming the row', async () => {
    const tamperer = new Database(worker.config.storePath);
    const { seq } = tamperer.prepare("SELECT seq FROM operations WHERE sandbox_id = 'audit-chain' ORDER BY seq LIMIT 1 OFFSET 1").get() as { seq: number };
    tamperer.exec('DROP TRIGGER operations_no_update');
    tamperer.prepare("UPDATE operations SET actor = 'someone-else' WHERE seq = ?").run(seq);
    tamperer.close();

    const json = await cli('audit', 'verify', '--json');
    assert.equal(json.code, 3, json.stderr);
    const result = JSON.parse(json.stdout) as AuditVerification;
    assert.equal(result.ok, false);
    assert.deepEqual({ stream: result.firstBad?.stream, seq: result.firstBad?.seq, problem: result.firstBad?.problem }, { stream: 'operations', seq, problem: 'edited' });
    const { error } = JSON.parse(json.stderr) as { error: { code: string; message: string } };
    assert.equal(error.code, 'AUDIT_TAMPERED');
    assert.match(error.message, new RegExp(`operations row ${seq}:`));

    const human = await cli('audit', 'verify');
    assert.equal(human.code, 3);
    assert.match(human.stderr, new RegExp(`AUDIT_TAMPERED.*operations row ${seq}`));
  });
});
