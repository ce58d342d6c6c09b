/**
 * Snapshots have a bound and a life (issue 39, DESIGN §11 "Bounds and ownership", §15): on a
 * real dev server and the store's real SQLite file, through the CLI. A principal's quota of 2
 * refuses the third snapshot (and a pause past it) with nothing kept; `snapshots delete` frees
 * the room, is recorded in the sandbox's trail, and leaves nothing to fork; another principal's
 * delete is NOT_FOUND while an operator's works; the snapshot a PAUSED sandbox resumes from
 * cannot be deleted; and the sweep deletes snapshots past their age but keeps a paused one's.
 * A moto sandbox whose pause the quota refuses serves its agent again at once: the quiet its
 * capture took for the teardown is ended, not left to lapse.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { ClientConfig } from '../src/domain/client-config';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import type { SweepReport } from '../src/domain/leaks';
import type { SnapshotSummary } from '../src/domain/snapshots';
import { ensureCleanupSchedule } from '../src/client/cleanup-schedule';
import { runCli } from './harness/cli';
import { cliFailure, cliOutput } from './helpers/cli-json';
import { createTestNamespace } from './helpers/test-namespace';
import { testTemporalAddress } from './harness/test-temporal';
import { startTestWorker, type TestWorker } from './harness/test-worker';

const motoImage = process.env.SANDBOXPLANE_MOTO_IMAGE;

describe('snapshot quotas, delete and age (real dev server, store file and CLI)', () => {
  let worker: TestWorker;
  const as = (principal: string | undefined, ...args: string[]) => {
    const { SANDBOXPLANE_PRINCIPAL: _operator, ...env } = worker.env;
    return runCli([...args, '--json'], principal === undefined ? env : { ...env, SANDBOXPLANE_PRINCIPAL: principal });
  };
  const asAgent = (...args: string[]) => as('agent-quota', ...args);
  const listed = async (principal: string | undefined = 'agent-quota') => cliOutput<{ snapshots: SnapshotSummary[] }>(await as(principal, 'snapshots')).snapshots;

  before(async () => {
    const address = await testTemporalAddress();
    const namespace = await createTestNamespace(address, 'snapshot-quotas');
    const moto: Record<string, string> = motoImage === undefined ? {} : { SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1', SANDBOXPLANE_MOTO_IMAGE: motoImage };
    worker = await startTestWorker(address, { env: { TEMPORAL_NAMESPACE: namespace, SANDBOXPLANE_SNAPSHOT_QUOTA: '2', SANDBOXPLANE_SNAPSHOT_MAX_AGE: '1d', ...moto } });
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
    for (const id of ['quota-a', 'quota-b']) cliOutput<SandboxStatus>(await asAgent('create', '--id', id, '--adapter', 'memory', '--services', 's3', '--wait'));
  });

  after(async () => {
    await worker?.stop();
  });

  test('a quota of 2 refuses the third snapshot and a pause past it, nothing kept; delete frees the room', async () => {
    const first = cliOutput<SnapshotSummary>(await asAgent('snapshot', 'quota-a'));
    cliOutput<SnapshotSummary>(await asAgent('snapshot', 'quota-a'));
    const refused = cliFailure(await asAgent('snapshot', 'quota-a'), 3, 'QUOTA_EXCEEDED');
    assert.match(refused.message, /agent-quota holds 2 snapshots; the quota is 2/);
    assert.match(refused.hint, /sandboxctl snapshots delete/);
    assert.equal((await listed()).length, 2, 'nothing kept past the quota');

    const pause = cliFailure(await asAgent('pause', 'quota-b'), 3, 'QUOTA_EXCEEDED');
    assert.match(pause.message, /quota/);
    assert.equal(worker.store.sandboxes.state('quota-b'), 'READY', 'a pause whose snapshot is refused leaves the sandbox READY');

    const deleted = cliOutput<SnapshotSummary>(await asAgent('snapshots', 'delete', first.snapshotId));
    assert.deepEqual(deleted, first);
    assert.equal((await listed()).length, 1);
    const trail = worker.store.sandboxes.audit('quota-a').find((row) => row.action === 'snapshot_deleted');
    assert.deepEqual([trail?.reason, trail?.summary.snapshotId], ['by its owner', first.snapshotId]);
    assert.match(trail?.actor ?? '', /^agent:cli:/, 'a bound CLI acts as the agent');

    cliFailure(await asAgent('create', '--adapter', 'memory', '--services', 's3', '--from-snapshot', first.snapshotId), 4, 'NOT_FOUND');
    cliFailure(await asAgent('restore', 'quota-a', '--snapshot', first.snapshotId), 4, 'NOT_FOUND');
    cliFailure(await asAgent('snapshots', 'delete', first.snapshotId), 4, 'NOT_FOUND');
    cliOutput<SnapshotSummary>(await asAgent('snapshot', 'quota-a'));
    assert.equal((await listed()).length, 2, 'the freed room took a new one');
  });

  test(
    'a moto sandbox whose pause the quota refuses stays READY and serves its agent at once',
    { skip: motoImage === undefined && 'needs the moto image (SANDBOXPLANE_MOTO_IMAGE, set by the test runner)' },
    async () => {
      assert.equal((await listed()).length, 2, 'the quota is full');
      const config = cliOutput<SandboxStatus>(await asAgent('create', '--id', 'quota-moto', '--adapter', 'moto', '--services', 's3', '--wait')).clientConfig as ClientConfig;
      const s3 = new S3Client({ ...config, maxAttempts: 1 });
      try {
        await s3.send(new CreateBucketCommand({ Bucket: 'kept' }));
        cliFailure(await asAgent('pause', 'quota-moto'), 3, 'QUOTA_EXCEEDED');
        assert.equal(worker.store.sandboxes.state('quota-moto'), 'READY');
        // The capture's quiet (two minutes' lease) was ended when the store refused: no 503 now.
        const put = await s3
          .send(new PutObjectCommand({ Bucket: 'kept', Key: 'right-after.txt', Body: 'served' }))
          .catch((err: { $response?: { statusCode?: number } }) => assert.fail(`the PUT right after the refused pause was answered HTTP ${err.$response?.statusCode}`));
        assert.equal(put.$metadata.httpStatusCode, 200);
      } finally {
        s3.destroy();
        await worker.sandboxes.destroy('quota-moto');
      }
    },
  );

  test("another principal's delete is NOT_FOUND, as for a snapshot that never was; an operator deletes anyone's", async () => {
    const [mine] = await listed();
    assert.ok(mine !== undefined);
    const stolen = cliFailure(await as('agent-other', 'snapshots', 'delete', mine.snapshotId), 4, 'NOT_FOUND');
    const never = cliFailure(await as('agent-other', 'snapshots', 'delete', 'snap-0000000000000000'), 4, 'NOT_FOUND');
    assert.equal(stolen.message.replace(mine.snapshotId, 'ID'), never.message.replace('snap-0000000000000000', 'ID'), 'the same words either way');
    assert.equal((await listed()).length, 2, 'still there');
    cliFailure(await asAgent('snapshots', 'delete', mine.snapshotId, 'extra'), 2, 'INVALID_INPUT');

    const byOperator = cliOutput<SnapshotSummary>(await as(undefined, 'snapshots', 'delete', mine.snapshotId));
    assert.equal(byOperator.snapshotId, mine.snapshotId);
    const trail = worker.store.sandboxes.audit(mine.sandboxId).filter((row) => row.action === 'snapshot_deleted');
    assert.equal(trail.at(-1)?.reason, 'by an operator');
  });

  test('the snapshot a PAUSED sandbox resumes from cannot be deleted; once it is READY again it can', async () => {
    for (const snapshot of await listed()) cliOutput<SnapshotSummary>(await asAgent('snapshots', 'delete', snapshot.snapshotId));
    const paused = cliOutput<SandboxStatus>(await asAgent('pause', 'quota-b'));
    assert.equal(paused.state, 'PAUSED');
    const [held] = await listed();
    assert.ok(held !== undefined && held.sandboxId === 'quota-b');
    const refused = cliFailure(await asAgent('snapshots', 'delete', held.snapshotId), 3, 'INVALID_STATE');
    assert.match(refused.message, /PAUSED sandbox quota-b/);
    assert.equal(cliOutput<SandboxStatus>(await asAgent('resume', 'quota-b')).state, 'READY');
    cliOutput<SnapshotSummary>(await asAgent('snapshots', 'delete', held.snapshotId));
  });

  test("the sweep deletes snapshots older than SANDBOXPLANE_SNAPSHOT_MAX_AGE, but not a PAUSED sandbox's", async () => {
    const old = cliOutput<SnapshotSummary>(await asAgent('snapshot', 'quota-a'));
    cliOutput<SandboxStatus>(await asAgent('pause', 'quota-b'));
    const [pausedOne] = (await listed()).filter((snapshot) => snapshot.sandboxId === 'quota-b');
    assert.ok(pausedOne !== undefined);
    // Both taken two days ago, as far as the store knows.
    const twoDaysAgo = new Date(Date.now() - 2 * 86400_000).toISOString();
    const file = new Database(worker.env.SANDBOXPLANE_DB as string);
    try {
      file.prepare('UPDATE snapshots SET created_at = ?').run(twoDaysAgo);
    } finally {
      file.close();
    }

    await ensureCleanupSchedule(worker.client, { taskQueue: worker.config.taskQueue, intervalSeconds: 3600 });
    const sweep = cliOutput<SweepReport>(await as(undefined, 'sweep', '--wait'));
    assert.equal(sweep.counts.snapshotsDeleted, 1);
    assert.deepEqual(
      (await listed()).map((snapshot) => snapshot.snapshotId),
      [pausedOne.snapshotId],
    );
    const trail = worker.store.sandboxes.audit('quota-a').filter((row) => row.action === 'snapshot_deleted');
    assert.deepEqual([trail.at(-1)?.actor, trail.at(-1)?.reason, trail.at(-1)?.summary.snapshotId], ['sweep', 'older than 1d (SANDBOXPLANE_SNAPSHOT_MAX_AGE)', old.snapshotId]);
    assert.equal(cliOutput<SandboxStatus>(await asAgent('resume', 'quota-b')).state, 'READY', 'the paused sandbox still resumes');
  });
});
