/**
 * `npm run bench`: the plane's performance suite of record (issue 15). Every figure is a
 * ratio against a baseline measured in the same run, on the same Temporal dev server,
 * worker and Docker engine, so the numbers compare across machines:
 *
 * - P1  create → READY (memory adapter) vs a one-activity `roundTrip` workflow;
 * - P2  moto create → READY, cold (and from a warm pool) vs raw `docker run` + health poll;
 * - P3  lifecycles/s with N agents at once vs roundTrip workflows/s at the same N;
 * - P4  a cleanup sweep over N managed containers vs one label-filtered container list;
 * - P5  a worker's resident memory with N live sandboxes vs the same worker idle, and its growth from 100 to 1,000;
 * - P6  a burst of N moto creates at once (cold, and from a pool of N): p50/p95/p99 vs N raw `docker run` + health at once, and how many the host admits;
 * - IDLE history events and server CPU per idle READY sandbox-minute vs the server with none;
 * - DEAD a killed emulator container until the sandbox is READY on a new one vs a raw moto start;
 * - CLI `sandboxctl status` vs `temporal workflow describe` of the same workflow;
 * - S1  restoring a snapshot of 500 S3 objects vs making them.
 * - F5  forking 5 sandboxes from one snapshot at once vs one fork.
 *
 * It starts its own dev server on free ports, and the Docker engine and images as the
 * tests do (scripts/docker-engine.sh, build-test-image.sh, build-moto-image.sh); P2, P4
 * and DEAD are skipped, naming what is missing, when they cannot be had. Prints a table, or
 * with `--json` one JSON document (and nothing else) on stdout; progress goes to stderr.
 * Exits 1 when a lifecycle (or a sweep's removal) failed or a figure could not be
 * measured, 2 on a bad command line.
 *
 *   npm run bench
 *   npm run bench -- --json > bench.json
 *   npm run bench -- --only P1,P3 --rounds 5 --concurrency 20
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { locateTemporalCli } from '../src/temporal-dev/temporal-cli';
import { dockerClient } from '../test/harness/container-events';
import { ensureDockerEngine, ensureMotoImage, ensureTestImage } from '../test/harness/setup-scripts';
import { startTestDevServer } from '../test/harness/test-temporal';
import { earlierRunsLeftovers, removeRunContainers } from './bench-containers';
import { BenchCleanup, type BenchContext, type DockerSetup, type Figure } from './bench-context';
import { BenchUsageError, parseBenchOptions, type BenchOptions, type FigureId } from './bench-options';
import { renderTable, type BenchReport, type FigureResult } from './bench-report';
import { cliStatus } from './figure-cli-status';
import { p1CreateLatency } from './figure-p1-create-latency';
import { p2MotoCreate } from './figure-p2-moto-create';
import { p3Throughput } from './figure-p3-throughput';
import { p4Sweep } from './figure-p4-sweep';
import { p5WorkerMemory } from './figure-p5-worker-memory';
import { p6Burst } from './figure-p6-burst';
import { idleSandboxes } from './figure-idle-sandboxes';
import { deadEmulator } from './figure-dead-emulator';
import { s1SnapshotRestore } from './figure-s1-snapshot-restore';
import { f5ForkMany } from './figure-f5-fork-many';
import type { MeasuredWorker } from './bench-context';
import { startMeasuredWorker } from './measured-worker';
import { devServerPid } from './proc-stats';

const FIGURES: readonly Figure[] = [p1CreateLatency, p2MotoCreate, p3Throughput, p4Sweep, p5WorkerMemory, p6Burst, idleSandboxes, deadEmulator, cliStatus, s1SnapshotRestore, f5ForkMany];

function progress(message: string): void {
  process.stderr.write(`bench: ${message}\n`);
}

/** An error's message on one line (a config error lists each bad key on a line of its own), at most 400 characters. */
function failureText(err: unknown): string {
  const text = (err instanceof Error ? err.message : String(err)).replace(/\s*\n\s*/g, ' ').trim();
  return text.length > 400 ? `${text.slice(0, 399)}…` : text;
}

/** The engine and images the selected figures need, set up as `npm test` does; what cannot be had is named, not thrown. */
function setUpDocker(figures: readonly Figure[]): DockerSetup {
  const wanted = new Set(figures.flatMap((figure) => [...figure.needs, ...(figure.wants ?? [])]));
  const none: DockerSetup = { dockerHost: process.env.DOCKER_HOST, engineMissing: null, testImage: undefined, motoImage: undefined, motoMissing: null };
  if (wanted.size === 0) return none;
  let dockerHost: string;
  try {
    dockerHost = ensureDockerEngine();
  } catch (err) {
    const tried = process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock or unix:///run/sandboxplane-docker/docker.sock';
    const reason = `docker engine at ${tried} is not available (scripts/docker-engine.sh: ${failureText(err)})`;
    return { ...none, dockerHost: undefined, engineMissing: reason, motoMissing: reason };
  }
  let testImage: string | undefined;
  let engineMissing: string | null = null;
  try {
    testImage = ensureTestImage(dockerHost);
  } catch (err) {
    engineMissing = `test image on ${dockerHost} (scripts/build-test-image.sh: ${failureText(err)})`;
  }
  let motoImage = process.env.SANDBOXPLANE_MOTO_IMAGE;
  let motoMissing: string | null = null;
  if (wanted.has('moto') && (motoImage === undefined || motoImage === '')) {
    try {
      motoImage = ensureMotoImage(dockerHost);
    } catch (err) {
      motoImage = undefined;
      motoMissing = `moto image on ${dockerHost} (scripts/build-moto-image.sh: ${failureText(err)})`;
    }
  }
  return { dockerHost, engineMissing, testImage, motoImage, motoMissing };
}

/** Why a figure cannot run here, naming the missing component; null when it can. */
function missingFor(figure: Figure, docker: DockerSetup): string | null {
  for (const need of figure.needs) {
    if (need === 'docker' && docker.engineMissing !== null) return docker.engineMissing;
    if (need === 'moto' && (docker.engineMissing ?? docker.motoMissing) !== null) return docker.engineMissing ?? docker.motoMissing;
  }
  return null;
}

async function machine(docker: DockerSetup): Promise<Record<string, unknown>> {
  const cpus = os.cpus();
  let temporalCli: string | null = null;
  try {
    temporalCli = execFileSync(locateTemporalCli(process.env.SANDBOXPLANE_TEMPORAL_CLI), ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    // Reported as unknown; the dev server start would have failed first anyway.
  }
  const engine =
    docker.dockerHost === undefined
      ? null
      : await dockerClient(docker.dockerHost)
          .version()
          .then(
            (version) => version.Version,
            () => null,
          );
  return {
    cpus: cpus.length,
    cpuModel: cpus[0]?.model ?? null,
    memoryMb: Math.round(os.totalmem() / 1024 / 1024),
    // Others' work on the machine shows here (and in each figure's profile as `machine` CPU).
    loadAverage: os.loadavg().map((load) => Math.round(load * 100) / 100),
    kernel: os.release(),
    node: process.version,
    temporalCli,
    dockerEngine: engine,
    dockerHost: docker.dockerHost ?? null,
  };
}

async function runFigure(figure: Figure, context: BenchContext): Promise<FigureResult> {
  const base = { id: figure.id, title: figure.title };
  const missing = missingFor(figure, context.docker);
  if (missing !== null) {
    progress(`${figure.id} skipped: needs ${missing}`);
    return { ...base, status: 'skipped', reason: `needs ${missing}`, rows: [], profile: null, lifecycleFailures: 0, failures: [] };
  }
  const started = Date.now();
  try {
    const outcome = await figure.run(context);
    progress(`${figure.id} done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return {
      ...base,
      status: 'measured',
      reason: null,
      rows: outcome.rows,
      profile: outcome.profile,
      lifecycleFailures: outcome.lifecycleFailures ?? 0,
      failures: outcome.failures ?? [],
    };
  } catch (err) {
    progress(`${figure.id} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    return { ...base, status: 'failed', reason: failureText(err), rows: [], profile: null, lifecycleFailures: 0, failures: [] };
  }
}

async function runSuite(options: BenchOptions, cleanup: BenchCleanup, runId: string): Promise<BenchReport> {
  const startedAt = new Date();
  const figures = FIGURES.filter((figure) => options.only.includes(figure.id));
  const docker = setUpDocker(figures);
  if (docker.dockerHost !== undefined && docker.engineMissing === null) {
    const leftovers = await earlierRunsLeftovers(dockerClient(docker.dockerHost), runId).catch(() => 0);
    if (leftovers > 0) {
      progress(`${leftovers} container(s) of an interrupted bench run remain; remove them with: docker rm -f $(docker ps -aq --filter label=io.sandboxplane.bench-run)`);
    }
  }
  const server = await startTestDevServer();
  progress(`run ${runId}: Temporal dev server at ${server.address}${docker.dockerHost === undefined ? '' : `, Docker engine at ${docker.dockerHost}`}`);
  return cleanup.guard(
    'dev server and the run containers',
    async () => {
      if (docker.dockerHost !== undefined && docker.engineMissing === null) await removeRunContainers(dockerClient(docker.dockerHost), runId);
      await server.stop();
    },
    async () => {
      let measured: Promise<MeasuredWorker> | undefined;
      const context: BenchContext = {
        options,
        runId,
        server,
        serverPid: devServerPid(server.address),
        docker,
        cleanup,
        progress,
        measuredWorker: () => (measured ??= startMeasuredWorker(context, 'shared')),
      };
      const results: Partial<Record<FigureId, FigureResult>> = {};
      await cleanup.guard(
        'the shared measured worker',
        async () => (await measured?.catch(() => undefined))?.stop(),
        async () => {
          for (const figure of figures) results[figure.id] = await runFigure(figure, context);
        },
      );
      const lifecycleFailures = Object.values(results).reduce((sum, result) => sum + (result?.lifecycleFailures ?? 0), 0);
      return {
        startedAt: startedAt.toISOString(),
        seconds: Math.round((Date.now() - startedAt.getTime()) / 1000),
        machine: await machine(docker),
        options,
        figures: results,
        lifecycleFailures,
      };
    },
  );
}

function printTable(report: BenchReport): void {
  const { machine: host } = report;
  process.stdout.write(
    `npm run bench: ${report.startedAt}, ${report.seconds} s; ${String(host.cpus)} cores (${String(host.cpuModel)}), ${String(host.memoryMb)} MB, ` +
      `load average ${JSON.stringify(host.loadAverage)}; node ${String(host.node)}, ${String(host.temporalCli)}, Docker ${String(host.dockerEngine)}\n` +
      'ratio = measured ÷ baseline; every baseline measured in this run on the same server, worker and engine\n\n',
  );
  process.stdout.write(renderTable(report));
  for (const figure of Object.values(report.figures)) {
    if (figure === undefined || figure.failures.length === 0) continue;
    process.stdout.write(`\n${figure.id} failures:\n${figure.failures.map((line) => `  ${line}\n`).join('')}`);
  }
}

async function run(): Promise<number> {
  let options: BenchOptions;
  try {
    options = parseBenchOptions(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof BenchUsageError)) throw err;
    process.stderr.write(`${err.message}\n`);
    return 2;
  }
  const runId = randomBytes(3).toString('hex');
  const cleanup = new BenchCleanup();
  const interrupted = (signal: NodeJS.Signals) => {
    progress(`${signal}: stopping what this run started and removing its containers`);
    // The figure in flight fails as its worker and server go; that must not end the clean-up.
    const ignore = (err: unknown) => progress(`after ${signal}: ${failureText(err)}`);
    process.on('uncaughtException', ignore);
    process.on('unhandledRejection', ignore);
    interruption = cleanup.runAll(progress).finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  const report = await runSuite(options, cleanup, runId);
  if (options.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else printTable(report);
  const failed = Object.values(report.figures).some((figure) => figure?.status === 'failed' || (figure?.failures.length ?? 0) > 0);
  return report.lifecycleFailures > 0 || failed ? 1 : 0;
}

/** Set by a SIGINT or SIGTERM: its clean-up ends the process (130), not the suite's own end. */
let interruption: Promise<void> | undefined;

run()
  .then(async (code) => {
    await interruption;
    process.exit(code);
  })
  .catch(async (err) => {
    if (interruption !== undefined) return interruption;
    console.error(err);
    process.exit(1);
  });
