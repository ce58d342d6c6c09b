import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Client } from '@temporalio/client';
import { promoteOncePolling, type PromotionCalls, type PromotionOutcome } from '../../src/worker/build-promotion';
import type { Logger } from '../../src/logging/logger';

const quiet = { info: () => undefined, warn: () => undefined } as unknown as Logger;

test('a promotion Temporal refuses once (a busy server) is tried again: the build becomes current rather than the plane running nothing new', async () => {
  let current: string | null = null;
  let refusals = 1;
  const calls: PromotionCalls = {
    builds: async () => ({ current, buildIds: ['wf-1'] }),
    promote: async () => {
      if (refusals > 0) {
        refusals -= 1;
        throw new Error('context deadline exceeded');
      }
      current = 'wf-1';
      return { builds: [] } as unknown as Awaited<ReturnType<PromotionCalls['promote']>>;
    },
  };
  await promoteOncePolling({
    client: {} as Client,
    target: { namespace: 'default', deployment: 'plane', taskQueue: 'plane' },
    buildId: 'wf-1',
    policy: 'if-none',
    identity: 'test',
    logger: quiet,
    running: () => true,
    calls,
  });
  assert.equal(current, 'wf-1');
});

test('"worker ready" is told once the build is current, and with the reason when another build stays current', async () => {
  const base = {
    client: {} as Client,
    target: { namespace: 'default', deployment: 'plane', taskQueue: 'plane' },
    buildId: 'wf-1',
    identity: 'test',
    logger: quiet,
    running: () => true,
  };
  const promoteTo = (current: { id: string | null }): PromotionCalls => ({
    builds: async () => ({ current: current.id, buildIds: ['wf-0', 'wf-1'] }),
    promote: async () => {
      current.id = 'wf-1';
      return { builds: [] } as unknown as Awaited<ReturnType<PromotionCalls['promote']>>;
    },
  });

  const none = { id: null as string | null };
  const told: PromotionOutcome[] = [];
  await promoteOncePolling({ ...base, policy: 'if-none', calls: promoteTo(none), settled: (outcome) => told.push(outcome) });
  assert.deepEqual(told, [{ buildCurrent: true }]);
  assert.equal(none.id, 'wf-1', 'told only after the promotion was made');

  const other = { id: 'wf-0' as string | null };
  const toldOther: PromotionOutcome[] = [];
  await promoteOncePolling({ ...base, policy: 'if-none', calls: promoteTo(other), settled: (outcome) => toldOther.push(outcome) });
  assert.equal(toldOther.length, 1);
  assert.equal(toldOther[0]?.buildCurrent, false);
  assert.match(toldOther[0]?.buildCurrent === false ? toldOther[0].reason : '', /build wf-0 is current .*deployment promote wf-1/);
  assert.equal(other.id, 'wf-0');
});
