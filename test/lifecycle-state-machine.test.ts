import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import { locateTemporalCli } from '../src/temporal-dev/temporal-cli';
import { enrolApprover, type TestAuthenticator } from './helpers/approvers';
import { rejectsWith } from './helpers/rejects-with';
import { startTestWorker, type TestWorker } from './harness/test-worker';
import { testTemporalAddress } from './harness/test-temporal';

describe('the lifecycle state machine on a real Temporal dev server', () => {
  let worker: TestWorker;

  /** Starts a lifecycle the way a person would by hand, with the Temporal CLI. */
  const startByHand = (workflowId: string, input: unknown) =>
    execFileSync(
      locateTemporalCli(process.env.SANDBOXPLANE_TEMPORAL_CLI),
      [
        'workflow',
        'start',
        '--type',
        'sandboxLifecycle',
        '--task-queue',
        worker.config.taskQueue,
        '--workflow-id',
        workflowId,
        '--input',
        JSON.stringify(input),
        '--address',
        worker.config.temporalAddress,
      ],
      { encoding: 'utf8' },
    );

  let alice: TestAuthenticator;
  let bob: TestAuthenticator;
  const resultOf = (workflowId: string) => worker.client.workflow.getHandle(workflowId).result() as Promise<SandboxStatus>;

  before(async () => {
    worker = await startTestWorker(await testTemporalAddress());
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
    worker.store.policies.add({ principalPattern: 'gated-*', capability: 'cloud.sandbox', effect: 'require_approval' });
    alice = await enrolApprover(worker, 'alice');
    bob = await enrolApprover(worker, 'bob');
  });
  after(async () => worker?.stop());

  test('a malformed input started by hand ends DENIED with INVALID_INPUT at once, recording and provisioning nothing', async () => {
    startByHand('sandbox-bad-1', { request: { id: 'bad-1', principal: 'agent-1', services: ['s3'], capability: 'cloud.teleport' } });
    const started = Date.now();
    const status = await resultOf('sandbox-bad-1');
    assert.ok(Date.now() - started < 10_000, 'ends within seconds, not retried for ever');
    assert.equal(status.state, 'DENIED');
    assert.equal(status.error?.code, 'INVALID_INPUT');
    assert.match(status.error?.message ?? '', /request\.capability/);
    assert.equal(worker.store.sandboxes.exists('bad-1'), false, 'nothing recorded');
    assert.deepEqual(worker.memory.liveSandboxIds(), []);

    startByHand('sandbox-bad-2', 'not even an object');
    assert.equal((await resultOf('sandbox-bad-2')).error?.code, 'INVALID_INPUT');
  });

  test('a run started by hand with forged carried state (as if continued as new) ends DENIED with INVALID_INPUT, not stuck', async () => {
    const forged = {
      record: { workflowId: 'sandbox-forged-1', runId: 'r', requestDigest: 'd', createdAtMs: 0, phase: { name: 'ready' }, waitingFor: '', approvalAttempts: [] },
      step: 0,
      unrecorded: [],
      extendTimesMs: [],
      destroyRequest: null,
      inbox: [],
    };
    startByHand('sandbox-forged-1', { request: { id: 'forged-1', principal: 'agent-1', services: ['s3'] }, carried: forged });
    const status = await resultOf('sandbox-forged-1');
    assert.equal(status.state, 'DENIED');
    assert.equal(status.error?.code, 'INVALID_INPUT');
    assert.match(status.error?.message ?? '', /only a run that continued as new carries state/);
    assert.equal(worker.store.sandboxes.exists('forged-1'), false);
  });

  test("a request whose id is not its workflow's ends DENIED with INVALID_INPUT", async () => {
    startByHand('sandbox-mismatch-1', { request: { id: 'someone-else', principal: 'agent-1', services: ['s3'] } });
    const status = await resultOf('sandbox-mismatch-1');
    assert.equal(status.state, 'DENIED');
    assert.equal(status.error?.code, 'INVALID_INPUT');
    assert.match(status.error?.message ?? '', /must match the workflow id/);
    assert.equal(worker.store.sandboxes.exists('someone-else'), false);
    assert.equal(worker.store.sandboxes.exists('mismatch-1'), false);
  });

  test('a valid request started by hand (no digest given) runs, and the SDK then finds it by its digest', async () => {
    startByHand('sandbox-byhand-1', { request: { id: 'byhand-1', principal: 'agent-1', services: ['sqs', 's3'] } });
    const ready = await worker.sandboxes.create({ id: 'byhand-1', principal: 'agent-1', services: ['s3', 'sqs'] }, { wait: 'ready' });
    assert.equal(ready.state, 'READY');
    assert.ok(ready.clientConfig !== null, 'a READY answer carries the client settings');
    await assert.rejects(worker.sandboxes.create({ id: 'byhand-1', principal: 'agent-1', services: ['s3'] }), rejectsWith('IDEMPOTENCY_CONFLICT'));
    await worker.sandboxes.destroy('byhand-1');
  });

  test('create waits inside the workflow: a gated request with --wait ready times out with WAIT_TIMEOUT and goes on', async () => {
    await assert.rejects(
      worker.sandboxes.create({ id: 'gated-wait', principal: 'gated-1', services: ['s3'] }, { wait: 'ready', timeoutMs: 1_000 }),
      rejectsWith('WAIT_TIMEOUT', /still AWAITING_APPROVAL/),
    );
    const waiting = worker.sandboxes.create({ id: 'gated-wait', principal: 'gated-1', services: ['s3'] }, { wait: 'ready' });
    const outcome = await worker.sandboxes.approve('gated-wait', { approver: 'alice', reason: 'ok', code: await alice.code() });
    assert.equal(outcome.attempt.verdict, 'accepted');
    assert.equal(outcome.status.state, 'PROVISIONING');
    assert.equal((await waiting).state, 'READY', 'the waiting create returns once approved and provisioned');
    await worker.sandboxes.destroy('gated-wait');
  });

  test('approve and deny are judged in order: the second of two racing approvers hears INVALID_STATE', async () => {
    await worker.sandboxes.create({ id: 'gated-race', principal: 'gated-2', services: ['s3'] });
    const results = await Promise.allSettled([
      worker.sandboxes.approve('gated-race', { approver: 'alice', code: await alice.code() }),
      worker.sandboxes.deny('gated-race', { approver: 'bob', reason: 'no', code: await bob.code() }),
    ]);
    const accepted = results.filter((result) => result.status === 'fulfilled');
    const refused = results.filter((result): result is PromiseRejectedResult => result.status === 'rejected');
    assert.equal(accepted.length, 1, 'exactly one verdict counts');
    assert.equal(refused.length, 1);
    rejectsWith('INVALID_STATE')(refused[0]?.reason);
    const status = await worker.sandboxes.status('gated-race');
    assert.ok(['PROVISIONING', 'READY', 'DENIED'].includes(status.state), status.state);
    if (status.state !== 'DENIED') await worker.sandboxes.destroy('gated-race');
  });

  test('approving a sandbox that is not awaiting approval is INVALID_STATE; a late signal is dropped, not audited', async () => {
    await worker.sandboxes.create({ id: 'late-1', principal: 'agent-2', services: ['s3'] }, { wait: 'ready' });
    await assert.rejects(worker.sandboxes.approve('late-1', { approver: 'alice' }), rejectsWith('INVALID_STATE', /READY, not AWAITING_APPROVAL/));
    const before = worker.store.sandboxes.audit('late-1').length;
    await worker.client.workflow.getHandle('sandbox-late-1').signal('approve', { approver: 'alice', reason: 'late' });
    await worker.sandboxes.extend('late-1', { ttlSeconds: 60 });
    const audit = worker.store.sandboxes.audit('late-1').map((op) => op.action);
    assert.equal(audit.length, before + 1);
    assert.equal(audit.at(-1), 'extended');
    assert.deepEqual((await worker.sandboxes.status('late-1')).approvalAttempts, []);
    await worker.sandboxes.destroy('late-1');
    await assert.rejects(worker.sandboxes.approve('late-1', { approver: 'alice' }), rejectsWith('INVALID_STATE'));
    await assert.rejects(worker.sandboxes.approve('never-was', { approver: 'alice' }), rejectsWith('NOT_FOUND'));
  });

  test('create with wait "ended" returns once the TTL has run out', async () => {
    const ended = await worker.sandboxes.create({ id: 'short-1', principal: 'agent-3', services: ['s3'], ttlSeconds: 1 }, { wait: 'ended' });
    assert.equal(ended.state, 'DESTROYED');
    assert.deepEqual(
      worker.memory.liveSandboxIds().filter((id) => id === 'short-1'),
      [],
    );
  });
});
