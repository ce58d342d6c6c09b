/**
 * The test suite's entry point (`npm test`): starts what the tests need — a Docker
 * engine with the locally built test images, and a real Temporal dev server from the
 * installed CLI — runs every `test/**\/*.test.ts` file with node's test runner, and
 * stops the server again. Arguments filter the files by substring: `npm test -- store`.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startTestDevServer, TEST_TEMPORAL_ENV, TEST_TEMPORAL_UI_ENV } from './helpers/test-temporal';

const TEST_DIR = __dirname;
const SCRIPTS_DIR = path.join(TEST_DIR, '..', 'scripts');

/** Runs a set-up script; its progress goes to our stderr, its stdout comes back. */
function runScript(name: string, env: NodeJS.ProcessEnv): string {
  return execFileSync('bash', [path.join(SCRIPTS_DIR, name)], { env, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
}

function lastLine(output: string): string {
  return output.trim().split('\n').pop() ?? '';
}

/** The engine the tests use (found or started by scripts/docker-engine.sh) and the images they run. */
function prepareDocker(): { DOCKER_HOST: string; SANDBOXPLANE_MOTO_IMAGE: string } {
  const hostLine = lastLine(runScript('docker-engine.sh', process.env));
  const match = /^DOCKER_HOST=(.+)$/.exec(hostLine);
  if (match?.[1] === undefined) throw new Error(`scripts/docker-engine.sh printed no DOCKER_HOST line (last line: ${hostLine})`);
  const env = { ...process.env, DOCKER_HOST: match[1] };
  runScript('build-test-image.sh', env);
  const motoImage = lastLine(runScript('build-moto-image.sh', env));
  if (!/^sha256:[0-9a-f]{64}$/.test(motoImage)) throw new Error(`scripts/build-moto-image.sh printed no image id (last line: ${motoImage})`);
  return { DOCKER_HOST: match[1], SANDBOXPLANE_MOTO_IMAGE: motoImage };
}

/** Debian's Chromium, for the test files that drive a browser (they import helpers/browser). */
function prepareChromium(files: readonly string[]): { SANDBOXPLANE_CHROMIUM: string } | undefined {
  if (!files.some((file) => fs.readFileSync(file, 'utf8').includes("from './helpers/browser'"))) return undefined;
  const chromium = lastLine(runScript('install-chromium.sh', process.env));
  if (!chromium.startsWith('/')) throw new Error(`scripts/install-chromium.sh printed no path (last line: ${chromium})`);
  return { SANDBOXPLANE_CHROMIUM: chromium };
}

function testFiles(filters: readonly string[]): string[] {
  const files = (fs.readdirSync(TEST_DIR, { recursive: true }) as string[])
    .filter((file) => file.endsWith('.test.ts'))
    .map((file) => path.join(TEST_DIR, file))
    .sort();
  return filters.length === 0 ? files : files.filter((file) => filters.some((filter) => file.includes(filter)));
}

async function run(): Promise<number> {
  const files = testFiles(process.argv.slice(2));
  if (files.length === 0) throw new Error(`no test file matches ${process.argv.slice(2).join(' ')}`);

  const docker = prepareDocker();
  const chromium = prepareChromium(files);
  process.stdout.write(`test run: Docker engine at ${docker.DOCKER_HOST}, moto image ${docker.SANDBOXPLANE_MOTO_IMAGE}\n`);
  const started = Date.now();
  const temporal = await startTestDevServer();
  process.stdout.write(`test run: Temporal dev server at ${temporal.address} (UI ${temporal.uiUrl}), up in ${Date.now() - started} ms\n`);
  try {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--test', '--test-concurrency=1', '--test-reporter=spec', ...files],
      {
        stdio: 'inherit',
        env: { ...process.env, ...docker, ...chromium, [TEST_TEMPORAL_ENV]: temporal.address, [TEST_TEMPORAL_UI_ENV]: temporal.uiUrl },
      },
    );
    const forward = (signal: NodeJS.Signals) => child.kill(signal);
    process.on('SIGINT', forward);
    process.on('SIGTERM', forward);
    const code = await new Promise<number>((resolve) => child.once('exit', (exitCode) => resolve(exitCode ?? 1)));
    process.removeListener('SIGINT', forward);
    process.removeListener('SIGTERM', forward);
    return code;
  } finally {
    await temporal.stop();
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
