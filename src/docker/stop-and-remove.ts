import { isSandboxPlaneError } from '../domain/errors';
import { silentLogger, type BrokerLogger } from './broker-logger';
import type { ContainerBroker, RemoveOutcome, StopOutcome } from './container-broker';

/** What a teardown found: `already_*` are the absorbed, harmless cases. */
export interface StopAndRemoveOutcome {
  readonly stop: StopOutcome | 'already_gone';
  readonly remove: RemoveOutcome;
}

export interface StopAndRemoveOptions {
  /** Seconds the engine waits after SIGTERM before SIGKILL. Default 5. */
  readonly timeoutSeconds?: number;
  readonly logger?: BrokerLogger;
}

/**
 * Stops a container, then removes it: the one teardown that lifecycle destroy and the
 * cleanup sweep share. A container another teardown already stopped or removed is an
 * outcome, not an error, because the two race for the same containers by design.
 */
export async function stopAndRemove(broker: ContainerBroker, containerId: string, options: StopAndRemoveOptions = {}): Promise<StopAndRemoveOutcome> {
  const logger = options.logger ?? silentLogger;
  let stop: StopAndRemoveOutcome['stop'];
  try {
    stop = await broker.stop(containerId, { timeoutSeconds: options.timeoutSeconds ?? 5 });
  } catch (err) {
    if (!(isSandboxPlaneError(err) && err.code === 'CONTAINER_NOT_FOUND')) throw err;
    logger.info({ containerId }, 'stop absorbed: container already gone');
    stop = 'already_gone';
  }
  const remove = await broker.remove(containerId, { force: true });
  logger.info({ containerId, stop, remove }, 'container stopped and removed');
  return { stop, remove };
}
