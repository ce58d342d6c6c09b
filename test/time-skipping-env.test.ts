import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { type sleepyWorkflow } from './fixtures/sleepy-workflow';
import { createTimeSkippingEnv } from './helpers/time-skipping';

const TWO_HOURS_MS = 2 * 60 * 60 * 1000;

describe('time-skipping test environment', () => {
  let env: TestWorkflowEnvironment | undefined;

  before(async () => {
    env = await createTimeSkippingEnv();
  });
  after(async () => {
    await env?.teardown();
  });

  test('a workflow that sleeps two hours finishes at once, its clock two hours on', async () => {
    assert.ok(env);
    assert.equal(env.supportsTimeSkipping, true);
    const taskQueue = `test-time-skipping-${randomUUID()}`;
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath: path.join(__dirname, 'fixtures', 'sleepy-workflow.ts'),
    });
    const client = env.client;
    const result = await worker.runUntil(
      client.workflow.execute<typeof sleepyWorkflow>('sleepyWorkflow', { taskQueue, workflowId: `sleepy-${randomUUID()}` }),
    );
    assert.equal(result.result, 'done');
    assert.ok(result.sleptMs >= TWO_HOURS_MS, `the workflow's clock moved ${result.sleptMs} ms across a two-hour sleep`);
  });
});
