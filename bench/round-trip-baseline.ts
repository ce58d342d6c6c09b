import type { Client } from '@temporalio/client';
import { runRoundTrip } from '../src/client/round-trip';
import type { RoundTripResult } from '../src/domain/round-trip';

// Generous: under a burst the last roundTrip waits behind all the others.
const ROUND_TRIP_TIMEOUT_MS = 5 * 60_000;

/**
 * The baseline of P1 and P3: the `roundTrip` workflow, one activity on the same worker
 * and server, i.e. what any workflow costs before a sandbox adds to it. `requestedBy` is
 * part of its workflow id: each of a burst needs its own.
 */
export function roundTrip(client: Client, taskQueue: string, requestedBy: string): Promise<RoundTripResult> {
  return runRoundTrip(client, { taskQueue, requestedBy, timeoutMs: ROUND_TRIP_TIMEOUT_MS });
}
