import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { devUiOrigins, startCodecServer } from '../../src/codec/codec-server';
import { ensureCodecKeys, payloadCodecFor } from '../../src/codec/codec-settings';
import { loadCodecSettings } from '../../src/config/config';
import { DevServer } from '../../src/temporal-dev/dev-server';
import { ensureSearchAttributes } from '../../src/temporal-dev/search-attribute-setup';
import { locateTemporalCli } from '../../src/temporal-dev/temporal-cli';
import { freePort } from './free-port';

/** Set by test/run-tests.ts for the test files it runs: the address of its dev server. */
export const TEST_TEMPORAL_ENV = 'SANDBOXPLANE_TEST_TEMPORAL_ADDRESS';
/** Set by test/run-tests.ts next to TEST_TEMPORAL_ENV: the Web UI of the same dev server. */
export const TEST_TEMPORAL_UI_ENV = 'SANDBOXPLANE_TEST_TEMPORAL_UI_URL';

export interface TestDevServer {
  readonly address: string;
  readonly uiUrl: string;
  stop(): Promise<void>;
  /** Synchronous, for `process.on('exit')`. */
  killNow(): void;
  /** Lets the test process exit with the server still up (its exit handler kills it). */
  unrefProcess(): void;
}

/**
 * A real `temporal server start-dev` from the installed CLI, on free ports and a
 * throw-away database, with our search attributes registered.
 */
export async function startTestDevServer(): Promise<TestDevServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-temporal-'));
  const [port, uiPort, httpPort, metricsPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  // The UI decrypts payloads through it, with the keys every test worker and client reads (.data/codec-keys,
  // made here on the first run: the test run's dev server starts before any of them).
  const codecServer = await startCodecServer({ codec: payloadCodecFor(ensureCodecKeys(loadCodecSettings({}))), port: 0, origins: devUiOrigins(uiPort) });
  const { server, connection } = await DevServer.start({
    cliPath: locateTemporalCli(process.env.SANDBOXPLANE_TEMPORAL_CLI),
    port,
    uiPort,
    httpPort,
    metricsPort,
    dbFile: path.join(dir, 'temporal.sqlite'),
    namespace: 'default',
    startTimeoutMs: 60_000,
    uiCodecEndpoint: codecServer.url,
  }).catch(async (err: unknown) => {
    await codecServer.close();
    throw err;
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
      await codecServer.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
    killNow: () => {
      server.killNow();
      void codecServer.close();
    },
    unrefProcess: () => {
      server.unrefProcess();
      codecServer.unref();
    },
  };
}

let ownServer: Promise<TestDevServer> | undefined;

/**
 * The dev server of this test run: the runner's when it set one, otherwise one this
 * process starts once (running a single file by hand) and kills when it exits. (An
 * `after` hook registered from inside a `before` hook would run as soon as that hook
 * ends, so the process's exit is the moment to stop it.)
 */
export async function testTemporalAddress(): Promise<string> {
  const shared = process.env[TEST_TEMPORAL_ENV];
  if (shared !== undefined && shared !== '') return shared;
  ownServer ??= startTestDevServer().then((server) => {
    server.unrefProcess();
    process.once('exit', () => server.killNow());
    return server;
  });
  return (await ownServer).address;
}

/**
 * The dev server of this test run with its Web UI: the runner's when it set both
 * variables (then `stop` does nothing), otherwise one started for this file alone. The
 * caller stops it in its own `after` hook, after whatever uses it: an `after` registered
 * from inside a `before` hook (as testTemporalAddress does) runs as soon as that hook ends.
 */
export async function testTemporalUi(): Promise<{ address: string; uiUrl: string; stop(): Promise<void> }> {
  const address = process.env[TEST_TEMPORAL_ENV];
  const uiUrl = process.env[TEST_TEMPORAL_UI_ENV];
  if (address !== undefined && address !== '' && uiUrl !== undefined && uiUrl !== '') {
    return { address, uiUrl, stop: () => Promise.resolve() };
  }
  const server = await startTestDevServer();
  return { address: server.address, uiUrl: server.uiUrl, stop: () => server.stop() };
}
