/**
 * A docker host judged live whose worker is gone (it registered a moment ago, or died
 * after its last poll) costs a sweep only that host's part: the sweep finishes, sweeps
 * the other hosts, and reports the silent one — it never hangs on the missing worker,
 * which would stop every later sweep too (the schedule skips while one runs).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { CLEANUP_WORKFLOW } from '../src/domain/contract-names';
import type { SweepReport } from '../src/domain/leaks';
import { dockerQueue } from '../src/domain/task-queues';
import { startTestWorker, type TestWorker } from './harness/test-worker';
import { testTemporalAddress } from './harness/test-temporal';

describe('a sweep with a docker host whose worker is gone', () => {
  let worker: TestWorker;

  before(async () => {
    worker = await startTestWorker(await testTemporalAddress());
  });
  after(async () => {
    await worker?.stop();
  });

  test('finishes, sweeps the live host, and reports the silent one as not swept', async () => {
    // Registered just now, so placement and the sweep take it for live; no worker polls its queue.
    worker.store.hosts.register({ hostId: 'ghost', taskQueue: dockerQueue(worker.config.taskQueue, 'ghost'), adapters: ['memory'], capacity: 5, engineId: null, identity: 'gone' });
    const report: SweepReport = await worker.client.workflow.execute(CLEANUP_WORKFLOW, {
      taskQueue: worker.config.taskQueue,
      workflowId: `test-sweep-${randomUUID()}`,
      workflowExecutionTimeout: '3 minutes',
    });
    assert.deepEqual(
      [...(report.hosts ?? [])].sort((a, b) => a.hostId.localeCompare(b.hostId)),
      [
        { hostId: 'ghost', live: true, swept: false },
        { hostId: 'local', live: true, swept: true },
      ],
    );
    const ghost = report.remaining.find((finding) => finding.kind === 'host_unreachable' && finding.subject === 'ghost');
    assert.match(ghost?.detail ?? '', /its part of the sweep did not finish: no docker worker took its work/);
    assert.ok(
      worker.store.leaks.outstanding().some((leak) => leak.kind === 'host_unreachable' && leak.subject === 'ghost'),
      'recorded for `sandboxctl leaks`',
    );
  });
});
