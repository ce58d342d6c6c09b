import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DevServer } from '../../src/temporal-dev/dev-server';
import { ensureSearchAttributes } from '../../src/temporal-dev/search-attribute-setup';
import { locateTemporalCli } from '../../src/temporal-dev/temporal-cli';
import { freePort } from '../harness/free-port';

/**
 * A `temporal server start-dev` of one test's own that can be stopped and started again
 * on the same ports and the same `--db-filename`, as an operator restarts a server:
 * histories, timers and registered search attributes live in that file.
 */
export interface RestartableDevServer {
  readonly address: string;
  readonly dbFile: string;
  readonly running: boolean;
  /** SIGTERM (SIGKILL after a grace period); resolves once the process has exited. */
  stop(): Promise<void>;
  /**
   * Starts it again and waits for the frontend; returns the search attributes it had to
   * register (none when they survived in the database).
   */
  start(): Promise<string[]>;
  /** Stops it and deletes its database. */
  dispose(): Promise<void>;
}

/** Starts the server on free ports and a fresh database file, with our search attributes registered. */
export async function startRestartableDevServer(): Promise<RestartableDevServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-restartable-temporal-'));
  const dbFile = path.join(dir, 'temporal.sqlite');
  const [port, uiPort, httpPort, metricsPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const cliPath = locateTemporalCli(process.env.SANDBOXPLANE_TEMPORAL_CLI);
  let server: DevServer | undefined;
  const killOnExit = () => server?.killNow();
  process.once('exit', killOnExit);

  const start = async (): Promise<string[]> => {
    if (server?.running) return [];
    const started = await DevServer.start({
      cliPath,
      port,
      uiPort,
      httpPort,
      metricsPort,
      dbFile,
      namespace: 'default',
      startTimeoutMs: 60_000,
      onSpawn: (spawned) => {
        server = spawned;
      },
    });
    try {
      return await ensureSearchAttributes(started.connection, 'default');
    } finally {
      await started.connection.close();
    }
  };
  const stop = async () => {
    await server?.stop();
  };
  try {
    await start();
  } catch (err) {
    await stop();
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    address: `127.0.0.1:${port}`,
    dbFile,
    get running() {
      return server?.running ?? false;
    },
    stop,
    start,
    dispose: async () => {
      await stop();
      process.removeListener('exit', killOnExit);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
