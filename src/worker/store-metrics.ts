import type { Store } from '../store';
import type { WrittenAudit } from '../store/audit-tap';
import { IacState, SandboxState } from '../domain/search-attributes';
import { meterStoreGauges, planeMetrics, type ReadySource } from '../telemetry/plane-metrics';

function readySource(summary: Readonly<Record<string, unknown>>): ReadySource {
  if (summary.fromSnapshot !== undefined) return 'snapshot';
  return summary.warmPoolSlot !== undefined ? 'pool' : 'cold';
}

/** The metrics an audit row stands for, counted once: when the row is first written. */
function countAudit(store: Store, written: WrittenAudit): void {
  const { action, summary } = written.operation;
  if (action === 'iac_applied') planeMetrics.iacRunEnded('applied');
  else if (action === 'iac_failed') planeMetrics.iacRunEnded('failed');
  if (!('sandboxId' in written) || (action !== 'ready' && action !== 'emulator_restarted')) return;
  const facts = store.metrics.sandboxFacts(written.sandboxId);
  if (facts === undefined) return;
  if (action === 'emulator_restarted') {
    planeMetrics.emulatorRestarted(facts.adapter);
    return;
  }
  const seconds = (Date.now() - Date.parse(facts.createdAt)) / 1000;
  planeMetrics.sandboxReady({ adapter: facts.adapter, source: readySource(summary), approval: facts.approved ? 'required' : 'none' }, seconds);
}

/** How many running workflows of this plane a visibility query matches (Temporal's count). */
export type RunningCount = (query: string) => Promise<number>;

/** The visibility queries of the approvals-waiting gauge: this plane's task queue, running, waiting. */
function approvalQueries(taskQueue: string): { sandbox: string; iac: string } {
  const running = `ExecutionStatus = "Running" AND TaskQueue = "${taskQueue}"`;
  return { sandbox: `${running} AND ${SandboxState.name} = "AWAITING_APPROVAL"`, iac: `${running} AND ${IacState.name} = "AWAITING_APPROVAL"` };
}

/**
 * The store role's metrics (DESIGN §17): gauges read at each scrape (live sandboxes and
 * leaks from the projection, approvals waiting from Temporal through `count`), counters and
 * the create → READY histogram from audit rows as they are written. Returns the function
 * that stops them.
 */
export function meterStore(store: Store, taskQueue: string, count: RunningCount): () => void {
  const stopListening = store.audits.listen((written) => countAudit(store, written));
  const queries = approvalQueries(taskQueue);
  const stopGauges = meterStoreGauges({
    liveSandboxes: () => store.metrics.liveSandboxes(),
    approvalsWaiting: async () => {
      try {
        const [sandbox, iac] = await Promise.all([count(queries.sandbox), count(queries.iac)]);
        return { sandbox, iac };
      } catch {
        return undefined;
      }
    },
    outstandingLeaks: () => store.metrics.outstandingLeaks(),
  });
  return () => {
    stopListening();
    stopGauges();
  };
}
