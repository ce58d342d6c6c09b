import type { Store } from '../store';
import type { WrittenAudit } from '../store/audit-tap';
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

/**
 * The store role's metrics (DESIGN §17): gauges read from the projection at each scrape,
 * counters and the create → READY histogram from audit rows as they are written. Returns
 * the function that stops both.
 */
export function meterStore(store: Store): () => void {
  const stopListening = store.audits.listen((written) => countAudit(store, written));
  const stopGauges = meterStoreGauges({
    liveSandboxes: () => store.metrics.liveSandboxes(),
    approvalsWaiting: () => ({
      sandbox: store.metrics.liveSandboxes().reduce((sum, row) => sum + (row.state === 'AWAITING_APPROVAL' ? row.count : 0), 0),
      iac: store.metrics.iacRunsAwaitingApproval(),
    }),
    outstandingLeaks: () => store.metrics.outstandingLeaks(),
  });
  return () => {
    stopListening();
    stopGauges();
  };
}
