/**
 * Loaded into each test file's process by test/run-tests.ts (`--import`). node's
 * `--test-timeout` bounds a whole file: when it fires, node stops the file's process with
 * SIGTERM and reports only the file's name. This notes which test was running then, in the
 * file named by `SANDBOXPLANE_TEST_STOPPED_LOG` (STOPPED_LOG_ENV in test/run-tests.ts), as
 * one JSON line `{file, test?, runningMs?}`; the runner prints it after the run.
 *
 * Plain JavaScript: worker threads inherit `--import`, and the Temporal worker's workflow
 * thread has no TypeScript loader.
 */
import fs from 'node:fs';
import { afterEach, beforeEach } from 'node:test';
import { isMainThread } from 'node:worker_threads';

const log = process.env.SANDBOXPLANE_TEST_STOPPED_LOG;
// Only in the main thread of a test file's process: node --test runs this module in its own process too.
if (log !== undefined && process.env.NODE_TEST_CONTEXT !== undefined && isMainThread) {
  let running;
  beforeEach((t) => {
    running = { name: t.name, since: Date.now() };
  });
  afterEach(() => {
    running = undefined;
  });
  process.once('SIGTERM', () => {
    const stopped = { file: process.argv[1] ?? '?', test: running?.name, runningMs: running && Date.now() - running.since };
    fs.appendFileSync(log, `${JSON.stringify(stopped)}\n`);
    process.exit(1);
  });
}
