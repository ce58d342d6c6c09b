import type { Client } from '@temporalio/client';
import type { AdapterRegistry } from '../adapters/cloud-emulator-adapter';
import { storeCommandWorkflowId } from '../client/store-client';
import type { ContainerBroker } from '../docker';
import { formatBytes } from '../domain/byte-size';
import { STORE_COMMAND_WORKFLOW } from '../domain/contract-names';
import type { HostMemory, HostRegistration } from '../domain/hosts';
import { ADAPTER_NAMES } from '../domain/service-catalog';
import type { WarmPoolTargets } from '../domain/warm-pool';
import type { Logger } from '../logging/logger';

const RETRY_MS = 5_000;

/**
 * The host's memory for its registration (DESIGN §12): the engine's, the share
 * (SANDBOXPLANE_HOST_MEMORY_FRACTION) the memory limits of the plane's containers may add
 * up to, and what one sandbox of each adapter holds. Null when the engine does not say:
 * the host is then bound by its count alone, and the log says so.
 */
export async function measureHostMemory(input: {
  broker: ContainerBroker;
  adapters: AdapterRegistry;
  fraction: number;
  overcommit: number;
  warmPool: WarmPoolTargets;
  logger: Logger;
}): Promise<HostMemory | null> {
  const { broker, adapters, fraction, overcommit, warmPool, logger } = input;
  let engineBytes: number;
  try {
    engineBytes = await broker.engineMemoryBytes();
  } catch (err) {
    logger.warn({ err }, "the engine's memory is unknown: this host is bound by its sandbox count alone");
    return null;
  }
  const perSandboxBytes = Object.fromEntries(ADAPTER_NAMES.flatMap((name) => (adapters[name] === undefined ? [] : [[name, adapters[name].memoryBytes]])));
  const perSandboxRequestBytes = Object.fromEntries(ADAPTER_NAMES.flatMap((name) => (adapters[name] === undefined ? [] : [[name, adapters[name].memoryRequestBytes]])));
  const memory: HostMemory = { engineBytes, capacityBytes: Math.max(1, Math.floor(engineBytes * fraction)), perSandboxBytes, perSandboxRequestBytes, overcommit };
  const pooled = Object.entries(warmPool).reduce((sum, [name, target]) => sum + (target ?? 0) * (perSandboxRequestBytes[name] ?? 0), 0);
  if (pooled > memory.capacityBytes) {
    logger.warn(
      { pooledBytes: pooled, capacityBytes: memory.capacityBytes },
      `the warm pools' containers request ${formatBytes(pooled)}, more than the ${formatBytes(memory.capacityBytes)} this host's containers may: no sandbox fits beside them; keep fewer`,
    );
  }
  return memory;
}

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
