import { ensureCodecKeys } from '../codec/codec-settings';
import { overrideConfig, type Config } from '../config/config';
import type { Logger } from '../logging/logger';
import { Store } from '../store';
import { ensureSearchAttributesAt } from '../temporal-dev/search-attribute-setup';
import { createPlaneWorker } from '../worker/plane-worker';
import { ensureScheduleOrWarn } from './cleanup-schedule-setup';
import { StopRequested, watchStopSignals } from './stop-signals';

/**
 * `sandboxctl worker`: the configured roles (all three by default) until SIGINT or
 * SIGTERM, then a graceful drain. Only the store role opens the SQLite file.
 */
export async function runWorkerCommand(baseConfig: Config, logger: Logger): Promise<void> {
  // A worker starts the plane, so it makes the checkout's codec key when there is none; clients only read it.
  const config = overrideConfig(baseConfig, { codec: ensureCodecKeys(baseConfig.codec) });
  const stop = watchStopSignals(() => undefined);
  const store = config.workerRoles.includes('store') ? Store.open(config.storePath) : undefined;
  try {
    // A managed cluster may refuse operator calls; the worker can still serve, so warn and go on.
    await stop.untilStopped(ensureSearchAttributesAt(config.temporalAddress, config.temporalNamespace, config.temporalTls)).catch((err: unknown) => {
      if (err instanceof StopRequested) throw err;
      logger.warn({ err }, 'could not register search attributes; `sandboxctl doctor` shows which are missing');
    });
    const plane = await stop.untilStopped(createPlaneWorker({ config, store, logger }));
    // The schedule starts sweeps on the lifecycle queue; whoever runs the store role keeps it in place.
    if (store !== undefined) await ensureScheduleOrWarn(plane.client, config, logger);
    void stop.requested.then(() => plane.worker.shutdown());
    try {
      await plane.worker.run();
    } finally {
      await plane.close();
    }
  } catch (err) {
    if (!(err instanceof StopRequested)) throw err;
  } finally {
    store?.close();
    stop.dispose();
  }
}
