import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import type { temporal } from '@temporalio/proto';
import type { CloudEmulatorAdapter } from '../src/adapters/cloud-emulator-adapter';
import type { MemoryAdapter } from '../src/adapters/memory-adapter';
import type { SandboxPlaneError } from '../src/domain/errors';
import { SandboxCapability, SandboxHost, SandboxPrincipal, SandboxState as SandboxStateKey } from '../src/domain/search-attributes';
import { locateTemporalCli } from '../src/temporal-dev/temporal-cli';
import { enrolApprover, wrongCode, type TestAuthenticator } from './helpers/approvers';
import { eventually, waitForState } from './harness/eventually';
import { projectionSnapshot } from './helpers/projection-row';
import { rejectsWith } from './helpers/rejects-with';
import { startTestWorker, type TestWorker } from './harness/test-worker';
import { testTemporalAddress } from './harness/test-temporal';
import { assertReplays } from './helpers/replay-histories';

/** Wraps the memory adapter and records every call, to prove what was (not) called. */
function spyOn(memory: MemoryAdapter, calls: string[]): CloudEmulatorAdapter {
  return new Proxy(memory, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.push(String(property));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

function actions(worker: TestWorker, id: string): string[] {
  return worker.store.sandboxes.audit(id).map((op) => op.action);
}

const run = promisify(execFile);

describe('sandbox lifecycle on a real Temporal dev server', () => {
  let address: string;
  let worker: TestWorker;
  let alice: TestAuthenticator;
  const calls: string[] = [];
  const histories: { workflowId: string; history: temporal.api.history.v1.IHistory }[] = [];

  const collectHistory = async (id: string) => {
    const history = await worker.client.workflow.getHandle(`sandbox-${id}`).fetchHistory();
    histories.push({ workflowId: `sandbox-${id}`, history });
  };

  before(async () => {
    address = await testTemporalAddress();
    worker = await startTestWorker(address, {
      env: { SANDBOXPLANE_EXPIRY_WARNING: '2s', SANDBOXPLANE_TTL_CEILING: '1h', SANDBOXPLANE_MAX_LIFETIME: '2h' },
      adapters: (memory) => ({ memory: spyOn(memory, calls) }),
    });
    const { policies } = worker.store;
    policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
    policies.add({ principalPattern: 'gated-*', capability: 'cloud.sandbox', effect: 'require_approval' });
    policies.add({ principalPattern: 'mixed-*', capability: 'cloud.sandbox', effect: 'allow' });
    policies.add({ principalPattern: 'mixed-*', capability: 'cloud.sandbox', effect: 'require_approval', services: ['iam'] });
    policies.add({ principalPattern: 'quota-*', capability: 'cloud.sandbox', effect: 'allow', maxConcurrent: 1 });
    alice = await enrolApprover(worker, 'alice');
    await enrolApprover(worker, 'gated-1');
  });
  after(async () => worker?.stop());

  test('allow → READY → TTL expiry → DESTROYED, with the audit trail of each step', async () => {
    const ready = await worker.sandboxes.create({ id: 'ttl-1', principal: 'agent-1', services: ['s3'], ttlSeconds: 3 }, { wait: 'ready' });
    assert.equal(ready.state, 'READY');
    assert.equal(ready.endpoint, 'memory://ttl-1');
    assert.equal(ready.clientConfig?.forcePathStyle, true);
    assert.deepEqual(ready.fidelity, { s3: 'PARTIAL' });
    assert.equal(ready.decision?.effect, 'allow');
    assert.ok(ready.timeLeftSeconds !== null && ready.timeLeftSeconds <= 3);
    assert.ok(worker.memory.liveSandboxIds().includes('ttl-1'));

    const gone = await waitForState(worker.sandboxes, 'ttl-1', 'DESTROYED');
    assert.equal(gone.clientConfig, null);
    assert.equal(gone.timeLeftSeconds, null);
    assert.ok(!worker.memory.liveSandboxIds().includes('ttl-1'));
    assert.deepEqual(actions(worker, 'ttl-1'), ['requested', 'screened', 'placed', 'ready', 'expiring', 'destroying', 'destroyed']);
    const destroying = worker.store.sandboxes.audit('ttl-1').find((op) => op.action === 'destroying');
    assert.equal(destroying?.actor, 'timer');
    assert.equal(destroying?.reason, 'TTL expired');
    assert.equal(worker.store.sandboxes.state('ttl-1'), 'DESTROYED');
    await collectHistory('ttl-1');
  });

  test('no policy row: DENIED with POLICY_DENIED, exit class 3, nothing provisioned', async () => {
    const before = calls.length;
    await assert.rejects(worker.sandboxes.create({ id: 'nopolicy-1', principal: 'stranger', services: ['s3'] }), (err: unknown) => {
      rejectsWith('POLICY_DENIED')(err);
      assert.equal((err as SandboxPlaneError).exitCode, 3);
      return true;
    });
    assert.deepEqual(calls.slice(before), []);
    assert.deepEqual(actions(worker, 'nopolicy-1'), ['requested', 'screened']);
    assert.equal(worker.store.sandboxes.state('nopolicy-1'), 'DENIED');
  });

  test('require_approval: waits visibly, ignores bad and unauthorized signals (audited), then an approver lets it through', async () => {
    const waiting = await worker.sandboxes.create({ id: 'gated-a', principal: 'gated-1', services: ['s3'], ttlSeconds: 600 });
    assert.equal(waiting.state, 'AWAITING_APPROVAL');
    assert.ok(
      waiting.waitingFor.includes('send the signal `approve` with the JSON payload `{"approver": "<your name>", "reason": "<why>", "code": "<the 6 digits your authenticator shows>"}`'),
      waiting.waitingFor,
    );
    assert.match(waiting.waitingFor, /must not be gated-1/);

    const handle = worker.client.workflow.getHandle('sandbox-gated-a');
    const metadata = (await handle.query('__temporal_workflow_metadata')) as { currentDetails?: string };
    assert.equal(metadata.currentDetails, waiting.waitingFor, 'the UI shows the same instructions');

    const listed = await eventually('SandboxState="AWAITING_APPROVAL" to list it', async () => {
      const rows = await worker.sandboxes.list({ state: 'AWAITING_APPROVAL' });
      return rows.find((row) => row.id === 'gated-a');
    });
    assert.equal(listed.principal, 'gated-1');

    await assert.rejects(worker.sandboxes.approve('gated-a', { approver: 'gated-1', reason: 'mine' }), rejectsWith('APPROVER_NOT_ALLOWED'));
    await assert.rejects(worker.sandboxes.approve('gated-a', { approver: 'mallory', reason: 'trust me', code: '123456' }), rejectsWith('APPROVAL_UNVERIFIED'));
    await handle.signal('approve', 'yes please');
    await handle.signal('approve', { reason: 'no approver named' });
    // A listed approver's name without their code is a forgery (DESIGN §12): audited, ignored.
    await assert.rejects(worker.sandboxes.approve('gated-a', { approver: 'alice', reason: 'forged' }), rejectsWith('APPROVAL_UNVERIFIED', /no code/));
    await handle.signal('approve', { approver: 'alice', reason: 'guessed', code: wrongCode(await alice.code()) });
    await eventually('six judged attempts', async () => ((await worker.sandboxes.status('gated-a')).approvalAttempts.length === 6 ? true : undefined));
    assert.equal((await worker.sandboxes.status('gated-a')).state, 'AWAITING_APPROVAL', 'nothing above moved it');

    const outcome = await worker.sandboxes.approve('gated-a', { approver: 'alice', reason: 'looks fine', code: await alice.code() });
    assert.equal(outcome.attempt.verdict, 'accepted');
    const ready = await waitForState(worker.sandboxes, 'gated-a', 'READY');
    assert.deepEqual(ready.approval && { approver: ready.approval.approver, reason: ready.approval.reason }, { approver: 'alice', reason: 'looks fine' });

    const audit = worker.store.sandboxes.audit('gated-a');
    assert.deepEqual(
      audit.map((op) => op.action),
      ['requested', 'screened', ...Array<string>(6).fill('approve_ignored'), 'approved', 'placed', 'ready'],
    );
    const ignored = audit.filter((op) => op.action === 'approve_ignored').map((op) => op.reason ?? '');
    assert.match(ignored[0] ?? '', /gated-1 requested this sandbox and cannot approve it/);
    assert.match(ignored[1] ?? '', /APPROVAL_UNVERIFIED: the code is not a current code of an approver named mallory/);
    assert.match(ignored[2] ?? '', /malformed payload/);
    assert.match(ignored[3] ?? '', /approver: /);
    assert.match(ignored[4] ?? '', /APPROVAL_UNVERIFIED: no code/);
    assert.match(ignored[5] ?? '', /APPROVAL_UNVERIFIED: the code is not a current code of an approver named alice/);
    assert.equal(audit.find((op) => op.action === 'approved')?.actor, 'alice');

    await worker.sandboxes.destroy('gated-a', { reason: 'test done' });
    await collectHistory('gated-a');
  });

  test('a code counts once: the same code replayed on another sandbox is refused, audited, and changes nothing', async () => {
    await worker.sandboxes.create({ id: 'gated-r1', principal: 'gated-3', services: ['s3'] });
    await worker.sandboxes.create({ id: 'gated-r2', principal: 'gated-3', services: ['s3'] });
    const code = await alice.code();
    assert.equal((await worker.sandboxes.approve('gated-r1', { approver: 'alice', reason: 'ok', code })).attempt.verdict, 'accepted');
    await assert.rejects(worker.sandboxes.approve('gated-r2', { approver: 'alice', reason: 'replayed', code }), rejectsWith('APPROVAL_UNVERIFIED', /already used/));
    assert.equal((await worker.sandboxes.status('gated-r2')).state, 'AWAITING_APPROVAL');
    assert.match(worker.store.sandboxes.audit('gated-r2').find((op) => op.action === 'approve_ignored')?.reason ?? '', /APPROVAL_UNVERIFIED: that code of alice was already used/);
    await worker.sandboxes.destroy('gated-r1');
    await worker.sandboxes.destroy('gated-r2');
  });

  test("the Temporal CLI's `workflow signal`: alice's name alone leaves it waiting; with her current code it is READY", async () => {
    await worker.sandboxes.create({ id: 'gated-cli', principal: 'gated-4', services: ['s3'] });
    const signal = (input: object) =>
      run(locateTemporalCli(process.env.SANDBOXPLANE_TEMPORAL_CLI), [
        'workflow',
        'signal',
        '--workflow-id',
        'sandbox-gated-cli',
        '--name',
        'approve',
        '--input',
        JSON.stringify(input),
        '--address',
        worker.config.temporalAddress,
      ]);
    await signal({ approver: 'alice', reason: 'x' });
    await eventually('the forged signal judged', async () => ((await worker.sandboxes.status('gated-cli')).approvalAttempts.length === 1 ? true : undefined));
    assert.equal((await worker.sandboxes.status('gated-cli')).state, 'AWAITING_APPROVAL');
    await signal({ approver: 'alice', reason: 'x', code: await alice.code() });
    assert.equal((await waitForState(worker.sandboxes, 'gated-cli', 'READY')).approval?.approver, 'alice');
    await worker.sandboxes.destroy('gated-cli');
  });

  test('deny: DENIED with APPROVAL_DENIED, nothing provisioned', async () => {
    const before = calls.length;
    await worker.sandboxes.create({ id: 'gated-d', principal: 'gated-2', services: ['s3'] });
    const outcome = await worker.sandboxes.deny('gated-d', { approver: 'alice', reason: 'not today', code: await alice.code() });
    assert.equal(outcome.attempt.verdict, 'accepted');
    const denied = await waitForState(worker.sandboxes, 'gated-d', 'DENIED');
    assert.deepEqual(denied.error, { code: 'APPROVAL_DENIED', message: 'denied by alice: not today' });
    assert.deepEqual(calls.slice(before), []);
    assert.deepEqual(actions(worker, 'gated-d'), ['requested', 'screened', 'denied']);
    await collectHistory('gated-d');
  });

  test('strictest of parts: s3 (allowed) bundled with iam (gated) waits for approval', async () => {
    const plain = await worker.sandboxes.create({ id: 'mixed-plain', principal: 'mixed-1', services: ['s3'] });
    assert.notEqual(plain.state, 'AWAITING_APPROVAL');
    const bundled = await worker.sandboxes.create({ id: 'mixed-bundle', principal: 'mixed-1', services: ['s3', 'iam'] });
    assert.equal(bundled.state, 'AWAITING_APPROVAL');
    assert.match(bundled.decision?.reasons.join(' ') ?? '', /iam: policy row \d+ says require_approval/);
    await worker.sandboxes.destroy('mixed-plain');
    await worker.sandboxes.destroy('mixed-bundle');
  });

  test('extend inside the ceiling moves expiry; past it is refused and changes nothing; destroy ends it', async () => {
    const ready = await worker.sandboxes.create({ id: 'ext-1', principal: 'agent-2', services: ['sqs'], ttlSeconds: 600 }, { wait: 'ready' });
    const extended = await worker.sandboxes.extend('ext-1', { ttlSeconds: 900, reason: 'more tests', actor: 'agent-2' });
    assert.equal(Date.parse(extended.expiresAt as string) - Date.parse(ready.expiresAt as string), 900_000);

    await assert.rejects(worker.sandboxes.extend('ext-1', { ttlSeconds: 3600 }), (err: unknown) => {
      rejectsWith('TTL_EXCEEDS_CEILING')(err);
      assert.match((err as Error).message, /past now \+ the max TTL of 1h/);
      return true;
    });
    await assert.rejects(worker.sandboxes.extend('ext-1', { ttlSeconds: -5 }), rejectsWith('INVALID_INPUT'));
    assert.equal((await worker.sandboxes.status('ext-1')).expiresAt, extended.expiresAt);

    const destroyed = await worker.sandboxes.destroy('ext-1', { reason: 'done early', actor: 'agent-2' });
    assert.equal(destroyed.state, 'DESTROYED');
    assert.ok(!worker.memory.liveSandboxIds().includes('ext-1'));
    assert.equal((await worker.sandboxes.destroy('ext-1')).state, 'DESTROYED', 'destroying twice is harmless');
    await assert.rejects(worker.sandboxes.extend('ext-1', { ttlSeconds: 60 }), rejectsWith('INVALID_STATE'));

    const audit = worker.store.sandboxes.audit('ext-1');
    assert.deepEqual(
      audit.map((op) => op.action),
      ['requested', 'screened', 'placed', 'ready', 'extended', 'destroying', 'destroyed'],
    );
    assert.deepEqual(
      audit.filter((op) => op.action === 'extended' || op.action === 'destroying').map((op) => [op.actor, op.reason]),
      [
        ['agent-2', 'more tests'],
        ['agent-2', 'done early'],
      ],
    );
    await collectHistory('ext-1');
  });

  test('the same id twice: one workflow, one provisioning; a different body is IDEMPOTENCY_CONFLICT', async () => {
    const before = calls.filter((call) => call === 'provision').length;
    const request = { id: 'idem-1', principal: 'agent-3', services: ['s3', 'dynamodb'], ttlSeconds: 600 };
    const [first, second] = await Promise.all([
      worker.sandboxes.create(request, { wait: 'ready' }),
      worker.sandboxes.create({ ...request, services: ['dynamodb', 's3'] }, { wait: 'ready' }),
    ]);
    assert.equal(first.workflowId, second.workflowId);
    assert.equal(first.createdAt, second.createdAt);
    const third = await worker.sandboxes.create(request, { wait: 'ready' });
    assert.equal(third.createdAt, first.createdAt);
    assert.equal(calls.filter((call) => call === 'provision').length - before, 1);

    await assert.rejects(worker.sandboxes.create({ ...request, ttlSeconds: 60 }), rejectsWith('IDEMPOTENCY_CONFLICT'));
    await worker.sandboxes.destroy('idem-1');
    const again = await worker.sandboxes.create(request);
    assert.equal(again.state, 'DESTROYED', 'a finished sandbox is returned, not re-created');
    assert.equal(calls.filter((call) => call === 'provision').length - before, 1);
  });

  test('an id whose earlier sandbox Temporal has forgotten (the projection still has it) is refused, and its record kept', async () => {
    // What a new run meets once the earlier workflow's history is gone (retention, a lost
    // dev database): REJECT_DUPLICATE no longer stops it, so the projection must.
    worker.store.sandboxes.record(projectionSnapshot({ id: 'reused-1', runId: 'an-earlier-run', principal: 'agent-6', state: 'DESTROYED', requestDigest: 'sha256:earlier' }), {
      step: 1,
      action: 'requested',
      actor: 'agent-6',
      effect: 'requested',
      reason: null,
      summary: {},
    });
    const before = worker.store.sandboxes.audit('reused-1');
    const provisions = calls.filter((call) => call === 'provision').length;
    await assert.rejects(worker.sandboxes.create({ id: 'reused-1', principal: 'agent-6', services: ['s3', 'sqs'], ttlSeconds: 600 }, { wait: 'ready' }), (err: unknown) => {
      rejectsWith('IDEMPOTENCY_CONFLICT')(err);
      assert.match((err as Error).message, /already belongs to an earlier sandbox \(run an-earlier-run\)/);
      return true;
    });
    assert.equal(calls.filter((call) => call === 'provision').length, provisions, 'nothing provisioned');
    assert.deepEqual(worker.store.sandboxes.audit('reused-1'), before, 'the earlier audit trail is untouched');
    assert.equal(worker.store.sandboxes.state('reused-1'), 'DESTROYED');
  });

  test('unknown service: SERVICE_UNKNOWN before any adapter call', async () => {
    const before = calls.length;
    await assert.rejects(worker.sandboxes.create({ id: 'unknown-svc', principal: 'agent-4', services: ['s3', 'teleporter'] }), (err: unknown) => {
      rejectsWith('SERVICE_UNKNOWN')(err);
      assert.match((err as Error).message, /does not offer teleporter/);
      return true;
    });
    assert.deepEqual(calls.slice(before), []);
  });

  test('quota: a second live sandbox over the cap is QUOTA_EXCEEDED; after destroy there is room again', async () => {
    await worker.sandboxes.create({ id: 'quota-a', principal: 'quota-1', services: ['s3'] }, { wait: 'ready' });
    await assert.rejects(worker.sandboxes.create({ id: 'quota-b', principal: 'quota-1', services: ['s3'] }), rejectsWith('QUOTA_EXCEEDED'));
    await worker.sandboxes.destroy('quota-a');
    const room = await worker.sandboxes.create({ id: 'quota-c', principal: 'quota-1', services: ['s3'] }, { wait: 'ready' });
    assert.equal(room.state, 'READY');
    await worker.sandboxes.destroy('quota-c');
  });

  test('status of an unknown sandbox is NOT_FOUND; a malformed id is INVALID_INPUT', async () => {
    await assert.rejects(worker.sandboxes.status('does-not-exist'), rejectsWith('NOT_FOUND'));
    assert.equal(await worker.sandboxes.get('does-not-exist'), undefined);
    await assert.rejects(worker.sandboxes.status('Bad Id!'), rejectsWith('INVALID_INPUT'));
  });

  test('each workflow task upserts search attributes once at most, and the last values name state, who asked and the host', async () => {
    await worker.sandboxes.create({ id: 'upserts-1', principal: 'agent-1', services: ['s3'] }, { wait: 'ready' });
    await worker.sandboxes.destroy('upserts-1');
    const handle = worker.client.workflow.getHandle('sandbox-upserts-1');
    const events = (await handle.fetchHistory()).events ?? [];
    // The commands of one workflow task follow its WORKFLOW_TASK_COMPLETED: count upserts between two of them.
    const perTask: number[] = [];
    for (const event of events) {
      if (event.workflowTaskCompletedEventAttributes) perTask.push(0);
      else if (event.upsertWorkflowSearchAttributesEventAttributes) perTask.push((perTask.pop() ?? 0) + 1);
    }
    assert.ok(
      perTask.every((count) => count <= 1),
      `upserts per workflow task: ${perTask.join(', ')}`,
    );
    const attributes = (await handle.describe()).typedSearchAttributes;
    assert.equal(attributes.get(SandboxStateKey), 'DESTROYED');
    assert.equal(attributes.get(SandboxPrincipal), 'agent-1');
    assert.equal(attributes.get(SandboxCapability), 'cloud.sandbox');
    assert.equal(attributes.get(SandboxHost), 'local');
    await collectHistory('upserts-1');
  });

  test('recorded histories replay deterministically against the current workflow code', async () => {
    assert.ok(histories.length >= 4, `collected ${histories.length} histories`);
    await assertReplays(histories);
  });
});

describe('sandbox lifecycle with other worker settings', () => {
  let address: string;
  before(async () => {
    address = await testTemporalAddress();
  });

  test('a disabled flag refuses with FLAG_DISABLED and no adapter call at all', async () => {
    const calls: string[] = [];
    const worker = await startTestWorker(address, {
      env: { SANDBOXPLANE_FLAG_CLOUD_SANDBOX: '0' },
      adapters: (memory) => ({ memory: spyOn(memory, calls) }),
    });
    try {
      worker.store.policies.add({ principalPattern: '*', capability: 'cloud.sandbox', effect: 'allow' });
      await assert.rejects(worker.sandboxes.create({ id: 'flag-off', principal: 'agent-1', services: ['s3'] }), (err: unknown) => {
        rejectsWith('FLAG_DISABLED')(err);
        assert.match((err as Error).message, /SANDBOXPLANE_FLAG_CLOUD_SANDBOX/);
        return true;
      });
      assert.deepEqual(calls, []);
      assert.deepEqual(actions(worker, 'flag-off'), ['requested', 'screened']);
    } finally {
      await worker.stop();
    }
  });
});
