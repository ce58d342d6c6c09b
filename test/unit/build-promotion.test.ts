import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Client } from '@temporalio/client';
import { promoteOncePolling, type PromotionCalls } from '../../src/worker/build-promotion';
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
