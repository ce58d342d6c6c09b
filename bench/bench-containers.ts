/**
 * The containers a bench run leaves on the engine, found by label: the raw `docker run`
 * baselines and seeded sweep containers carry {@link BENCH_RUN_LABEL}, and every
 * container (and sealed network) a bench worker starts carries its plane,
 * `bench-<runId>-<purpose>`. A crashed run leaves them findable:
 * `docker ps -a --filter label=io.sandboxplane.bench-run`, `docker network ls --filter label=io.sandboxplane.plane`.
 */
import type Docker from 'dockerode';
import { PLANE_LABEL } from '../src/domain/docker-labels';

/** Marks a container the bench started itself; its value is the run id. */
export const BENCH_RUN_LABEL = 'io.sandboxplane.bench-run';

/** The plane id of a bench worker: unique to the run and the figure, so no sweep of one judges another's containers. */
export function benchPlaneId(runId: string, purpose: string): string {
  return `bench-${runId}-${purpose}`;
}

/** Every container of this run: labelled with it, or on one of its workers' planes. */
export async function runContainers(docker: Docker, runId: string): Promise<string[]> {
  const labelled = await containersLabelled(docker, `${BENCH_RUN_LABEL}=${runId}`);
  const planes = await docker.listContainers({ all: true, filters: { label: [PLANE_LABEL] } });
  const ours = planes.filter((container) => container.Labels[PLANE_LABEL]?.startsWith(benchPlaneId(runId, '')) === true).map((container) => container.Id);
  return [...new Set([...labelled, ...ours])];
}

/** Removes (force) the containers with these ids; one already gone is what we wanted. */
export async function removeContainers(docker: Docker, ids: readonly string[]): Promise<number> {
  for (const id of ids) {
    await docker
      .getContainer(id)
      .remove({ force: true, v: true })
      .catch((err: unknown) => {
        // Gone already, or being removed by someone else (the plane's teardown, the sweep).
        const status = (err as { statusCode?: number }).statusCode;
        if (status !== 404 && status !== 409) throw err;
      });
  }
  return ids.length;
}

/** Every container carrying this label (`key=value`), in any state. */
export async function containersLabelled(docker: Docker, label: string): Promise<string[]> {
  return (await docker.listContainers({ all: true, filters: { label: [label] } })).map((container) => container.Id);
}

/**
 * Removes the networks of a plane (a sandbox's or an idle pool container's sealed network
 * carries its plane's label), once their containers are gone: the plane removes the
 * network with the container it tears down, but the bench removes idle pool containers
 * itself. Returns how many there were.
 */
export async function removePlaneNetworks(docker: Docker, planePrefix: string): Promise<number> {
  const networks = (await docker.listNetworks({ filters: { label: [PLANE_LABEL] } })).filter((network) => network.Labels?.[PLANE_LABEL]?.startsWith(planePrefix) === true);
  for (const network of networks) {
    await docker
      .getNetwork(network.Id)
      .remove()
      .catch((err: unknown) => {
        if ((err as { statusCode?: number }).statusCode !== 404) throw err;
      });
  }
  return networks.length;
}

/** Removes (force) every container of this run, then its workers' networks; returns how many containers there were. */
export async function removeRunContainers(docker: Docker, runId: string): Promise<number> {
  const removed = await removeContainers(docker, await runContainers(docker, runId));
  await removePlaneNetworks(docker, benchPlaneId(runId, ''));
  return removed;
}

/** Containers an earlier, interrupted bench run left (another run's label): reported, never touched. */
export async function earlierRunsLeftovers(docker: Docker, runId: string): Promise<number> {
  const labelled = await docker.listContainers({ all: true, filters: { label: [BENCH_RUN_LABEL] } });
  return labelled.filter((container) => container.Labels[BENCH_RUN_LABEL] !== runId).length;
}
