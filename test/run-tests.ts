/**
 * The test suite's entry point (`npm test`): starts what the tests need — a real
 * Temporal dev server from the installed CLI — runs every `test/**\/*.test.ts` file
 * with node's test runner, and stops it all again. Arguments filter the files by
 * substring: `npm test -- store config`.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startTestDevServer, TEST_TEMPORAL_ENV } from './helpers/test-temporal';

const TEST_DIR = __dirname;

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

  const started = Date.now();
  const temporal = await startTestDevServer();
  process.stdout.write(`test run: Temporal dev server at ${temporal.address} (UI ${temporal.uiUrl}), up in ${Date.now() - started} ms\n`);
  try {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--test', '--test-concurrency=1', '--test-reporter=spec', ...files],
      { stdio: 'inherit', env: { ...process.env, [TEST_TEMPORAL_ENV]: temporal.address } },
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
