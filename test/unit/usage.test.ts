import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { sandboxRequestSchema } from '../../src/domain/sandbox-request';
import { screenRequest, type ScreeningInput } from '../../src/domain/screening';
import type { PolicyRow } from '../../src/domain/policy';
import { accrue, nextUtcMidnight, sinceDay, usageReportOfAudit, usageReportSchema, type ContainerUsage, type UsageReportInput } from '../../src/domain/usage';
import { toContainerStats } from '../../src/docker/engine-responses';
import { isSandboxPlaneError } from '../../src/domain/errors';
import { Store } from '../../src/store';
import { projectionSnapshot } from '../helpers/projection-row';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-usage-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
let counter = 0;
const freshStore = () => Store.open(path.join(dir, `store-${(counter += 1)}`, 'plane.sqlite'));

const T0 = Date.parse('2025-03-10T10:00:00Z');
const MIB = 1024 * 1024;

function reading(containerId: string, cpuSeconds: number, peakMib: number, requests: number | null): ContainerUsage {
  return { containerId, cpuNanos: Math.round(cpuSeconds * 1e9), memoryPeakBytes: peakMib * MIB, requests };
}

/** A READY sandbox in the inventory, so its open stretch counts up to now. */
function readySandbox(store: Store, id: string, principal = 'agent-1', state: 'READY' | 'PAUSED' | 'DESTROYED' = 'READY', at = new Date(T0)): void {
  store.sandboxes.record(
    projectionSnapshot({ id, principal, state, runId: 'run-1' }),
    { runId: 'run-1', step: 1, action: 'ready', actor: 'worker', effect: 'ready', reason: null, summary: {} },
    at,
  );
}

function report(store: Store, event: UsageReportInput['event'], atMs: number, readings: ContainerUsage[] = [], sandboxId = 'sbx-1', principal = 'agent-1'): void {
  store.usage.record(usageReportSchema.parse({ sandboxId, principal, adapter: 'moto', event, atMs, readings }), new Date(atMs));
}

describe('usage accrual', () => {
  test('a counter adds what grew since the last read; a first read, or one that went back (the process started again), counts from 0', () => {
    assert.deepEqual(accrue(undefined, reading('c1', 2, 10, 5)), { cpuNanos: 2e9, requests: 5 });
    assert.deepEqual(accrue({ cpuNanos: 2e9, requests: 5 }, reading('c1', 3, 10, 8)), { cpuNanos: 1e9, requests: 3 });
    assert.deepEqual(accrue({ cpuNanos: 3e9, requests: 8 }, reading('c1', 0.5, 10, 1)), { cpuNanos: 0.5e9, requests: 1 });
    assert.deepEqual(accrue({ cpuNanos: 3e9, requests: null }, reading('c1', 4, 10, null)), { cpuNanos: 1e9, requests: null });
  });

  test('live seconds run from READY to the stop; a teardown read after a slow-timer read counts nothing twice; a retried report changes nothing', () => {
    const store = freshStore();
    readySandbox(store, 'sbx-1');
    report(store, 'live', T0);
    report(store, 'live', T0 + 5_000); // a retry, later: the first start stands
    report(store, 'reading', T0 + 300_000, [reading('c1', 2, 100, 10)]);
    report(store, 'reading', T0 + 300_000, [reading('c1', 2, 100, 10)]); // the same read again
    report(store, 'stopped', T0 + 600_000, [reading('c1', 3, 80, 12)]);
    report(store, 'stopped', T0 + 700_000, [reading('c1', 3, 80, 12)]); // a retried teardown report
    const usage = store.usage.get('sbx-1');
    assert.equal(usage?.liveMs, 600_000);
    assert.equal(usage?.liveSinceMs, null);
    assert.equal(usage?.cpuNanos, 3e9);
    assert.equal(usage?.peakMemoryBytes, 100 * MIB, 'the highest peak read, not the last');
    assert.equal(usage?.requests, 12);
    store.close();
  });

  test('a restarted emulator (a new container) and a resume count from 0 again; paused time does not count', () => {
    const store = freshStore();
    readySandbox(store, 'sbx-1');
    report(store, 'live', T0);
    report(store, 'reading', T0 + 60_000, [reading('c1', 4, 50, 20)]);
    // The health watch restarts the emulator: the dead container's read, then a new container from 0.
    report(store, 'reading', T0 + 120_000, [reading('c2', 1, 30, 2)]);
    // Paused at 200 s (container removed), resumed at 1200 s, torn down at 1300 s.
    report(store, 'stopped', T0 + 200_000, [reading('c2', 1.5, 40, 3)]);
    report(store, 'live', T0 + 1_200_000);
    report(store, 'stopped', T0 + 1_300_000, [reading('c3', 0.25, 20, 1)]);
    const usage = store.usage.get('sbx-1');
    assert.equal(usage?.liveMs, 300_000, '200 s before the pause + 100 s after the resume');
    assert.equal(usage?.cpuNanos, 5.75e9);
    assert.equal(usage?.requests, 24);
    assert.equal(usage?.peakMemoryBytes, 50 * MIB);
    store.close();
  });

  test('an emulator that counts no requests (floci) leaves them null, and the rollup adds 0 for it', () => {
    const store = freshStore();
    readySandbox(store, 'sbx-1');
    report(store, 'live', T0);
    report(store, 'stopped', T0 + 10_000, [reading('c1', 1, 10, null)]);
    assert.equal(store.usage.get('sbx-1')?.requests, null);
    const [row] = store.usage.rollUp({}, new Date(T0 + 20_000));
    assert.equal(row?.requests, 0);
    store.close();
  });

  test('reports for a sandbox that never became READY are ignored', () => {
    const store = freshStore();
    report(store, 'stopped', T0, [reading('c1', 1, 10, 1)]);
    assert.equal(store.usage.get('sbx-1'), undefined);
    store.close();
  });

  test('the rollup groups by principal and the UTC day of READY, newest first; a live sandbox counts up to now, one whose stop was lost only to its last change', () => {
    const store = freshStore();
    readySandbox(store, 'sbx-1', 'agent-1');
    readySandbox(store, 'sbx-2', 'agent-1');
    readySandbox(store, 'sbx-3', 'agent-2');
    readySandbox(store, 'sbx-4', 'agent-1', 'DESTROYED', new Date(T0 - 86_400_000 + 50_000));
    report(store, 'live', T0, [], 'sbx-1');
    report(store, 'stopped', T0 + 30_000, [reading('c1', 1, 100, 4)], 'sbx-1');
    report(store, 'live', T0 + 10_000, [], 'sbx-2'); // still live
    report(store, 'live', T0, [], 'sbx-3', 'agent-2');
    report(store, 'stopped', T0 + 5_000, [reading('c3', 2, 300, 1)], 'sbx-3', 'agent-2');
    // Yesterday, its stop never arrived; it ended 50 s after it became READY.
    report(store, 'live', T0 - 86_400_000, [], 'sbx-4');
    const now = new Date(T0 + 70_000);
    assert.deepEqual(store.usage.rollUp({}, now), [
      { principal: 'agent-1', day: '2025-03-10', sandboxes: 2, sandboxSeconds: 90, cpuSeconds: 1, peakMemoryBytes: 100 * MIB, requests: 4 },
      { principal: 'agent-2', day: '2025-03-10', sandboxes: 1, sandboxSeconds: 5, cpuSeconds: 2, peakMemoryBytes: 300 * MIB, requests: 1 },
      { principal: 'agent-1', day: '2025-03-09', sandboxes: 1, sandboxSeconds: 50, cpuSeconds: 0, peakMemoryBytes: 0, requests: 0 },
    ]);
    assert.deepEqual(
      store.usage.rollUp({ principal: 'agent-1', since: '2025-03-10' }, now).map((row) => row.day),
      ['2025-03-10'],
    );
    assert.deepEqual(store.usage.today('agent-1', now), { usedSeconds: 90, resetsAt: '2025-03-11T00:00:00.000Z' });
    store.close();
  });
});

describe('usage from the audit rows the store writes', () => {
  const sandbox = { id: 'sbx-audit', principal: 'agent-1', adapter: 'moto' };
  const reading = { containerId: 'c1', cpuNanos: 2_000_000_000, memoryPeakBytes: 100, requests: 3 };

  test('READY and a resume start a live stretch; a pause and a teardown end it with the reads in the row; other rows say nothing', () => {
    assert.equal(usageReportOfAudit(sandbox, { action: 'ready', summary: {} }, 1_000)?.event, 'live');
    assert.equal(usageReportOfAudit(sandbox, { action: 'resumed', summary: {} }, 1_000)?.event, 'live');
    const stopped = usageReportOfAudit(sandbox, { action: 'destroyed', summary: { removed: ['c1'], usage: [reading] } }, 2_000);
    assert.deepEqual([stopped?.event, stopped?.readings], ['stopped', [reading]]);
    assert.deepEqual(usageReportOfAudit(sandbox, { action: 'paused', summary: {} }, 2_000)?.readings, []);
    assert.deepEqual(
      usageReportOfAudit(sandbox, { action: 'destroy_failed', summary: { usage: 'not reads' } }, 2_000)?.readings,
      [],
      'reads that do not parse are left out, the stop is not',
    );
    for (const action of ['requested', 'screened', 'extended', 'destroying', 'expiring']) assert.equal(usageReportOfAudit(sandbox, { action, summary: {} }, 1_000), undefined, action);
  });

  test('as the store writes the rows (recordTransitions): a retried write counts nothing twice', () => {
    const store = freshStore();
    try {
      const snapshot = projectionSnapshot({ id: 'sbx-audit', adapter: 'moto', state: 'READY' });
      const ready = { runId: 'r', step: 1, action: 'ready', actor: 'worker', effect: 'ready', reason: null, summary: {} };
      const destroyed = { runId: 'r', step: 2, action: 'destroyed', actor: 'worker', effect: 'destroyed', reason: null, summary: { usage: [reading] } };
      const write = (operation: typeof ready | typeof destroyed, atMs: number) => {
        if (!store.sandboxes.record({ ...snapshot, state: operation.action === 'ready' ? 'READY' : 'DESTROYED' }, operation)) return;
        const report = usageReportOfAudit(snapshot, operation, atMs);
        if (report !== undefined) store.usage.record(report);
      };
      write(ready, 10_000);
      write(ready, 11_000);
      write(destroyed, 30_000);
      write(destroyed, 40_000);
      const usage = store.usage.get('sbx-audit');
      assert.deepEqual([usage?.liveMs, usage?.cpuNanos, usage?.requests], [20_000, 2_000_000_000, 3]);
    } finally {
      store.close();
    }
  });
});

describe('the daily cap', () => {
  const TTL = { defaultTtlSeconds: 1800, ttlCeilingSeconds: 4 * 3600, maxLifetimeSeconds: 24 * 3600 };
  const FLAGS = { CLOUD_SANDBOX: true, IAC_LOCAL: true, STAGING_APPLY: true, PRODUCTION_APPLY: true, ADAPTER_MEMORY: true, ADAPTER_MOTO: true, ADAPTER_FLOCI: true };
  function policy(maxSandboxHoursPerDay: number | null, id = 1): PolicyRow {
    return { id, principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow', maxTtlSeconds: null, services: null, maxConcurrent: null, maxSandboxHoursPerDay };
  }
  function input(policies: PolicyRow[], usedSeconds: number): ScreeningInput {
    const request = { ...sandboxRequestSchema.parse({ principal: 'agent-1', services: ['s3'] }), id: 'x' };
    return { request, flags: FLAGS, policies, liveSandboxes: 0, availableAdapters: ['memory'], ttl: TTL, dailyUsage: { usedSeconds, resetsAt: '2025-03-11T00:00:00.000Z' } };
  }

  test('at the cap a create is refused QUOTA_EXCEEDED, naming the cap, what was used and when it resets; below it, allowed', () => {
    assert.equal(screenRequest(input([policy(1)], 3599)).effect, 'allow');
    const refused = screenRequest(input([policy(1)], 3600));
    assert.equal(refused.effect, 'deny');
    assert.equal(refused.code, 'QUOTA_EXCEEDED');
    assert.match(
      refused.reasons[0] ?? '',
      /agent-1 has used 3600 sandbox-seconds today \(UTC\); the policy allows 1 sandbox-hours \(3600 s\) per day\. The count starts again at 2025-03-11T00:00:00.000Z/,
    );
    assert.deepEqual(refused.details, { maxSandboxHoursPerDay: 1, usedSandboxSeconds: 3600, capSeconds: 3600, resetsAt: '2025-03-11T00:00:00.000Z' });
  });

  test('the tightest cap among the deciding rows applies; a row without one (or from before caps) sets none', () => {
    assert.equal(screenRequest(input([policy(2, 1), policy(0.5, 2)], 1800)).code, 'QUOTA_EXCEEDED');
    assert.equal(screenRequest(input([policy(null)], 10 ** 9)).effect, 'allow');
    const { maxSandboxHoursPerDay: _none, ...older } = policy(null);
    assert.equal(screenRequest(input([older], 10 ** 9)).effect, 'allow');
  });

  test('--since: a day, an ISO time, or a duration back from now; anything else is refused', () => {
    const now = Date.parse('2025-03-10T10:00:00Z');
    assert.equal(sinceDay('2025-03-01', now), '2025-03-01');
    assert.equal(sinceDay('2025-03-01T23:30:00-02:00', now), '2025-03-02');
    assert.equal(sinceDay('7d', now), '2025-03-03');
    assert.equal(sinceDay('2025-02-30', now), undefined);
    assert.equal(sinceDay('yesterday', now), undefined);
    assert.equal(new Date(nextUtcMidnight(now)).toISOString(), '2025-03-11T00:00:00.000Z');
  });
});

describe("the engine's stats", () => {
  test('cgroup v1 has a peak (max_usage); cgroup v2 has none, so the current use stands in; a stopped container reads 0; a malformed answer is DOCKER_RESPONSE_INVALID', () => {
    assert.deepEqual(toContainerStats({ cpu_stats: { cpu_usage: { total_usage: 1_500_000_000 } }, memory_stats: { usage: 40 * MIB, max_usage: 90 * MIB } }), {
      cpuNanos: 1_500_000_000,
      memoryBytes: 40 * MIB,
      memoryPeakBytes: 90 * MIB,
    });
    assert.deepEqual(toContainerStats({ cpu_stats: { cpu_usage: { total_usage: 7 } }, memory_stats: { usage: 40 * MIB, stats: { anon: 1 } } }), {
      cpuNanos: 7,
      memoryBytes: 40 * MIB,
      memoryPeakBytes: 40 * MIB,
    });
    assert.deepEqual(toContainerStats({ cpu_stats: { cpu_usage: { total_usage: 0 } }, memory_stats: {} }), { cpuNanos: 0, memoryBytes: 0, memoryPeakBytes: 0 });
    assert.throws(
      () => toContainerStats({ cpu_stats: { cpu_usage: { total_usage: 'lots' } } }),
      (err: unknown) => isSandboxPlaneError(err) && err.code === 'DOCKER_RESPONSE_INVALID',
    );
  });
});
