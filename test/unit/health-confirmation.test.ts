/** How many looks the health watch's activity takes before it calls an emulator dead (activities/lifecycle-activities.ts). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createRuntimeActivities, type HealthCheck } from '../../src/activities/lifecycle-activities';
import type { AdapterRegistry, CloudEmulatorAdapter, HealthReport } from '../../src/adapters/cloud-emulator-adapter';

/** The health activity over an adapter that answers `report` to every look, and how many looks it took. */
async function looksUntilVerdict(report: HealthReport): Promise<{ looks: number; healthy: boolean }> {
  let looks = 0;
  const adapter = {
    health: async () => {
      looks += 1;
      return report;
    },
  } as unknown as CloudEmulatorAdapter;
  const adapters: AdapterRegistry = { moto: adapter };
  const activities = createRuntimeActivities({ adapters });
  const check: HealthCheck = await new MockActivityEnvironment().run(() => activities.checkSandboxHealth({ sandboxId: 'sbx', adapter: 'moto' }));
  return { looks, healthy: check.healthy };
}

const unanswered = { healthy: false, registeredServices: [], readyServices: [], detail: 'connection refused' };

test('a container that no longer runs is dead at the first look: the engine said so, no second look can change it', async () => {
  assert.deepEqual(await looksUntilVerdict({ ...unanswered, detail: 'no running container', certain: true }), { looks: 1, healthy: false });
});

test('an emulator that runs but does not answer is looked at three times before it is called dead', async () => {
  assert.deepEqual(await looksUntilVerdict(unanswered), { looks: 3, healthy: false });
});
