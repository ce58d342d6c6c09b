/**
 * The test suite's entry point. `npm test` runs every `test/**\/*.test.ts` file;
 * `npm run test:unit` (`--unit`) only those under test/unit/; `npm run test:cluster`
 * (`--cluster`) only those under test/cluster/, which `npm test` leaves out. Arguments filter the files
 * by substring of their path under test/: `npm test -- store`, `npm run test:unit -- policy`.
 *
 * It starts only what the selected files need: files under test/unit/ need nothing; any
 * other file gets a Docker engine with the locally built test images and a real Temporal
 * dev server from the installed CLI, which is stopped again at the end.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { prepareDocker, runSetupScript } from './harness/setup-scripts';
import { isCluster, isUnit, selectTestFiles, type TestFile } from './helpers/test-files';
import { startTestDevServer, TEST_TEMPORAL_ENV, TEST_TEMPORAL_UI_ENV, type TestDevServer } from './harness/test-temporal';

const TEST_DIR = __dirname;

/** Read by helpers/hung-test-report.mjs: where a file stopped by --test-timeout notes the test it was running. */
const STOPPED_LOG_ENV = 'SANDBOXPLANE_TEST_STOPPED_LOG';

/** One line of that log: the file stopped, the test it was running (none: a hook or the file's top level) and for how long. */
interface StoppedFile {
  readonly file: string;
  readonly test?: string;
  readonly runningMs?: number;
}
/**
 * node's `--test-timeout`, which bounds each test FILE (its process), not each test: above the
 * slowest file that passes, so only a hung one hits it. A test's own `{ timeout }` still bounds
 * that test, within its file's bound. The cluster file's tests allow 20 + 15 + 10 minutes.
 */
const FILE_TIMEOUT_MS = { default: 30 * 60_000, cluster: 60 * 60_000 } as const;

/** What a test file needs running before it starts. */
interface Needs {
  readonly docker: boolean;
  readonly temporal: boolean;
}

/**
 * Decided by folder, so a file's needs are visible in the tree: test/unit/ needs nothing,
 * and test/cluster/ starts its own cluster and engines (scripts/cluster.sh).
 */
function needsOf(testFile: TestFile): Needs {
  const own = isUnit(testFile) || isCluster(testFile);
  return { docker: !own, temporal: !own };
}

/** Debian's Chromium, for the test files that drive a browser (they import helpers/browser). */
function prepareChromium(files: readonly TestFile[]): { SANDBOXPLANE_CHROMIUM: string } | undefined {
  if (!files.some(({ file }) => /from '(\.\.?\/)+helpers\/browser'/.test(fs.readFileSync(file, 'utf8')))) return undefined;
  const chromium = runSetupScript('install-chromium.sh');
  if (!chromium.startsWith('/')) throw new Error(`scripts/install-chromium.sh printed no path (last line: ${chromium})`);
  return { SANDBOXPLANE_CHROMIUM: chromium };
}

/** Jaeger (built from the Go module proxy once) and Debian's Prometheus, for the test files that start them (helpers/telemetry-stack). */
function prepareTelemetry(files: readonly TestFile[]): { SANDBOXPLANE_JAEGER: string; SANDBOXPLANE_PROMETHEUS: string } | undefined {
  if (!files.some(({ file }) => /from '(\.\.?\/)+helpers\/telemetry-stack'/.test(fs.readFileSync(file, 'utf8')))) return undefined;
  const paths = { SANDBOXPLANE_JAEGER: runSetupScript('install-jaeger.sh'), SANDBOXPLANE_PROMETHEUS: runSetupScript('install-prometheus.sh') };
  for (const [name, found] of Object.entries(paths)) {
    if (!found.startsWith('/')) throw new Error(`the installer of ${name} printed no path (last line: ${found})`);
  }
  return paths;
}

/** Runs the files with node's test runner and resolves with its exit code. */
async function runNodeTest(files: readonly TestFile[], timeoutMs: number, env: NodeJS.ProcessEnv): Promise<number> {
  const stoppedLog = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-test-')), 'stopped.jsonl');
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--import',
      path.join(TEST_DIR, 'helpers', 'hung-test-report.mjs'),
      '--test',
      '--test-concurrency=1',
      `--test-timeout=${timeoutMs}`,
      '--test-reporter=spec',
      ...files.map(({ file }) => file),
    ],
    { stdio: 'inherit', env: { ...env, [STOPPED_LOG_ENV]: stoppedLog } },
  );
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  const code = await new Promise<number>((resolve) => child.once('exit', (exitCode) => resolve(exitCode ?? 1)));
  process.removeListener('SIGINT', forward);
  process.removeListener('SIGTERM', forward);
  reportStoppedFiles(stoppedLog, timeoutMs);
  fs.rmSync(path.dirname(stoppedLog), { recursive: true, force: true });
  return code;
}

/** Names the test each file was running when `--test-timeout` stopped it: node's own report names only the file. */
function reportStoppedFiles(stoppedLog: string, timeoutMs: number): void {
  if (!fs.existsSync(stoppedLog)) return;
  for (const line of fs.readFileSync(stoppedLog, 'utf8').split('\n').filter(Boolean)) {
    const stopped = JSON.parse(line) as StoppedFile;
    const what = stopped.test === undefined ? 'outside any test (a before or after hook, or the top level)' : `"${stopped.test}", for ${Math.round((stopped.runningMs ?? 0) / 1000)} s`;
    process.stdout.write(`test run: ${path.relative(TEST_DIR, stopped.file)} hit --test-timeout=${timeoutMs} while running ${what}\n`);
  }
}

async function run(): Promise<number> {
  const args = process.argv.slice(2);
  const unitOnly = args.includes('--unit');
  const cluster = args.includes('--cluster');
  const filters = args.filter((arg) => arg !== '--unit' && arg !== '--cluster');
  const files = selectTestFiles(TEST_DIR, { unitOnly, cluster, filters });
  if (files.length === 0) throw new Error(`no test file${unitOnly ? ' under test/unit/' : ''} matches ${filters.join(' ')}`);

  const needs = files.map(needsOf);
  const docker = needs.some((need) => need.docker) ? prepareDocker() : undefined;
  if (docker !== undefined) process.stdout.write(`test run: Docker engine at ${docker.DOCKER_HOST}, moto image ${docker.SANDBOXPLANE_MOTO_IMAGE}\n`);
  const chromium = prepareChromium(files);
  const telemetry = prepareTelemetry(files);
  let temporal: TestDevServer | undefined;
  if (needs.some((need) => need.temporal)) {
    const started = Date.now();
    temporal = await startTestDevServer();
    process.stdout.write(`test run: Temporal dev server at ${temporal.address} (UI ${temporal.uiUrl}), up in ${Date.now() - started} ms\n`);
  }
  if (docker === undefined && temporal === undefined && !cluster) process.stdout.write(`test run: ${files.length} file(s) needing neither Docker nor Temporal\n`);
  try {
    const temporalEnv = temporal === undefined ? {} : { [TEST_TEMPORAL_ENV]: temporal.address, [TEST_TEMPORAL_UI_ENV]: temporal.uiUrl };
    return await runNodeTest(files, cluster ? FILE_TIMEOUT_MS.cluster : FILE_TIMEOUT_MS.default, { ...process.env, ...docker, ...chromium, ...telemetry, ...temporalEnv });
  } finally {
    await temporal?.stop();
  }
}

run()
  .then((code) => {
    process.exitCode = code;
  })
  .catch((err) => {
    console.error(err);
    process.exit(1);
  });
