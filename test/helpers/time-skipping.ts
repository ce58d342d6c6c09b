import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { addSearchAttributes } from '../../src/temporal-dev/search-attribute-setup';

const INSTALL_SCRIPT = path.join(__dirname, '..', '..', 'scripts', 'install-temporal-test-server.sh');

let serverPath: string | undefined;

/**
 * The launcher of Temporal's time-skipping test server, installed (once, from Maven
 * Central) by scripts/install-temporal-test-server.sh; later calls reuse the path, and a
 * later process's run of the script only reads a file.
 */
export function temporalTestServerPath(): string {
  if (serverPath !== undefined) return serverPath;
  const output = execFileSync('bash', [INSTALL_SCRIPT], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
  const last = output.trim().split('\n').pop() ?? '';
  if (!path.isAbsolute(last)) throw new Error(`scripts/install-temporal-test-server.sh printed no path (last line: ${last})`);
  serverPath = last;
  return serverPath;
}

/**
 * A time-skipping TestWorkflowEnvironment on the locally installed test server (the SDK's
 * own default downloads a native build at run time, which this machine cannot reach).
 * Our search attributes are registered. The caller owns it: `await env.teardown()` stops the server.
 */
export async function createTimeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: temporalTestServerPath() } },
  });
  // The lifecycle upserts our search attributes; this server can add them but not list them.
  await addSearchAttributes(env.connection, env.namespace ?? 'default');
  return env;
}
