/**
 * History stays bounded (DESIGN §2): a flood of signals or updates never drives a run to
 * Temporal's history limits — which would get it terminated and leak its sandbox.
 * Signals outside AWAITING_APPROVAL are dropped, payloads are capped, extensions are
 * rate-limited, and the run continues as new carrying its state, timers and queue.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SandboxPlaneError } from '../src/domain/errors';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import { EXTENDS_PER_WINDOW } from '../src/workflows/extend-rate-limit';
import { HISTORY_EVENTS_BEFORE_CONTINUE } from '../src/workflows/lifecycle-context';
import { approveSignal, extendUpdate } from '../src/workflows/sandbox-messages';
import { testTemporalAddress } from './harness/test-temporal';
import { enrolApprover, type TestAuthenticator } from './helpers/approvers';
import { startTestWorker, type TestWorker } from './harness/test-worker';

/** Sends `count` signals, `parallel` at a time. */
async function flood(count: number, parallel: number, send: (i: number) => Promise<void>): Promise<void> {
  for (let i = 0; i < count; i += parallel) {
    await Promise.all(Array.from({ length: Math.min(parallel, count - i) }, (_, j) => send(i + j)));
  }
}

describe('bounded lifecycle history (real dev server)', () => {
  let worker: TestWorker;
  let alice: TestAuthenticator;

  before(async () => {
    worker = await startTestWorker(await testTemporalAddress());
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
    worker.store.policies.add({ principalPattern: 'gated-*', capability: 'cloud.sandbox', effect: 'require_approval' });
    alice = await enrolApprover(worker, 'alice');
  });
  after(async () => worker?.stop());

  const handleOf = (id: string) => worker.client.workflow.getHandle(`sandbox-${id}`);

  test('1,500 junk approve signals (11 KB each) to a READY sandbox: it stays READY, its run stays short, nothing is audited', async () => {
    const created = await worker.sandboxes.create({ id: 'flood-ready', principal: 'agent-1', services: ['s3'], ttlSeconds: 3600 }, { wait: 'ready' });
    const handle = handleOf('flood-ready');
    const { runId: firstRun } = await handle.describe();
    const junk = { approver: 'mallory', reason: 'x'.repeat(11 * 1024) };
    await flood(1500, 50, () => handle.signal(approveSignal, junk));

    const status = await worker.sandboxes.status('flood-ready');
    assert.equal(status.state, 'READY');
    assert.equal(status.endpoint, created.endpoint);
    assert.equal(status.expiresAt, created.expiresAt, 'the TTL timer went along to the new run');
    const description = await handle.describe();
    assert.ok(description.historyLength < 3000, `the current run has ${description.historyLength} events`);
    assert.notEqual(description.runId, firstRun, 'the run continued as new');
    assert.ok(!worker.store.sandboxes.audit('flood-ready').some((op) => op.action.startsWith('approve')), 'dropped signals leave no audit rows');

    // The new run carries on: extend and destroy still work, and the row closes.
    const extended = await worker.sandboxes.extend('flood-ready', { ttlSeconds: 60 });
    assert.equal(Date.parse(extended.expiresAt as string) - Date.parse(created.expiresAt as string), 60_000);
    const final = await worker.sandboxes.destroy('flood-ready');
    assert.equal(final.state, 'DESTROYED');
    assert.equal(worker.store.sandboxes.state('flood-ready'), 'DESTROYED');
    assert.ok(!worker.memory.liveSandboxIds().includes('flood-ready'));
    const steps = worker.store.sandboxes.audit('flood-ready').map((op) => op.step);
    assert.deepEqual(
      steps,
      [...steps].sort((a, b) => a - b),
      'audit steps keep counting across runs',
    );
    assert.equal(new Set(steps).size, steps.length);
  });

  test('a flood of junk approvals while AWAITING_APPROVAL continues as new, and a real approval then still lets it through', async () => {
    await worker.sandboxes.create({ id: 'flood-gated', principal: 'gated-1', services: ['s3'] });
    const handle = handleOf('flood-gated');
    const { runId: firstRun } = await handle.describe();
    // Every signal is an event, and each judged one an activity and an audit write; past
    // 100 waiting, the rest are dropped unjudged (the inbox is bounded too).
    await flood(Math.ceil(HISTORY_EVENTS_BEFORE_CONTINUE * 0.6), 20, (i) => handle.signal(approveSignal, { approver: `nobody-${i}`, reason: 'junk' }));
    let status: SandboxStatus;
    const deadline = Date.now() + 60_000;
    do {
      status = await worker.sandboxes.status('flood-gated');
      if ((await handle.describe()).runId !== firstRun) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    } while (Date.now() < deadline);
    const described = await handle.describe();
    assert.notEqual(described.runId, firstRun, `the run continued as new (history ${described.historyLength} events, ${status.approvalAttempts.length} attempts shown)`);
    assert.equal(status.state, 'AWAITING_APPROVAL');
    assert.ok(status.approvalAttempts.length <= 20, 'status shows only the latest attempts');

    const outcome = await worker.sandboxes.approve('flood-gated', { approver: 'alice', reason: 'ok', code: await alice.code() });
    assert.equal(outcome.attempt.verdict, 'accepted');
    const ready = await worker.sandboxes.create({ id: 'flood-gated', principal: 'gated-1', services: ['s3'] }, { wait: 'ready' });
    assert.equal(ready.state, 'READY');
    assert.equal(ready.approval?.approver, 'alice');
    await worker.sandboxes.destroy('flood-gated');
  });

  test(`extensions are rate-limited: ${EXTENDS_PER_WINDOW} a minute, then RATE_LIMITED with nothing changed`, async () => {
    await worker.sandboxes.create({ id: 'extend-limit', principal: 'agent-2', services: ['s3'], ttlSeconds: 600 }, { wait: 'ready' });
    let last: SandboxStatus | undefined;
    for (let i = 0; i < EXTENDS_PER_WINDOW; i += 1) last = await worker.sandboxes.extend('extend-limit', { ttlSeconds: 1 });
    await assert.rejects(worker.sandboxes.extend('extend-limit', { ttlSeconds: 1 }), (err: unknown) => {
      assert.ok(err instanceof SandboxPlaneError);
      assert.equal(err.code, 'RATE_LIMITED');
      assert.match(err.message, /at most 10 extensions per 60 s/);
      return true;
    });
    assert.equal((await worker.sandboxes.status('extend-limit')).expiresAt, last?.expiresAt, 'the refused extension changed nothing');
    await worker.sandboxes.destroy('extend-limit');
  });

  test('an oversized update payload is refused before it reaches the history', async () => {
    await worker.sandboxes.create({ id: 'big-payload', principal: 'agent-3', services: ['s3'] }, { wait: 'ready' });
    const handle = handleOf('big-payload');
    const before = (await handle.describe()).historyLength;
    await assert.rejects(handle.executeUpdate(extendUpdate, { args: [{ ttlSeconds: 60, padding: 'x'.repeat(100_000) } as never] }), (err: unknown) => {
      const cause = (err as { cause?: { type?: string; message?: string } }).cause;
      assert.equal(cause?.type, 'INVALID_INPUT');
      assert.match(cause?.message ?? '', /characters of JSON; at most 8192/);
      return true;
    });
    assert.equal((await handle.describe()).historyLength, before, 'a rejected update leaves no event');
    assert.equal((await worker.sandboxes.status('big-payload')).state, 'READY');
    await worker.sandboxes.destroy('big-payload');
  });
});
