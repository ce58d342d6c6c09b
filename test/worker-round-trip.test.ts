import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { runRoundTrip } from '../src/client/round-trip';
import { loadConfig } from '../src/config/config';
import { createLogger } from '../src/logging/logger';
import { LATEST_SCHEMA_VERSION, Store } from '../src/store';
import { createPlaneWorker } from '../src/worker/plane-worker';
import { planeDeployment } from './harness/cli';
import { testTemporalAddress } from './harness/test-temporal';
import { testDataConverter } from './harness/test-worker';
import { testWorkflowBundle } from './harness/workflow-bundle';

describe('worker bootstrap', () => {
  let address: string;
  let connection: Connection;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-worker-'));

  before(async () => {
    address = await testTemporalAddress();
    connection = await Connection.connect({ address });
  });
  after(async () => {
    await connection?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a round trip reaches the worker, its activities and its store; logs carry workflow and activity ids', async () => {
    const lines: string[] = [];
    const logger = createLogger('info', { write: (line: string) => void lines.push(line) });
    const store = Store.open(path.join(dir, 'plane.sqlite'));
    const taskQueue = `test-round-trip-${randomUUID()}`;
    const config = loadConfig({ TEMPORAL_ADDRESS: address, SANDBOXPLANE_TASK_QUEUE: taskQueue, ...planeDeployment({ SANDBOXPLANE_TASK_QUEUE: taskQueue }) });
    const plane = await createPlaneWorker({ config, store, logger, workflowBundle: await testWorkflowBundle() });
    try {
      const result = await plane.worker.runUntil(runRoundTrip(new Client({ connection, dataConverter: testDataConverter() }), { taskQueue, requestedBy: 'test' }));
      assert.equal(result.requestedBy, 'test');
      // The lifecycle worker ran the workflow; the store worker, on <tq>-store, answered with its store.
      assert.match(result.workerIdentity, /^sandboxplane-store@/);
      assert.equal(result.storeSchemaVersion, LATEST_SCHEMA_VERSION);
      assert.equal(result.storeCurrent, true);

      const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
      const fromActivity = entries.find((entry) => entry.msg === 'worker health reported');
      assert.ok(fromActivity, `no activity log line among ${lines.length}`);
      assert.equal(fromActivity.workflowId, result.workflowId);
      assert.equal(fromActivity.activityType, 'reportWorkerHealth');
      assert.equal(typeof fromActivity.activityId, 'string');
      assert.equal(fromActivity.taskQueue, `${taskQueue}-store`);
    } finally {
      await plane.close();
      store.close();
    }
  });

  test('the round trip gives up within its timeout when no worker polls the queue', async () => {
    await assert.rejects(
      runRoundTrip(new Client({ connection, dataConverter: testDataConverter() }), { taskQueue: `nobody-polls-${randomUUID()}`, requestedBy: 'test', timeoutMs: 1_500 }),
      /Workflow execution timed out|timed out/i,
    );
  });
});
