import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ChildProcessPlane } from './helpers/child-process-plane';
import { startRestartableDevServer, type RestartableDevServer } from './helpers/restartable-dev-server';
import type { WorkerProcess } from './harness/worker-process';

/** Due while the server is down: the timer must fire once it is back. */
const DUE_IN_OUTAGE_TTL_SECONDS = 8;
/** Due well after the restart: the timer must fire on time, not early and not never. */
const DUE_AFTER_RESTART_TTL_SECONDS = 35;

/**
 * Fault campaign, part 2 (issue 12, deliverable 7): the test's own Temporal dev server
 * (persistent `--db-filename`) is stopped while one sandbox awaits approval and two wait
 * on their TTL timers, then started again on the same ports and file. The worker, a
 * `sandboxctl worker` child process, stays up through the outage. After the restart the
 * approval is sent and must provision; both TTL timers must still end their sandboxes.
 */
describe('fault campaign: the Temporal dev server stopped and restarted on the same database', () => {
  let server: RestartableDevServer;
  let plane: ChildProcessPlane;
  let worker: WorkerProcess;

  before(async () => {
    server = await startRestartableDevServer();
    plane = await ChildProcessPlane.start({
      address: server.address,
      namespace: 'default',
      env: { SANDBOXPLANE_EXPIRY_WARNING: '2s' },
      seed: [
        ['policy', 'add', '--principal', 'agent-*', '--capability', 'cloud.sandbox', '--effect', 'allow'],
        ['policy', 'add', '--principal', 'gated-*', '--capability', 'cloud.sandbox', '--effect', 'require_approval'],
        ['approvers', 'add', 'alice'],
      ],
    });
  });

  after(async () => {
    if (server !== undefined && !server.running) await server.start().catch(() => undefined);
    await plane?.dispose();
    await server?.dispose();
  });

  test('mid-approval and mid-TTL: the approval sent after the restart provisions, and both TTL timers still fire', async () => {
    const gated = plane.id('gated');
    const dueLater = plane.id('due-later');
    const dueInOutage = plane.id('due-in-outage');
    worker = await plane.startWorker();

    const later = await plane.sandboxes.create({ id: dueLater, principal: 'agent-1', adapter: 'moto', services: ['s3'], ttlSeconds: DUE_AFTER_RESTART_TTL_SECONDS }, { wait: 'ready' });
    const waiting = await plane.sandboxes.create({ id: gated, principal: 'gated-1', adapter: 'moto', services: ['s3'], ttlSeconds: 600 });
    assert.equal(waiting.state, 'AWAITING_APPROVAL');
    const soon = await plane.sandboxes.create({ id: dueInOutage, principal: 'agent-2', adapter: 'moto', services: ['sqs'], ttlSeconds: DUE_IN_OUTAGE_TTL_SECONDS }, { wait: 'ready' });
    assert.ok(later.expiresAt !== null && soon.expiresAt !== null);

    await server.stop();
    const stoppedAt = Date.now();
    // The outage lasts past the short TTL, so that timer falls due while nobody serves it.
    const dueMs = Date.parse(soon.expiresAt) + 2_000;
    await new Promise((resolve) => setTimeout(resolve, Math.max(3_000, dueMs - Date.now())));
    assert.equal((await plane.containers(dueInOutage)).length, 1, 'nothing tears down while the server is away');
    assert.ok(!worker.exited, `the worker outlives a server outage; its output:\n${worker.output()}`);

    const registered = await server.start();
    const outageMs = Date.now() - stoppedAt;
    assert.deepEqual(registered, [], 'the search attributes survived in the database');

    const outcome = await plane.sandboxes.approve(gated, { approver: 'alice', reason: 'sent after the restart', code: await plane.authenticator('alice').code() });
    assert.equal(outcome.attempt.verdict, 'accepted');
    const ready = await plane.waitForState(gated, 'READY');
    assert.equal(ready.approval?.approver, 'alice');
    assert.equal((await plane.containers(gated)).length, 1);

    const expired = await plane.waitForState(dueInOutage, 'DESTROYED', 60_000);
    assert.deepEqual(await plane.containers(dueInOutage), [], 'the timer that fell due in the outage tore the sandbox down');
    assert.ok(expired.waitingFor.includes('TTL expired'), expired.waitingFor);

    assert.equal((await plane.sandboxes.status(dueLater)).state, 'READY', `still inside its TTL ${outageMs} ms after the stop`);
    await plane.waitForState(dueLater, 'DESTROYED', DUE_AFTER_RESTART_TTL_SECONDS * 1000 + 30_000);
    assert.ok(Date.now() >= Date.parse(later.expiresAt), 'not before its expiry');
    assert.deepEqual(await plane.containers(dueLater), []);

    for (const [id, state] of [
      [gated, 'READY'],
      [dueInOutage, 'DESTROYED'],
      [dueLater, 'DESTROYED'],
    ] as const) {
      await plane.waitForProjection(id, state);
    }
    assert.equal((await plane.sandboxes.destroy(gated)).state, 'DESTROYED');
    assert.deepEqual(await plane.containers(gated), []);
    await worker.stop();
  });
});
