import type { Config } from '../config/config';
import { derivePlaneId } from '../domain/docker-labels';
import { SandboxPlaneError } from '../domain/errors';

/** The two frontend calls the default plane id is read from (a connection's `workflowService`). */
export interface PlaneIdentitySource {
  getClusterInfo(request: Record<string, never>): Promise<{ clusterId?: string | null }>;
  describeNamespace(request: { namespace: string }): Promise<{ namespaceInfo?: { id?: string | null } | null }>;
}

/**
 * This worker's plane id, computed once at start: `SANDBOXPLANE_PLANE_ID` when set,
 * otherwise derived from the Temporal cluster's id and the namespace's id. Neither
 * depends on how TEMPORAL_ADDRESS is spelled, and a fresh dev server is a new cluster,
 * so two planes never share an id by accident.
 */
export async function resolvePlaneId(config: Pick<Config, 'planeId' | 'temporalNamespace' | 'temporalAddress'>, service: PlaneIdentitySource): Promise<string> {
  if (config.planeId !== undefined) return config.planeId;
  let clusterId: string | null | undefined;
  let namespaceId: string | null | undefined;
  try {
    clusterId = (await service.getClusterInfo({})).clusterId;
    namespaceId = (await service.describeNamespace({ namespace: config.temporalNamespace })).namespaceInfo?.id;
  } catch (err) {
    throw new SandboxPlaneError(
      'TEMPORAL_UNREACHABLE',
      `cannot read the cluster and namespace ids of ${config.temporalNamespace} at ${config.temporalAddress} to derive the plane id ` +
        `(set SANDBOXPLANE_PLANE_ID to name the plane yourself): ${(err as Error).message}`,
      { cause: err },
    );
  }
  if (!clusterId || !namespaceId) {
    throw new SandboxPlaneError(
      'TEMPORAL_UNREACHABLE',
      `Temporal at ${config.temporalAddress} did not say its cluster id or the id of namespace ${config.temporalNamespace}; set SANDBOXPLANE_PLANE_ID`,
    );
  }
  return derivePlaneId({ namespace: config.temporalNamespace, clusterId, namespaceId });
}
