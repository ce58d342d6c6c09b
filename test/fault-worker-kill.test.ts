import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import { ChildProcessPlane } from './helpers/child-process-plane';
import { watchContainerEvent } from './harness/container-events';
import type { WorkerProcess } from './harness/worker-process';

const LONG_TTL_SECONDS = 600;
/** The sandboxes the kills are aimed at, one per step (see the tests). */
const SANDBOXES = ['ready', 'expiring', 'gated', 'fresh', 'teardown'] as const;
/** Expires while the workers are being killed and restarted: the TTL timer must still end it. */
const SHORT_TTL_SECONDS = 25;

/**
 * Fault campaign, part 1 (issue 12, deliverable 7): `sandboxctl worker` is a real child
 * process, SIGKILLed at each step of a lifecycle — after screening (AWAITING_APPROVAL;
 * and an allowed request as the engine creates its container), while READY,
 * mid-provision (container started, health gate running) and mid-teardown (the engine
 * is stopping the container) — and a fresh worker is started each time.
 * Each kill is timed by something seen from outside the worker: the SDK's answer, an
 * engine event on the sandbox's container, the server's record of the workflow.
 *
 * The tests run in order and share the sandboxes: each kill leaves work for the next
 * worker, and the last test checks where everything ended.
 */
describe('fault campaign: SIGKILL of the worker at every lifecycle step', () => {
  let plane: ChildProcessPlane;
  let worker: WorkerProcess;
  const ids = {} as Record<(typeof SANDBOXES)[number], string>;
  let readyContainer: string;
  let destroying: Promise<SandboxStatus | Error> | undefined;
  let provisionKilledPid: number;
  let createKilledPid: number;
  let teardownKilledPid: number;

  before(async () => {
    plane = await ChildProcessPlane.start({
      namespace: 'fault-kill',
      env: { SANDBOXPLANE_EXPIRY_WARNING: '2s' },
      seed: [
        ['policy', 'add', '--principal', 'agent-*', '--capability', 'cloud.sandbox', '--effect', 'allow'],
        ['policy', 'add', '--principal', 'gated-*', '--capability', 'cloud.sandbox', '--effect', 'require_approval'],
        ['approvers', 'add', 'alice'],
      ],
    });
    for (const name of SANDBOXES) ids[name] = plane.id(name);
  });

  after(async () => {
    await plane?.dispose();
    // A destroy still waiting (a failed run) hears of the termination before its channel closes.
    if (destroying !== undefined) await Promise.race([destroying, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  });

  /**
   * Subscribes to the engine's `action` on the sandbox's container, runs `cause`, and
   * SIGKILLs the worker the moment the engine reports it; returns the killed pid.
   */
  const killWorkerAt = async (id: string, action: string, cause: () => Promise<void>): Promise<number> => {
    const watch = await watchContainerEvent(plane.dockerHost, id, action);
    try {
      await cause();
      await watch.within(60_000);
      await worker.kill();
      return worker.pid;
    } finally {
      watch.close();
    }
  };

  /** Who ran each attempt of `activity` that reached the history (a lost attempt leaves no event). */
  const startedAttempts = async (id: string, activity: string): Promise<{ attempt: number; identity: string }[]> => {
    const { events } = await plane.client.workflow.getHandle(`sandbox-${id}`).fetchHistory();
    const scheduled = new Set((events ?? []).filter((event) => event.activityTaskScheduledEventAttributes?.activityType?.name === activity).map((event) => String(event.eventId)));
    return (events ?? []).flatMap((event) => {
      const started = event.activityTaskStartedEventAttributes;
      if (!started || !scheduled.has(String(started.scheduledEventId))) return [];
      return [{ attempt: started.attempt ?? 0, identity: started.identity ?? '' }];
    });
  };

  /** Describes the current run on the server: no worker needed. */
  const pendingActivities = async (id: string): Promise<string[]> => {
    const description = await plane.client.workflow.getHandle(`sandbox-${id}`).describe();
    return (description.raw.pendingActivities ?? []).map((activity) => activity.activityType?.name ?? '');
  };

  test('killed after screening (AWAITING_APPROVAL) and while READY: nothing is lost, and a fresh worker serves both', async () => {
    worker = await plane.startWorker();
    const ready = await plane.sandboxes.create({ id: ids.ready, principal: 'agent-1', adapter: 'moto', services: ['s3'], ttlSeconds: LONG_TTL_SECONDS }, { wait: 'ready' });
    assert.equal(ready.state, 'READY');
    await plane.sandboxes.create({ id: ids.teardown, principal: 'agent-2', adapter: 'moto', services: ['s3'], ttlSeconds: LONG_TTL_SECONDS }, { wait: 'ready' });
    await plane.sandboxes.create({ id: ids.expiring, principal: 'agent-3', adapter: 'moto', services: ['s3'], ttlSeconds: SHORT_TTL_SECONDS }, { wait: 'ready' });
    // The SDK's answer to create is the hook: it returns once the request is screened.
    const gated = await plane.sandboxes.create({ id: ids.gated, principal: 'gated-1', adapter: 'moto', services: ['s3'], ttlSeconds: LONG_TTL_SECONDS });
    assert.equal(gated.state, 'AWAITING_APPROVAL');
    const [container] = await plane.containers(ids.ready);
    assert.ok(container, 'the READY sandbox has its container');
    readyContainer = container.id;

    await worker.kill();

    assert.equal(await plane.searchState(ids.gated), 'AWAITING_APPROVAL');
    assert.equal(await plane.searchState(ids.ready), 'READY');
    assert.deepEqual(await pendingActivities(ids.gated), [], 'nothing was in flight for the waiting request');
    assert.equal(plane.projectionState(ids.gated), 'AWAITING_APPROVAL', 'screening was recorded before the kill');
    assert.equal((await plane.containers(ids.gated)).length, 0, 'nothing provisioned before approval');

    worker = await plane.startWorker();
    const waiting = await plane.sandboxes.status(ids.gated);
    assert.equal(waiting.state, 'AWAITING_APPROVAL');
    assert.match(waiting.waitingFor, /send the signal `approve`/);
    const still = await plane.sandboxes.status(ids.ready);
    assert.equal(still.state, 'READY');
    assert.equal(still.endpoint, ready.endpoint);
    assert.deepEqual(
      (await plane.containers(ids.ready)).map((c) => [c.id, c.state]),
      [[readyContainer, 'running']],
      'the READY sandbox kept its one container',
    );
  });

  test('killed mid-provision (container started, health gate running): the next worker adopts the container', async () => {
    provisionKilledPid = await killWorkerAt(ids.gated, 'start', async () => {
      // Approval is sent to the fresh worker: the request waited through the kill.
      const outcome = await plane.sandboxes.approve(ids.gated, { approver: 'alice', reason: 'fault campaign', code: await plane.authenticator('alice').code() });
      assert.equal(outcome.attempt.verdict, 'accepted');
    });

    assert.equal(await plane.searchState(ids.gated), 'PROVISIONING', 'killed before the sandbox was READY');
    assert.ok((await pendingActivities(ids.gated)).includes('provisionSandbox'), 'the provision was in flight when the worker died');
    assert.equal((await plane.containers(ids.gated)).length, 1, 'the container the dead worker started');

    worker = await plane.startWorker();
  });

  test('killed just after screening, as the engine creates the container: the next worker uses that container, not a second', async () => {
    createKilledPid = await killWorkerAt(ids.fresh, 'create', async () => {
      const accepted = await plane.sandboxes.create({ id: ids.fresh, principal: 'agent-4', adapter: 'moto', services: ['s3'], ttlSeconds: LONG_TTL_SECONDS });
      assert.equal(accepted.state, 'PROVISIONING');
    });

    assert.equal(await plane.searchState(ids.fresh), 'PROVISIONING');
    assert.ok((await pendingActivities(ids.fresh)).includes('provisionSandbox'), 'the provision was in flight when the worker died');
    assert.equal((await plane.containers(ids.fresh)).length, 1, 'the container the dead worker created');
    assert.equal(plane.projectionState(ids.fresh), 'PROVISIONING', 'the row was written before the runtime call');

    worker = await plane.startWorker();
  });

  test('killed mid-teardown (the engine is stopping the container): the next worker finishes it', async () => {
    // The engine's `kill` event is docker stop's SIGTERM: the container is on its way down.
    teardownKilledPid = await killWorkerAt(ids.teardown, 'kill', async () => {
      destroying = plane.sandboxes.destroy(ids.teardown, { reason: 'fault campaign' }).catch((err: unknown) => err as Error);
    });

    assert.equal(await plane.searchState(ids.teardown), 'DESTROYING', 'killed before the teardown was recorded');
    assert.ok((await pendingActivities(ids.teardown)).includes('destroySandbox'), 'the teardown was in flight when the worker died');

    worker = await plane.startWorker();
  });

  test('after the kills: each sandbox is READY with one container or terminal with none, and the projection agrees', async () => {
    const gated = await plane.waitForState(ids.gated, 'READY');
    const fresh = await plane.waitForState(ids.fresh, 'READY');
    assert.equal(gated.approval?.approver, 'alice');
    const teardown = await plane.waitForState(ids.teardown, 'DESTROYED');
    assert.equal(teardown.endpoint, null);
    await plane.waitForState(ids.expiring, 'DESTROYED');
    const ready = await plane.sandboxes.status(ids.ready);
    assert.equal(ready.state, 'READY');

    const outcome = await destroying;
    assert.ok(outcome !== undefined && !(outcome instanceof Error), `the destroy call sent before the kill is answered: ${String(outcome)}`);
    assert.equal(outcome.state, 'DESTROYED');

    for (const [id, activity, killedPid] of [
      [ids.gated, 'provisionSandbox', provisionKilledPid],
      [ids.fresh, 'provisionSandbox', createKilledPid],
      [ids.teardown, 'destroySandbox', teardownKilledPid],
    ] as const) {
      const attempts = await startedAttempts(id, activity);
      assert.equal(attempts.length, 1, `one ${activity} reached the history`);
      assert.ok((attempts[0]?.attempt ?? 0) >= 2, `${activity} was retried after the kill: ${JSON.stringify(attempts)}`);
      assert.ok(!attempts[0]?.identity.endsWith(`:${killedPid}`), `a later worker ran it, not the killed one: ${attempts[0]?.identity}`);
    }

    for (const status of [gated, fresh]) {
      const containers = await plane.containers(status.id);
      assert.deepEqual(
        containers.map((c) => c.state),
        ['running'],
        `${status.id}: exactly one container, the retry adopted the first`,
      );
      assert.deepEqual(status.runtimeIds, [containers[0]?.id], `${status.id}: status names that container`);
    }
    assert.deepEqual(
      (await plane.containers(ids.ready)).map((c) => c.id),
      [readyContainer],
    );
    assert.deepEqual(await plane.containers(ids.teardown), [], 'the teardown finished: no container, not even a stopped one');
    assert.deepEqual(await plane.containers(ids.expiring), []);

    for (const [id, state] of [
      [ids.gated, 'READY'],
      [ids.fresh, 'READY'],
      [ids.ready, 'READY'],
      [ids.teardown, 'DESTROYED'],
      [ids.expiring, 'DESTROYED'],
    ] as const) {
      await plane.waitForProjection(id, state);
    }

    for (const id of [ids.gated, ids.fresh, ids.ready]) {
      assert.equal((await plane.sandboxes.destroy(id)).state, 'DESTROYED');
      assert.deepEqual(await plane.containers(id), []);
      await plane.waitForProjection(id, 'DESTROYED');
    }
    await worker.stop();
  });
});
