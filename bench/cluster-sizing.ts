/**
 * `npm run bench:cluster`: how the plane's workers size on the real cluster of
 * scripts/cluster.sh (PostgreSQL, four Temporal services, one store, two lifecycle and
 * two docker workers), for docs/deploy.md ("Sizing"). Memory adapter, through the SDK:
 *
 * - throughput: N full lifecycles (create → READY → destroy) started at once, with both
 *   lifecycle workers and then with one, against N one-activity `roundTrip` workflows
 *   started at once on the same cluster (the baseline, measured in the same run);
 * - CPU: what each process of the cluster spent per lifecycle (from /proc, utime+stime);
 * - steady state: with L sandboxes live (READY, health watch every
 *   SANDBOXPLANE_HEALTH_INTERVAL), the CPU each process spends per live sandbox and
 *   minute, and each lifecycle worker's resident set against idle.
 *
 * Starts the cluster if it is not running (`bash scripts/cluster.sh up`, as root), and
 * leaves it running with both lifecycle workers. `--live` must fit the docker hosts'
 * capacity (100 each by default: `SANDBOXPLANE_HOST_CAPACITY` when the cluster starts).
 *
 *   npm run bench:cluster                                  # 200 lifecycles, 200 live for 60 s
 *   npm run bench:cluster -- --lifecycles 200 --live 500 --steady 120 --json
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { runRoundTrip } from '../src/client/round-trip';
import { SandboxClient } from '../src/client/sandbox-client';
import { StoreClient } from '../src/client/store-client';
import { connectTemporal } from '../src/client/temporal-connection';
import { parseExports } from '../test/harness/cluster-exports';
import { concurrentLifecycles, describeFailures } from '../test/harness/lifecycle-burst';
import { cpuSeconds, rssMb } from './proc-stats';

const ROOT = path.resolve(__dirname, '..');
const CLUSTER_SH = path.join(ROOT, 'scripts', 'cluster.sh');
const DATA = process.env.SANDBOXPLANE_CLUSTER_DIR ?? path.join(ROOT, '.data', 'cluster');
const PRINCIPAL = 'sizing';
const PROCESSES = ['history', 'matching', 'frontend', 'store', 'lifecycle-1', 'lifecycle-2', 'docker-a', 'docker-b'];

const { values } = parseArgs({
  options: { lifecycles: { type: 'string' }, live: { type: 'string' }, steady: { type: 'string' }, json: { type: 'boolean', default: false } },
});
const lifecycles = Number(values.lifecycles ?? 200);
/** P3 on the cluster (issue 30): lifecycles/s at least half of bare roundTrip workflows/s, none failed. */
const TARGET_RATIO = 0.5;
const live = Number(values.live ?? 200);
const steadySeconds = Number(values.steady ?? 60);
for (const [name, value] of [
  ['lifecycles', lifecycles],
  ['live', live],
  ['steady', steadySeconds],
] as const) {
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a whole number >= 1, got ${value}`);
}

function cluster(command: string): string {
  return execFileSync('bash', [CLUSTER_SH, command], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
}

const pidOf = (name: string) => Number(fs.readFileSync(path.join(DATA, 'run', `${name}.pid`), 'utf8').trim());

function cpuOf(names: readonly string[]): Record<string, number> {
  return Object.fromEntries(names.map((name) => [name, cpuSeconds(pidOf(name))]));
}

/** Whether the process runs: there, and not a zombie waiting to be reaped (its /proc entry is about to go). */
function alive(pid: number): boolean {
  try {
    return !fs.readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z');
  } catch {
    return false;
  }
}

async function waitForExit(pid: number): Promise<void> {
  while (alive(pid)) await new Promise((resolve) => setTimeout(resolve, 200));
}

async function main(): Promise<void> {
  const address = /TEMPORAL_ADDRESS=(\S+)/.exec(cluster('up'))?.[1];
  if (address === undefined) throw new Error('cluster.sh up printed no TEMPORAL_ADDRESS');
  // The cluster asks every client for a certificate: the operator's, as `cluster.sh env` exports it.
  Object.assign(process.env, parseExports(cluster('env')));
  // The same defaults as scripts/cluster.sh, which reads the same variables.
  const taskQueue = process.env.SANDBOXPLANE_TASK_QUEUE || 'sandboxplane';
  const options = { address, namespace: process.env.TEMPORAL_NAMESPACE || 'default', taskQueue };
  const store = await StoreClient.connect(options);
  if (!(await store.listPolicies()).some((policy) => policy.principalPattern === `${PRINCIPAL}*`)) {
    await store.addPolicy({ principalPattern: `${PRINCIPAL}*`, capability: 'cloud.sandbox', effect: 'allow' });
  }
  await store.close();
  const sandboxes = await SandboxClient.connect(options);
  const { client, connection } = await connectTemporal(options);

  /** CPU ms per item of each process, between two readings. */
  const perItem = (names: readonly string[], before: Record<string, number>, after: Record<string, number>) =>
    Object.fromEntries(names.map((name) => [name, Math.round((((after[name] ?? 0) - (before[name] ?? 0)) * 1000) / lifecycles)]));

  const burst = async (label: string) => {
    const running = PROCESSES.filter((name) => alive(pidOf(name)));
    const roundTripCpuBefore = cpuOf(running);
    const roundTripStart = performance.now();
    await Promise.all(Array.from({ length: lifecycles }, (_, index) => runRoundTrip(client, { taskQueue, requestedBy: `sizing-${label}-${index}`, timeoutMs: 300_000 })));
    const baselinePerSecond = lifecycles / ((performance.now() - roundTripStart) / 1000);
    const cpuMsPerRoundTrip = perItem(running, roundTripCpuBefore, cpuOf(running));
    const cpuBefore = cpuOf(running);
    const result = await concurrentLifecycles(sandboxes, lifecycles, PRINCIPAL);
    const cpuAfter = cpuOf(running);
    if (result.failures.length > 0) throw new Error(`${label}: ${result.failures.length} lifecycles failed: ${describeFailures(result.failures).join('; ')}`);
    const perSecond = lifecycles / (result.elapsedMs / 1000);
    const cpuMsPerLifecycle = perItem(running, cpuBefore, cpuAfter);
    const ratio = perSecond / baselinePerSecond;
    return {
      label,
      lifecycles,
      perSecond,
      baselinePerSecond,
      ratio,
      target: { text: `>= ${TARGET_RATIO}x, 0 failed`, reached: ratio >= TARGET_RATIO },
      cpuMsPerLifecycle,
      cpuMsPerRoundTrip,
    };
  };

  const withTwo = await burst('two lifecycle workers');

  const idle = { 'lifecycle-1': rssMb(pidOf('lifecycle-1')), 'lifecycle-2': rssMb(pidOf('lifecycle-2')) };
  const ids: string[] = [];
  const destroyAll = async () => {
    for (let start = 0; start < ids.length; start += 50) await Promise.allSettled(ids.slice(start, start + 50).map((id) => sandboxes.destroy(id)));
  };
  try {
    for (let start = 0; start < live; start += 50) {
      const batch = Array.from({ length: Math.min(50, live - start) }, (_, index) => `${PRINCIPAL}-live-${Date.now()}-${start + index}`);
      ids.push(...batch);
      await Promise.all(batch.map((id) => sandboxes.create({ id, principal: PRINCIPAL, services: ['s3'], ttlSeconds: 3600 }, { wait: 'ready' })));
    }
  } catch (err) {
    await destroyAll();
    throw err;
  }
  const steadyBefore = cpuOf(PROCESSES);
  await new Promise((resolve) => setTimeout(resolve, steadySeconds * 1000));
  const steadyAfter = cpuOf(PROCESSES);
  const cpuMsPerLiveSandboxMinute = Object.fromEntries(
    PROCESSES.map((name) => [name, Number(((((steadyAfter[name] ?? 0) - (steadyBefore[name] ?? 0)) * 1000) / live / (steadySeconds / 60)).toFixed(2))]),
  );
  const loaded = { 'lifecycle-1': rssMb(pidOf('lifecycle-1')), 'lifecycle-2': rssMb(pidOf('lifecycle-2')) };
  await destroyAll();

  const second = pidOf('lifecycle-2');
  process.kill(second, 'SIGTERM');
  await waitForExit(second);
  let withOne;
  try {
    withOne = await burst('one lifecycle worker');
  } finally {
    cluster('up');
  }

  const memory = Object.fromEntries(
    Object.keys(idle).map((name) => {
      const key = name as keyof typeof idle;
      return [name, { idleMb: Math.round(idle[key]), withLiveMb: Math.round(loaded[key]), perLiveSandboxKb: Math.round(((loaded[key] - idle[key]) * 1024) / (live / 2)) }];
    }),
  );
  const report = {
    cluster: { address, dataDir: DATA },
    throughput: [withTwo, withOne],
    steady: { liveSandboxes: live, seconds: steadySeconds, cpuMsPerLiveSandboxMinute, memory },
  };
  if (values.json) {
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    for (const row of report.throughput) {
      process.stdout.write(
        `${row.label}: ${row.perSecond.toFixed(1)} lifecycles/s vs ${row.baselinePerSecond.toFixed(1)} roundTrips/s (${row.ratio.toFixed(2)}×, target ${row.target.text}: ${row.target.reached ? 'yes' : 'NO'}); CPU ms per lifecycle: ${JSON.stringify(row.cpuMsPerLifecycle)}; per roundTrip: ${JSON.stringify(row.cpuMsPerRoundTrip)}\n`,
      );
    }
    process.stdout.write(`${live} live sandboxes for ${steadySeconds} s: CPU ms per live sandbox and minute ${JSON.stringify(cpuMsPerLiveSandboxMinute)}\n`);
    process.stdout.write(`memory (about half of them on each lifecycle worker): ${JSON.stringify(memory)}\n`);
  }
  await sandboxes.close();
  await connection.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
