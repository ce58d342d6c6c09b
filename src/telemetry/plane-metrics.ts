import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { LEAK_KINDS, type LeakKind } from '../domain/leaks';
import { LIVE_STATES } from '../domain/sandbox-states';
import { ADAPTER_NAMES } from '../domain/service-catalog';
import { WEBHOOK_OUTCOMES, type WebhookOutcome } from '../domain/webhooks';

/**
 * The plane's own metrics (DESIGN §17), every name `sandboxplane_…`. Labels are bounded
 * sets (states, adapters, hosts, leak kinds, outcomes, engine operations): never a
 * sandbox id. Gauges are read from their sources at scrape time only, so an idle plane
 * that nobody scrapes does no work for them.
 */
export const planeRegistry = new Registry();

/** What the store role can say of the projection, read at each scrape. */
export interface StoreGaugeSource {
  liveSandboxes(): readonly { state: string; adapter: string; count: number }[];
  /** Read from Temporal (what is alive is its to say); `undefined` when it cannot answer now. */
  approvalsWaiting(): Promise<{ sandbox: number; iac: number } | undefined>;
  outstandingLeaks(): Readonly<Record<LeakKind, number>>;
}

/** What a docker worker's warm pools hold, read at each scrape. */
export interface PoolGaugeSource {
  readonly hostId: string;
  depths(): readonly { adapter: string; target: number; ready: number; starting: number }[];
}

const storeSources = new Set<StoreGaugeSource>();
const poolSources = new Set<PoolGaugeSource>();

new Gauge({
  name: 'sandboxplane_sandboxes',
  help: 'Live sandboxes by state and adapter, as the store projects them.',
  labelNames: ['state', 'adapter'] as const,
  registers: [planeRegistry],
  collect() {
    if (storeSources.size === 0) return;
    // Every live state of every adapter, zeros too: an alert on a series that vanished would never fire.
    const counts = new Map<string, number>();
    for (const source of storeSources) {
      for (const row of source.liveSandboxes()) counts.set(`${row.state}\u0000${row.adapter}`, (counts.get(`${row.state}\u0000${row.adapter}`) ?? 0) + row.count);
    }
    const adapters = new Set<string>([...ADAPTER_NAMES, ...[...counts.keys()].map((key) => key.split('\u0000')[1] ?? '')]);
    this.reset();
    for (const state of LIVE_STATES) {
      for (const adapter of adapters) this.set({ state, adapter }, counts.get(`${state}\u0000${adapter}`) ?? 0);
    }
  },
});

new Gauge({
  name: 'sandboxplane_approvals_waiting',
  help: 'Requests waiting for an approver, as Temporal sees its running workflows: sandboxes (kind="sandbox") and IaC plans (kind="iac") in AWAITING_APPROVAL.',
  labelNames: ['kind'] as const,
  registers: [planeRegistry],
  async collect() {
    this.reset();
    let sandbox = 0;
    let iac = 0;
    for (const source of storeSources) {
      const waiting = await source.approvalsWaiting();
      // No answer, no series: a scrape must not report zero waiting because Temporal was away.
      if (waiting === undefined) return;
      sandbox += waiting.sandbox;
      iac += waiting.iac;
    }
    if (storeSources.size === 0) return;
    this.set({ kind: 'sandbox' }, sandbox);
    this.set({ kind: 'iac' }, iac);
  },
});

new Gauge({
  name: 'sandboxplane_leaks_outstanding',
  help: 'Leaks the cleanup sweep has found and not yet seen resolved, by kind.',
  labelNames: ['kind'] as const,
  registers: [planeRegistry],
  collect() {
    if (storeSources.size === 0) return;
    for (const kind of LEAK_KINDS) {
      let count = 0;
      for (const source of storeSources) count += source.outstandingLeaks()[kind];
      this.set({ kind }, count);
    }
  },
});

new Gauge({
  name: 'sandboxplane_pool_containers',
  help: 'Idle emulator containers of the warm pools by host, adapter and state (ready: healthy and waiting; starting).',
  labelNames: ['host', 'adapter', 'state'] as const,
  registers: [planeRegistry],
  collect() {
    this.reset();
    for (const source of poolSources) {
      for (const pool of source.depths()) {
        this.set({ host: source.hostId, adapter: pool.adapter, state: 'ready' }, pool.ready);
        this.set({ host: source.hostId, adapter: pool.adapter, state: 'starting' }, pool.starting);
      }
    }
  },
});

new Gauge({
  name: 'sandboxplane_pool_target',
  help: 'How many idle containers each warm pool keeps (SANDBOXPLANE_WARM_POOL), by host and adapter.',
  labelNames: ['host', 'adapter'] as const,
  registers: [planeRegistry],
  collect() {
    this.reset();
    for (const source of poolSources) {
      for (const pool of source.depths()) this.set({ host: source.hostId, adapter: pool.adapter }, pool.target);
    }
  },
});

const createReady = new Histogram({
  name: 'sandboxplane_create_ready_seconds',
  help: 'From a request to its sandbox READY, by adapter, source (cold, pool, snapshot) and approval (none, required: the wait for a person included).',
  labelNames: ['adapter', 'source', 'approval'] as const,
  buckets: [0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 20, 30, 60, 120, 300, 900, 3600],
  registers: [planeRegistry],
});

const healthRestarts = new Counter({
  name: 'sandboxplane_health_restarts_total',
  help: 'Emulators the health watch restarted after they stopped answering, by adapter.',
  labelNames: ['adapter'] as const,
  registers: [planeRegistry],
});

const iacRuns = new Counter({
  name: 'sandboxplane_iac_runs_total',
  help: 'IaC applies that ended, by outcome (applied, failed).',
  labelNames: ['outcome'] as const,
  registers: [planeRegistry],
});

const leaksFound = new Counter({
  name: 'sandboxplane_leaks_found_total',
  help: 'Leaks the cleanup sweep found that were not outstanding before, by kind.',
  labelNames: ['kind'] as const,
  registers: [planeRegistry],
});

const leaksRemoved = new Counter({
  name: 'sandboxplane_leaks_removed_total',
  help: 'Leaks the cleanup sweep removed, by kind.',
  labelNames: ['kind'] as const,
  registers: [planeRegistry],
});

const webhookDeliveries = new Counter({
  name: 'sandboxplane_webhook_deliveries_total',
  help: 'Attempts to deliver an event to a webhook endpoint, by outcome (delivered, failed, gave_up after a day).',
  labelNames: ['outcome'] as const,
  registers: [planeRegistry],
});

const dockerCalls = new Histogram({
  name: 'sandboxplane_docker_call_seconds',
  help: 'Docker engine calls by operation and outcome (ok, error).',
  labelNames: ['operation', 'outcome'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [planeRegistry],
});

// Known label values start at zero, so `increase()` and alerts see the first one.
for (const adapter of ADAPTER_NAMES) healthRestarts.inc({ adapter }, 0);
for (const outcome of ['applied', 'failed']) iacRuns.inc({ outcome }, 0);
for (const outcome of WEBHOOK_OUTCOMES) webhookDeliveries.inc({ outcome }, 0);
for (const kind of LEAK_KINDS) {
  leaksFound.inc({ kind }, 0);
  leaksRemoved.inc({ kind }, 0);
}

/** Reads `source` at each scrape until the returned function is called (a store closing). */
export function meterStoreGauges(source: StoreGaugeSource): () => void {
  storeSources.add(source);
  return () => storeSources.delete(source);
}

/** Reads a docker worker's warm pools at each scrape until the returned function is called. */
export function meterPools(source: PoolGaugeSource): () => void {
  poolSources.add(source);
  return () => poolSources.delete(source);
}

export type ReadySource = 'cold' | 'pool' | 'snapshot';

export const planeMetrics = {
  sandboxReady(labels: { adapter: string; source: ReadySource; approval: 'none' | 'required' }, seconds: number): void {
    createReady.observe(labels, Math.max(0, seconds));
  },
  emulatorRestarted(adapter: string): void {
    healthRestarts.inc({ adapter });
  },
  iacRunEnded(outcome: 'applied' | 'failed'): void {
    iacRuns.inc({ outcome });
  },
  webhookDelivered(outcome: WebhookOutcome): void {
    webhookDeliveries.inc({ outcome });
  },
  sweepRecorded(found: readonly LeakKind[], removed: readonly LeakKind[]): void {
    for (const kind of found) leaksFound.inc({ kind });
    for (const kind of removed) leaksRemoved.inc({ kind });
  },
  /** Starts timing one engine call; call the result with how it went. */
  dockerCall(operation: string): (outcome: 'ok' | 'error') => void {
    const end = dockerCalls.startTimer({ operation });
    return (outcome) => end({ outcome });
  },
};

let processMetrics = false;

/** The process's own figures (resident memory, CPU, event-loop lag, heap) as `sandboxplane_process_…`/`sandboxplane_nodejs_…`, once a server serves them. */
export function meterProcess(): void {
  if (processMetrics) return;
  processMetrics = true;
  collectDefaultMetrics({ register: planeRegistry, prefix: 'sandboxplane_' });
}

/** The text exposition of every plane metric, gauges read now. */
export function planeMetricsText(): Promise<string> {
  return planeRegistry.metrics();
}

export const PROMETHEUS_CONTENT_TYPE = planeRegistry.contentType;
