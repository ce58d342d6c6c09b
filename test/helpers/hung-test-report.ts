/**
 * Loaded into each test file's process by test/run-tests.ts (`--import`). node's
 * `--test-timeout` bounds a whole file: when it fires, node stops the file's process with
 * SIGTERM and reports only the file's name. This notes which test was running then, in the
 * file named by `SANDBOXPLANE_TEST_STOPPED_LOG`, and the runner prints it after the run.
 */
import fs from 'node:fs';
import { afterEach, beforeEach } from 'node:test';

export const STOPPED_LOG_ENV = 'SANDBOXPLANE_TEST_STOPPED_LOG';

/** One line of the log: the file stopped, the test it was running (none: a hook or the file's top level) and for how long. */
export interface StoppedFile {
  readonly file: string;
  readonly test?: string;
  readonly runningMs?: number;
}

const log = process.env[STOPPED_LOG_ENV];
// Only in the process of a test file: node --test runs this module in its own process too.
if (log !== undefined && process.env.NODE_TEST_CONTEXT !== undefined) {
  let running: { name: string; since: number } | undefined;
  beforeEach((t) => {
    running = { name: t.name, since: Date.now() };
  });
  afterEach(() => {
    running = undefined;
  });
  process.once('SIGTERM', () => {
    const stopped: StoppedFile = { file: process.argv[1] ?? '?', test: running?.name, runningMs: running && Date.now() - running.since };
    fs.appendFileSync(log, `${JSON.stringify(stopped)}\n`);
    process.exit(1);
  });
}
