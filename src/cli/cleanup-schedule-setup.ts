import type { Client } from '@temporalio/client';
import { ensureCleanupSchedule } from '../client/cleanup-schedule';
import type { Config } from '../config/config';
import { CLEANUP_SCHEDULE_ID } from '../domain/contract-names';
import { formatDuration } from '../domain/duration';
import type { Logger } from '../logging/logger';

/**
 * Creates or aligns the cleanup schedule when a worker starts. A failure is logged, not
 * fatal: the worker still serves sandboxes, and `sandboxctl sweep` says what is missing.
 */
export async function ensureScheduleOrWarn(client: Client, config: Config, logger: Logger): Promise<string> {
  try {
    const outcome = await ensureCleanupSchedule(client, { taskQueue: config.taskQueue, intervalSeconds: config.sweepIntervalSeconds });
    const every = formatDuration(config.sweepIntervalSeconds);
    logger.info({ scheduleId: CLEANUP_SCHEDULE_ID, outcome, every }, 'cleanup schedule');
    return `${CLEANUP_SCHEDULE_ID} ${outcome} (every ${every})`;
  } catch (err) {
    logger.error({ err, scheduleId: CLEANUP_SCHEDULE_ID }, 'could not create the cleanup schedule; leaks will not be swept');
    return `${CLEANUP_SCHEDULE_ID} could not be created: ${(err as Error).message}`;
  }
}
