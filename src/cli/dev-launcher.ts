import { Client, type Connection } from '@temporalio/client';
import { overrideConfig, type Config } from '../config/config';
import { flagEnvName } from '../domain/feature-flags';
import { enableLocalFlags } from '../config/local-flags';
import { DEFAULT_TEMPORAL_DB_PATH } from '../config/paths';
import { runRoundTrip } from '../client/round-trip';
import { dataConverterFor } from '../client/temporal-connection';
import { DEFAULT_CODEC_SERVER_PORT, devUiOrigins, startCodecServer, type CodecServer } from '../codec/codec-server';
import { ensureCodecKeys, payloadCodecFor } from '../codec/codec-settings';
import { SandboxPlaneError } from '../domain/errors';
import { tracingClientInterceptors } from '../telemetry/tracing';
import type { Logger } from '../logging/logger';
import { Store } from '../store';
import { DevServer } from '../temporal-dev/dev-server';
import { connectIfAnswering } from '../temporal-dev/frontend-probe';
import { ensureSearchAttributes } from '../temporal-dev/search-attribute-setup';
import { locateTemporalCli } from '../temporal-dev/temporal-cli';
import { createPlaneWorker, type PlaneWorker } from '../worker/plane-worker';
import { ensureScheduleOrWarn } from './cleanup-schedule-setup';
import { StopRequested, watchStopSignals } from './stop-signals';

export interface DevLauncherOptions {
  readonly port?: number;
  readonly uiPort: number;
  readonly dbFile?: string;
  /** Port of the codec server the launcher runs for its UI (default 8234). */
  readonly codecPort?: number;
}

const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

function describeAdapters(config: Config): string {
  const { motoImage, flociImage } = config.emulators;
  return [
    'memory',
    motoImage !== undefined ? `moto (${motoImage.slice(0, 19)})` : 'moto off (set SANDBOXPLANE_MOTO_IMAGE, or use npm start)',
    flociImage !== undefined ? `floci (${flociImage})` : 'floci off (set SANDBOXPLANE_FLOCI_IMAGE to floci/floci@sha256:...)',
  ].join(', ');
}

function splitAddress(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(':');
  return { host: address.slice(0, colon), port: Number(address.slice(colon + 1)) };
}

/**
 * `sandboxctl dev`: a Temporal dev server (unless one already answers), our search
 * attributes, the store, one worker and a round trip proving they work together.
 * Runs in the foreground until SIGINT or SIGTERM, then stops what it started, the
 * worker first and the server last, so no process is left behind.
 */
export async function runDevLauncher(baseConfig: Config, options: DevLauncherOptions, logger: Logger): Promise<void> {
  const address = options.port !== undefined ? `127.0.0.1:${options.port}` : baseConfig.temporalAddress;
  // The dev server speaks plain gRPC on loopback: certificates meant for a cluster are not used here.
  const { config, enabled } = enableLocalFlags(overrideConfig(baseConfig, { temporalAddress: address, temporalTls: undefined }));

  let server: DevServer | undefined;
  let connection: Connection | undefined;
  let store: Store | undefined;
  let plane: PlaneWorker | undefined;
  let codecServer: CodecServer | undefined;
  const stop = watchStopSignals(() => server?.killNow());
  try {
    // Read (or made: the launcher starts the plane) first: a bad key is a CONFIG error before anything starts.
    const codec = payloadCodecFor(ensureCodecKeys(config.codec));
    say(`dev: payloads encrypted with key ${codec.currentKeyId} from ${config.codec.keysFile ?? 'SANDBOXPLANE_CODEC_KEYS'}`);
    if (enabled.length > 0) {
      say(`dev: turning on local flags ${enabled.map(flagEnvName).join(', ')} (set one to 0 to keep it off)`);
    }
    connection = await stop.untilStopped(connectIfAnswering(address, 1_500));
    if (connection !== undefined) {
      say(`dev: a Temporal server already answers at ${address}; using it (its UI is not managed here)`);
      say("dev: for that UI to show payloads decrypted, run `sandboxctl codec-server --origin <its URL>` and set it as the UI's codec endpoint");
    } else {
      const { host, port } = splitAddress(address);
      if (!LOCAL_HOSTS.has(host)) {
        throw new SandboxPlaneError('TEMPORAL_UNREACHABLE', `nothing answers at ${address}, and it is not a local address to start a dev server on`);
      }
      const dbFile = options.dbFile ?? DEFAULT_TEMPORAL_DB_PATH;
      codecServer = await startCodecServer({ codec, port: options.codecPort ?? DEFAULT_CODEC_SERVER_PORT, origins: devUiOrigins(options.uiPort), logger });
      say(`dev: codec server at ${codecServer.url}: the UI shows payloads decrypted through it`);
      say(`dev: starting the Temporal dev server on ${address} (history in ${dbFile})`);
      const starting = DevServer.start({
        cliPath: locateTemporalCli(config.temporalCliPath),
        port,
        uiPort: options.uiPort,
        dbFile,
        namespace: config.temporalNamespace,
        uiCodecEndpoint: codecServer.url,
        onOutput: (line) => logger.debug({ source: 'temporal' }, line),
        onSpawn: (spawned) => {
          server = spawned;
        },
      });
      connection = (await stop.untilStopped(starting)).connection;
    }

    const added = await stop.untilStopped(ensureSearchAttributes(connection, config.temporalNamespace));
    if (added.length > 0) say(`dev: registered search attributes ${added.join(', ')}`);

    store = Store.open(config.storePath);
    say(`dev: store ${config.storePath} at schema version ${store.schemaVersion}`);
    say(`dev: adapters ${describeAdapters(config)}`);

    // The launcher is the whole plane: its build becomes current, whatever ran here before.
    plane = await stop.untilStopped(createPlaneWorker({ config, store, logger, promote: 'always' }));
    say(`dev: cleanup schedule ${await ensureScheduleOrWarn(plane.client, config, logger)}`);
    const worker = plane.worker;
    const running = worker.run();
    const shutdownWorker = () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
    };
    void stop.requested.then(shutdownWorker);
    void server?.whenExited().then(shutdownWorker);

    try {
      const client = new Client({ connection, namespace: config.temporalNamespace, dataConverter: dataConverterFor(codec), interceptors: tracingClientInterceptors() });
      const result = await stop.untilStopped(runRoundTrip(client, { taskQueue: config.taskQueue, requestedBy: 'dev' }));
      say(`dev: round trip ok through worker ${result.workerIdentity} (workflow ${result.workflowId})`);
      if (server !== undefined) say(`dev: Temporal UI at ${server.uiUrl}/namespaces/${config.temporalNamespace}/workflows`);
      say(`dev: ready on ${address}, task queue ${config.taskQueue}. Ctrl-C stops it.`);
      say(`dev: Temporal at ${address} is open to anyone on this machine (no mTLS); the cluster requires client certificates: scripts/cluster.sh`);
    } catch (err) {
      shutdownWorker();
      await running.catch(() => undefined);
      throw err;
    }

    await running;
    if (server !== undefined && !server.running) {
      throw new SandboxPlaneError('DEV_SERVER_FAILED', `the Temporal dev server stopped (${server.exitDescription}). Its last output:\n${server.tail()}`);
    }
    say('dev: worker stopped');
  } catch (err) {
    if (!(err instanceof StopRequested)) throw err;
    say(`dev: ${err.message} during start-up`);
  } finally {
    await plane?.close();
    store?.close();
    await connection?.close();
    if (server !== undefined) {
      await server.stop();
      say('dev: Temporal dev server stopped');
    }
    await codecServer?.close();
    stop.dispose();
  }
}
