import type { Client } from '@temporalio/client';
import { storeCommandWorkflowId } from '../client/store-client';
import { STORE_COMMAND_WORKFLOW } from '../domain/contract-names';
import type { HostRegistration } from '../domain/hosts';
import type { Logger } from '../logging/logger';

const RETRY_MS = 5_000;

/**
 * A docker worker without the store role registers its host through Temporal (the
 * `storeCommand` workflow the store role serves), trying again until it is heard: the
 * store worker may start after it.
 */
export function registerHostUntilDone(input: { client: Client; taskQueue: string; registration: HostRegistration; logger: Logger }): { stop(): void } {
  const { client, taskQueue, registration, logger } = input;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  const attempt = async (): Promise<void> => {
    try {
      await client.workflow.execute(STORE_COMMAND_WORKFLOW, {
        taskQueue,
        workflowId: storeCommandWorkflowId('hosts.register'),
        args: [{ kind: 'hosts.register', registration }],
        workflowExecutionTimeout: '30 seconds',
      });
      logger.info({ hostId: registration.hostId }, 'docker host registered');
    } catch (err) {
      if (stopped) return;
      logger.warn({ err, hostId: registration.hostId }, 'docker host not registered yet; trying again');
      retry = setTimeout(() => void attempt(), RETRY_MS);
      retry.unref();
    }
  };
  void attempt();
  return {
    stop() {
      stopped = true;
      clearTimeout(retry);
    },
  };
}
