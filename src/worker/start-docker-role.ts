import { Worker } from '@temporalio/worker';
import { createDockerActivities } from '../activities';
import type { AdapterRegistry } from '../adapters/cloud-emulator-adapter';
import { DockerContainerBroker, SealedNetworkPool, type ContainerBroker } from '../docker';
import type { HostRegistration } from '../domain/hosts';
import { ADAPTER_NAMES } from '../domain/service-catalog';
import { dockerQueue } from '../domain/task-queues';
import { meterPools } from '../telemetry/plane-metrics';
import { watchContainerDeaths } from './container-deaths';
import { measureHostMemory, registerHostUntilDone } from './host-registration';
import { startRole, workerIdentity, type RoleContext, type RoleStart } from './role-workers';
import type { TemporalHostDirectory } from './temporal-host-directory';
import { startWarmPools } from './warm-pools';

/** This engine's runtime on `<tq>-docker-<hostId>` (DESIGN §10), with its sealed networks, warm pools and watch on container deaths beside it. */
export async function startDockerRole(
  ctx: RoleContext,
  input: { broker: ContainerBroker; adapters: AdapterRegistry; hosts?: TemporalHostDirectory; checkIntervalMs?: number },
): Promise<RoleStart> {
  const { config, logger, client, planeId } = ctx;
  const { broker, adapters, hosts } = input;
  const hostId = config.host.id;
  const taskQueue = dockerQueue(config.taskQueue, hostId);
  return startRole(async (beside) => {
    let networkPool: SealedNetworkPool | undefined;
    // Pre-made sealed networks (DESIGN §12) need an engine's broker; a test's fake makes no networks.
    if (broker instanceof DockerContainerBroker && config.networkPool > 0) {
      const pool = new SealedNetworkPool({ hostId, plane: planeId, target: config.networkPool, maker: broker, logger: logger.child({ networkPool: hostId }) });
      networkPool = pool;
      beside(async () => {
        broker.useNetworkPool(undefined);
        await pool.stop();
      });
      await pool.start();
      broker.useNetworkPool(pool);
    }
    const warmPools = await startWarmPools({ hostId, targets: config.host.warmPool, adapters, broker, logger, checkIntervalMs: input.checkIntervalMs });
    beside(() => warmPools.stop());
    beside(meterPools({ hostId, depths: () => warmPools.depths() }));
    const worker = await Worker.create({
      ...ctx.workerOptions,
      taskQueue,
      identity: workerIdentity(`docker-${hostId}`),
      activities: createDockerActivities({
        adapters,
        broker,
        plane: planeId,
        sweepRemoveConcurrency: config.sweepRemoveConcurrency,
        warmPools,
        ...(networkPool === undefined ? {} : { networkPool }),
        parameterSeal: ctx.payloadCodec.parameterSeal(),
        contents: ctx.contents,
        snapshotMaxBytes: config.snapshots.maxBytes,
      }),
    });
    // The engine announces deaths; a broker that is not an engine's (a test's fake) has none to announce.
    if (broker instanceof DockerContainerBroker) {
      const deathWatch = watchContainerDeaths({ source: broker, broker, planeId, client, logger, endedHere: (id) => broker.endedHere(id) });
      beside(() => deathWatch.stop());
    }
    const announce = async (): Promise<void> => {
      const { capacity, warmPool, memoryFraction: fraction, memoryOvercommit: overcommit } = config.host;
      const engineId = await broker.engineId().catch(() => null);
      const memory = await measureHostMemory({ broker, adapters, fraction, overcommit, warmPool, logger });
      const registration: HostRegistration = {
        hostId,
        taskQueue,
        adapters: ADAPTER_NAMES.filter((name) => adapters[name] !== undefined),
        capacity,
        warmPool,
        engineId,
        identity: ctx.identity,
        memory,
      };
      // With the store here, before any poll: the first request already finds this host.
      if (hosts !== undefined) await hosts.register(registration);
      else beside(registerHostUntilDone({ client, taskQueue: config.taskQueue, registration, logger }).stop);
    };
    return { worker, queue: taskQueue, announce };
  });
}
