/**
 * The lifecycle's timers (TTL, expiry warning, approval timeout) on Temporal's
 * time-skipping test server: hours of workflow time in a moment of wall time, with
 * the real workflow code, real lifecycle activities and a real SQLite projection.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createProjectionActivities, createRuntimeActivities } from '../src/activities/lifecycle-activities';
import { createUsageActivities } from '../src/activities/usage-activities';
import { MemoryAdapter } from '../src/adapters/memory-adapter';
import { SANDBOX_LIFECYCLE_WORKFLOW, workflowIdFor } from '../src/domain/contract-names';
import { FEATURE_FLAG_NAMES, type FeatureFlags } from '../src/domain/feature-flags';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import type { LifecycleSettings } from '../src/domain/lifecycle-settings';
import { sandboxRequestSchema } from '../src/domain/sandbox-request';
import { DEFAULT_HOST_ID, dockerQueue, storeQueue } from '../src/domain/task-queues';
import { SecretBox } from '../src/crypto/secret-box';
import { Store } from '../src/store';
import { RoleWorkers } from '../src/worker/role-workers';
import { extendUpdate, statusQuery } from '../src/workflows/sandbox-messages';
import { createTimeSkippingEnv } from './helpers/time-skipping';
import { testWorkflowBundle } from './harness/workflow-bundle';

const HOUR = 3600;
const SETTINGS: LifecycleSettings = {
  defaultTtlSeconds: 2 * HOUR,
  ttlCeilingSeconds: 4 * HOUR,
  maxLifetimeSeconds: 24 * HOUR,
  approvalTimeoutSeconds: 1 * HOUR,
  expiryWarningSeconds: 5 * 60,
  healthCheckIntervalSeconds: 30,
  placementWaitSeconds: 120,
};

describe('lifecycle timers on the time-skipping test server', () => {
  let env: TestWorkflowEnvironment;
  let store: Store;
  let dir: string;
  const memory = new MemoryAdapter();
  const taskQueue = 'lifecycle-timers';

  before(async () => {
    env = await createTimeSkippingEnv();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-timers-'));
    store = Store.open(path.join(dir, 'plane.sqlite'));
    store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
    store.policies.add({ principalPattern: 'gated-*', capability: 'cloud.sandbox', effect: 'require_approval' });
  });
  after(async () => {
    await env?.teardown();
    store?.close();
    if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true });
  });

  const flags = Object.fromEntries(FEATURE_FLAG_NAMES.map((flag) => [flag, true])) as FeatureFlags;

  /** The lifecycle's store and runtime activities, both registered on both queues (each ignores the other's). */
  const lifecycleActivities = () => ({
    ...createProjectionActivities({
      store,
      flags,
      lifecycle: SETTINGS,
      liveHostIds: async () => new Set([DEFAULT_HOST_ID]),
      secrets: SecretBox.fromKeyFile(path.join(dir, 'store.key')),
    }),
    ...createRuntimeActivities({ adapters: { memory } }),
    ...createUsageActivities({ store }),
  });

  /** The lifecycle queue with the workflows, and the same activities on the store and docker queues (DESIGN §10). */
  async function withWorker<T>(work: () => Promise<T>, activities: object = lifecycleActivities()): Promise<T> {
    store.hosts.register({ hostId: DEFAULT_HOST_ID, taskQueue: dockerQueue(taskQueue, DEFAULT_HOST_ID), adapters: ['memory'], capacity: 100, engineId: null, identity: 'timers' });
    const connection = env.nativeConnection;
    const worker = await Worker.create({ connection, taskQueue, workflowBundle: await testWorkflowBundle() });
    const storeWorker = await Worker.create({ connection, taskQueue: storeQueue(taskQueue), activities });
    const dockerWorker = await Worker.create({ connection, taskQueue: dockerQueue(taskQueue, DEFAULT_HOST_ID), activities });
    return new RoleWorkers([worker, storeWorker, dockerWorker]).runUntil(work());
  }

  function start(id: string, principal: string, ttlSeconds?: number) {
    const request = { ...sandboxRequestSchema.parse({ principal, services: ['s3'], ...(ttlSeconds === undefined ? {} : { ttlSeconds }) }), id };
    return env.client.workflow.start(SANDBOX_LIFECYCLE_WORKFLOW, { taskQueue, workflowId: workflowIdFor(id), args: [{ request }] });
  }

  const actions = (id: string) => store.sandboxes.audit(id).map((op) => op.action);

  test('READY lasts exactly its TTL: the warning comes before expiry, then teardown by the timer', async () => {
    await withWorker(async () => {
      const startedWall = Date.now();
      const handle = await start('ttl-2h', 'agent-1');
      const final = (await handle.result()) as SandboxStatus;
      assert.equal(final.state, 'DESTROYED');
      assert.ok(Date.now() - startedWall < 60_000, 'two hours of workflow time took seconds');
      assert.deepEqual(actions('ttl-2h'), ['requested', 'screened', 'placed', 'ready', 'expiring', 'destroying', 'destroyed']);
      const audit = store.sandboxes.audit('ttl-2h');
      const ready = audit.find((op) => op.action === 'ready');
      const expiresAt = Date.parse(String(ready?.summary.expiresAt));
      assert.equal(expiresAt - Date.parse(final.createdAt) >= 2 * HOUR * 1000, true, 'the default TTL (2h) was granted');
      assert.equal(audit.find((op) => op.action === 'destroying')?.actor, 'timer');
      assert.equal(audit.find((op) => op.action === 'destroying')?.reason, 'TTL expired');
      assert.ok(!memory.liveSandboxIds().includes('ttl-2h'));
    });
  });

  test('extend moves the timer: the sandbox lives until the new expiry, not the old one', async () => {
    await withWorker(async () => {
      const handle = await start('ext-1', 'agent-2', HOUR);
      let status: SandboxStatus;
      do status = await handle.query(statusQuery);
      while (status.state !== 'READY');
      const extended = await handle.executeUpdate(extendUpdate, { args: [{ ttlSeconds: 30 * 60, actor: 'agent-2' }] });
      assert.equal(Date.parse(extended.expiresAt as string) - Date.parse(status.expiresAt as string), 30 * 60 * 1000);
      const final = (await handle.result()) as SandboxStatus;
      assert.equal(final.state, 'DESTROYED');
      assert.equal(final.expiresAt, extended.expiresAt);
      assert.deepEqual(actions('ext-1'), ['requested', 'screened', 'placed', 'ready', 'extended', 'expiring', 'destroying', 'destroyed']);
      const expiring = store.sandboxes.audit('ext-1').find((op) => op.action === 'expiring');
      assert.equal(expiring?.summary.expiresAt, extended.expiresAt, 'the warning is for the new expiry');
    });
  });

  test('nobody answers within the approval timeout: EXPIRED with APPROVAL_EXPIRED, nothing provisioned', async () => {
    await withWorker(async () => {
      const final = (await (await start('gated-1', 'gated-1')).result()) as SandboxStatus;
      assert.equal(final.state, 'EXPIRED');
      assert.equal(final.error?.code, 'APPROVAL_EXPIRED');
      assert.match(final.error?.message ?? '', /no approval within 1h/);
      assert.deepEqual(actions('gated-1'), ['requested', 'screened', 'approval_expired']);
      assert.ok(!memory.liveSandboxIds().includes('gated-1'));
    });
  });

  /** The lifecycle's activities with a projection whose audit writes fail while `failing()` says so. */
  function withFailingProjection(failing: () => boolean) {
    const real = lifecycleActivities();
    return {
      ...real,
      async recordTransitions(input: Parameters<typeof real.recordTransitions>[0]) {
        if (failing()) throw new Error('SQLITE_IOERR: disk I/O error (the disk is full)');
        return real.recordTransitions(input);
      },
    };
  }

  const readyStatus = async (handle: { query: (q: typeof statusQuery) => Promise<SandboxStatus> }) => {
    let status: SandboxStatus;
    do status = await handle.query(statusQuery);
    while (status.state !== 'READY');
    return status;
  };

  test('a projection that stays down never blocks expiry: torn down on time, the stale row is left for the sweep', async () => {
    let down = false;
    await withWorker(
      async () => {
        const handle = await start('store-down', 'agent-3', HOUR);
        await readyStatus(handle);
        down = true;
        const final = (await handle.result()) as SandboxStatus;
        assert.equal(final.state, 'DESTROYED');
        assert.ok(!memory.liveSandboxIds().includes('store-down'), 'torn down although nothing could be recorded');
        assert.equal(store.sandboxes.state('store-down'), 'READY', 'the row is stale: the sweep closes it (Temporal is the authority)');
      },
      withFailingProjection(() => down),
    );
  });

  test('audit rows the projection missed during an outage are written once it is back, in order', async () => {
    let writes = 0;
    // The first write after READY (the expiry warning) fails all its 8 attempts; later ones succeed.
    let failuresLeft = 0;
    await withWorker(
      async () => {
        const handle = await start('store-blip', 'agent-4', HOUR);
        await readyStatus(handle);
        failuresLeft = 8;
        const final = (await handle.result()) as SandboxStatus;
        assert.equal(final.state, 'DESTROYED');
        assert.deepEqual(actions('store-blip'), ['requested', 'screened', 'placed', 'ready', 'expiring', 'destroying', 'destroyed']);
        assert.equal(store.sandboxes.state('store-blip'), 'DESTROYED');
        assert.ok(writes >= 9, 'the warning was retried, then written with the teardown');
      },
      withFailingProjection(() => {
        writes += 1;
        if (failuresLeft === 0) return false;
        failuresLeft -= 1;
        return true;
      }),
    );
  });

  test('an extension accepted while the move to READY is being recorded extends the READY sandbox', async () => {
    const real = lifecycleActivities();
    let recordingReady: () => void = () => undefined;
    const readyBeingRecorded = new Promise<void>((resolve) => (recordingReady = resolve));
    const slowReadyRecord = {
      ...real,
      async recordTransitions(input: Parameters<typeof real.recordTransitions>[0]) {
        if (input.operations.some((op) => op.action === 'ready')) {
          recordingReady();
          await new Promise((resolve) => setTimeout(resolve, 1_500));
        }
        return real.recordTransitions(input);
      },
    };
    await withWorker(async () => {
      const handle = await start('extend-moving', 'agent-5', HOUR);
      await readyBeingRecorded;
      const extended = await handle.executeUpdate(extendUpdate, { args: [{ ttlSeconds: 600 }] });
      assert.equal(extended.state, 'READY');
      const readyRow = store.sandboxes.audit('extend-moving').find((op) => op.action === 'ready');
      assert.equal(Date.parse(extended.expiresAt as string) - Date.parse(String(readyRow?.summary.expiresAt)), 600_000);
      assert.deepEqual(actions('extend-moving'), ['requested', 'screened', 'placed', 'ready', 'extended']);
      assert.equal(store.sandboxes.state('extend-moving'), 'READY', 'the extension recorded READY, not the stale PROVISIONING');
      await handle.terminate('test over');
    }, slowReadyRecord);
  });
});
