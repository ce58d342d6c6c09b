import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { tracingWorkerOptions } from '../../src/telemetry/tracing';
import { testDataConverter } from '../harness/test-worker';
import { testWorkflowBundle } from '../harness/workflow-bundle';

/** One workflow's history, as the replayer takes it. */
export interface RecordedHistory {
  readonly workflowId: string;
  readonly history: temporal.api.history.v1.IHistory;
}

/** The histories of these workflows, fetched from the server. */
export function fetchHistories(client: Client, workflowIds: readonly string[]): Promise<RecordedHistory[]> {
  return Promise.all(workflowIds.map(async (workflowId) => ({ workflowId, history: await client.workflow.getHandle(workflowId).fetchHistory() })));
}

/** Replays every history on this build's workflow code (DESIGN §16) and fails on the first that does not replay. */
export async function assertReplays(histories: readonly RecordedHistory[]): Promise<void> {
  let replayed = 0;
  // With the sink a worker gives the tracing interceptors in the bundle (their spans dropped here).
  const replayer = { workflowBundle: await testWorkflowBundle(), dataConverter: testDataConverter(), sinks: tracingWorkerOptions().sinks };
  for await (const result of Worker.runReplayHistories(replayer, histories)) {
    assert.equal(result.error, undefined, `${result.workflowId}: ${String(result.error)}`);
    replayed += 1;
  }
  assert.equal(replayed, histories.length, 'every history was replayed');
}
