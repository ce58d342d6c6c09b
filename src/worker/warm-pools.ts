import type { AdapterRegistry } from '../adapters/cloud-emulator-adapter';
import { ContainerEmulatorAdapter } from '../adapters/container-emulator';
import { WarmPool } from '../adapters/warm-pool';
import type { ContainerBroker } from '../docker';
import { SandboxPlaneError } from '../domain/errors';
import { POOLABLE_ADAPTERS, type PoolableAdapter, type PoolStatus, type WarmPoolTargets } from '../domain/warm-pool';
import type { Logger } from '../logging/logger';

/** The warm pools of one docker worker, one per poolable adapter it runs. */
export interface WarmPools {
  statuses(): Promise<PoolStatus[]>;
  /** Each configured pool's depth as this process knows it (no engine call). */
  depths(): { adapter: PoolableAdapter; target: number; ready: number; starting: number }[];
  stop(): Promise<void>;
}

function poolableAdapter(adapters: AdapterRegistry, name: PoolableAdapter): (ContainerEmulatorAdapter & { readonly name: PoolableAdapter }) | undefined {
  const adapter = adapters[name];
  return adapter instanceof ContainerEmulatorAdapter && adapter.poolable ? (adapter as ContainerEmulatorAdapter & { readonly name: PoolableAdapter }) : undefined;
}

/**
 * Starts the docker host's warm pools (DESIGN §13) and lets each adapter claim from its
 * own. Every poolable adapter gets a pool, with target 0 unless configured, so idle
 * containers an earlier run left are drained when the pool is turned off.
 */
export async function startWarmPools(input: {
  hostId: string;
  targets: WarmPoolTargets;
  adapters: AdapterRegistry;
  broker: ContainerBroker;
  logger: Logger;
  checkIntervalMs?: number;
}): Promise<WarmPools> {
  const { targets, adapters } = input;
  const missing = POOLABLE_ADAPTERS.filter((name) => (targets[name] ?? 0) > 0 && poolableAdapter(adapters, name) === undefined);
  if (missing.length > 0) {
    throw new SandboxPlaneError('CONFIG_INVALID', `SANDBOXPLANE_WARM_POOL asks for a ${missing.join(', ')} pool, but this docker worker does not run that adapter`, {
      hint: `Set its image (SANDBOXPLANE_${missing[0]?.toUpperCase()}_IMAGE) on this worker, or leave it out of SANDBOXPLANE_WARM_POOL.`,
    });
  }
  const pools: WarmPool[] = [];
  for (const name of POOLABLE_ADAPTERS) {
    const adapter = poolableAdapter(adapters, name);
    if (adapter === undefined) continue;
    const pool = new WarmPool({
      hostId: input.hostId,
      adapter,
      broker: input.broker,
      target: targets[name] ?? 0,
      logger: input.logger.child({ warmPool: name }),
      ...(input.checkIntervalMs !== undefined ? { checkIntervalMs: input.checkIntervalMs } : {}),
    });
    await pool.start();
    if ((targets[name] ?? 0) > 0) adapter.usePool(pool);
    pools.push(pool);
  }
  if (pools.some((pool) => (targets[pool.adapter] ?? 0) > 0)) input.logger.info({ hostId: input.hostId, targets }, 'warm pools kept');
  return {
    statuses: async () => Promise.all(pools.filter((pool) => (targets[pool.adapter] ?? 0) > 0).map((pool) => pool.status())),
    depths: () => pools.filter((pool) => (targets[pool.adapter] ?? 0) > 0).map((pool) => pool.depth()),
    async stop() {
      for (const name of POOLABLE_ADAPTERS) poolableAdapter(adapters, name)?.usePool(undefined);
      await Promise.all(pools.map((pool) => pool.stop()));
    },
  };
}
