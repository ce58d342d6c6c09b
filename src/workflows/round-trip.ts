import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { RoundTripInput, RoundTripResult } from '../domain/round-trip';

const { reportWorkerHealth } = proxyActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});

/** Proves end to end that a worker polls our task queue and can reach its store. */
export async function roundTrip(input: RoundTripInput): Promise<RoundTripResult> {
  const health = await reportWorkerHealth();
  return { ...health, requestedBy: input.requestedBy, workflowId: workflowInfo().workflowId };
}
