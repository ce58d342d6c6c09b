import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';
import { DevServer } from '../../src/temporal-dev/dev-server';
import { ensureSearchAttributes } from '../../src/temporal-dev/search-attribute-setup';
import { locateTemporalCli } from '../../src/temporal-dev/temporal-cli';
import { freePort } from './free-port';

/** Set by test/run-tests.ts for the test files it runs: the address of its dev server. */
export const TEST_TEMPORAL_ENV = 'SANDBOXPLANE_TEST_TEMPORAL_ADDRESS';

export interface TestDevServer {
  readonly address: string;
  readonly uiUrl: string;
  stop(): Promise<void>;
}

/**
 * A real `temporal server start-dev` from the installed CLI, on free ports and a
 * throw-away database, with our search attributes registered.
 */
export async function startTestDevServer(): Promise<TestDevServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-temporal-'));
  const [port, uiPort, httpPort, metricsPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const { server, connection } = await DevServer.start({
    cliPath: locateTemporalCli(process.env.SANDBOXPLANE_TEMPORAL_CLI),
    port,
    uiPort,
    httpPort,
    metricsPort,
    dbFile: path.join(dir, 'temporal.sqlite'),
    namespace: 'default',
    startTimeoutMs: 60_000,
  });
  try {
    await ensureSearchAttributes(connection, 'default');
  } finally {
    await connection.close();
  }
  return {
    address: server.address,
    uiUrl: server.uiUrl,
    stop: async () => {
      await server.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The dev server of this test run: the runner's when it set one, otherwise one this
 * file starts for itself (running a single file by hand) and stops when it ends.
 */
export async function testTemporalAddress(): Promise<string> {
  const shared = process.env[TEST_TEMPORAL_ENV];
  if (shared !== undefined && shared !== '') return shared;
  const own = await startTestDevServer();
  after(() => own.stop());
  return own.address;
}
