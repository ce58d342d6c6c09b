/**
 * `sandboxctl targets …` against a real Temporal dev server and an in-process worker:
 * operator commands that travel through the store role (DESIGN §10, §11, §14).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TargetAuditEntry, TargetRecord } from '../src/domain/targets';
import { runCli } from './harness/cli';
import { cliFailure, cliOutput } from './helpers/cli-json';
import { startTestWorker, type TestWorker } from './harness/test-worker';
import { testTemporalAddress } from './harness/test-temporal';

// The tests run in order: the first registers the targets the later ones remove and audit.
describe('sandboxctl targets', () => {
  let worker: TestWorker;
  const cli = (...args: string[]) => runCli(args, worker.env);

  before(async () => {
    worker = await startTestWorker(await testTemporalAddress());
  });
  after(async () => worker?.stop());

  test('add two targets and list them as JSON; a table for people', async () => {
    const [staging, production] = await Promise.all([
      cli('targets', 'add', 'staging-eu', '--environment', 'staging', '--region', 'eu-west-2', '--endpoint', 'http://127.0.0.1:5999', '--profile', 'plane-staging', '--json'),
      cli('targets', 'add', 'prod-us', '--environment', 'production', '--region', 'us-east-1', '--json'),
    ]);
    const stagingRow = cliOutput<TargetRecord>(staging);
    assert.deepEqual(
      { ...stagingRow, addedAt: '' },
      { name: 'staging-eu', environment: 'staging', region: 'eu-west-2', endpoint: 'http://127.0.0.1:5999', profile: 'plane-staging', addedAt: '' },
    );
    assert.ok(!Number.isNaN(Date.parse(stagingRow.addedAt)));
    const productionRow = cliOutput<TargetRecord>(production);
    assert.deepEqual([productionRow.endpoint, productionRow.profile], [null, null], 'left out: null');

    const { targets } = cliOutput<{ targets: TargetRecord[] }>(await cli('targets', 'list', '--json'));
    assert.deepEqual(targets, [productionRow, stagingRow], 'by name');

    const table = await cli('targets', 'list');
    assert.equal(table.code, 0, table.stderr);
    const [header, ...rows] = table.stdout.trimEnd().split('\n');
    assert.match(header ?? '', /^NAME\s+ENVIRONMENT\s+REGION\s+ENDPOINT\s+PROFILE\s+ADDED$/);
    assert.match(rows[1] ?? '', /^staging-eu\s+staging\s+eu-west-2\s+http:\/\/127\.0\.0\.1:5999\s+plane-staging\s+\d{4}-/);
  });

  test('a bad target is refused (exit 2, INVALID_INPUT) naming every bad flag, and its secret is not printed back', async () => {
    const bad = cliFailure(
      await cli('targets', 'add', 'bad', '--environment', 'dev', '--region', 'nowhere', '--endpoint', 'https://AKIAEXAMPLE:s3cr3t@cloudformation.example.com', '--profile', 'a b', '--json'),
      2,
      'INVALID_INPUT',
    );
    for (const flag of ['--environment', '--region', '--endpoint', '--profile']) assert.match(bad.message, new RegExp(flag), bad.message);
    assert.ok(!bad.message.includes('s3cr3t') && !bad.message.includes('AKIAEXAMPLE'), bad.message);

    cliFailure(await cli('targets', 'add', 'Bad_Name', '--environment', 'staging', '--region', 'us-east-1', '--json'), 2, 'INVALID_INPUT');
    cliFailure(await cli('targets', 'add', 'no-region', '--environment', 'staging', '--json'), 2, 'INVALID_INPUT');
    const twice = cliFailure(await cli('targets', 'add', 'prod-us', '--environment', 'staging', '--region', 'us-east-1', '--json'), 3, 'INVALID_STATE');
    assert.match(twice.hint, /targets remove prod-us/);
  });

  test('remove one (exit 0), remove it again (exit 4 NOT_FOUND); audit of an unknown target is NOT_FOUND, of a known one empty', async () => {
    const removed = cliOutput<TargetRecord>(await cli('targets', 'remove', 'prod-us', '--json'));
    assert.equal(removed.name, 'prod-us');
    const again = cliFailure(await cli('targets', 'remove', 'prod-us', '--json'), 4, 'NOT_FOUND');
    assert.match(again.hint, /sandboxctl targets list/);
    const { targets } = cliOutput<{ targets: TargetRecord[] }>(await cli('targets', 'list', '--json'));
    assert.deepEqual(
      targets.map((t) => t.name),
      ['staging-eu'],
    );

    cliFailure(await cli('targets', 'audit', 'never-registered', '--json'), 4, 'NOT_FOUND');
    assert.deepEqual(cliOutput<{ target: string; operations: TargetAuditEntry[] }>(await cli('targets', 'audit', 'staging-eu', '--json')), { target: 'staging-eu', operations: [] });
  });
});
