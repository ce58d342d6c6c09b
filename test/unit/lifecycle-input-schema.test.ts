import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lifecycleInputSchema } from '../../src/domain/lifecycle-messages';

const carriedIn = (phase: string) => ({
  request: { id: 'sbx-carried', principal: 'agent-1', services: ['s3'] },
  carried: {
    record: { workflowId: 'sandbox-sbx-carried', runId: 'run-1', requestDigest: 'sha256:0', createdAtMs: 0, phase: { name: phase }, waitingFor: '', approvalAttempts: [] },
    step: 3,
    unrecorded: [],
    extendTimesMs: [],
    destroyRequest: null,
    inbox: [],
  },
});

test('every phase whose loop continues as new is accepted by the next run: a PAUSED one too', () => {
  for (const phase of ['awaiting_approval', 'ready', 'paused']) assert.equal(lifecycleInputSchema.safeParse(carriedIn(phase)).success, true, phase);
  assert.equal(lifecycleInputSchema.safeParse(carriedIn('provisioning')).success, false, 'a phase that never hands over is refused');
});
