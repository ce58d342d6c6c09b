import type { Client } from '@temporalio/client';
import { ROUND_TRIP_WORKFLOW } from '../domain/contract-names';
import type { RoundTripInput, RoundTripResult } from '../domain/round-trip';

/**
 * Runs the round-trip probe workflow on `taskQueue` and waits for its result. The
 * execution timeout bounds the wait when no worker polls, so this never hangs.
 */
export async function runRoundTrip(client: Client, options: { taskQueue: string; requestedBy: string; timeoutMs?: number }): Promise<RoundTripResult> {
  const workflowId = `sandboxplane-roundtrip-${options.requestedBy}-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  const input: RoundTripInput = { requestedBy: options.requestedBy };
  return client.workflow.execute<(input: RoundTripInput) => Promise<RoundTripResult>>(ROUND_TRIP_WORKFLOW, {
    taskQueue: options.taskQueue,
    workflowId,
    args: [input],
    workflowExecutionTimeout: options.timeoutMs ?? 15_000,
  });
}
