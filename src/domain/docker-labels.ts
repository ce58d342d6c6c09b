import { sha256Hex } from './sha256';

/**
 * Docker labels of DESIGN §11. Every container the broker starts carries them; sweeps
 * and teardown find containers by them, never by name.
 */

/** Marks a container as ours; its value is always {@link MANAGED_BY_VALUE}. */
export const MANAGED_BY_LABEL = 'io.sandboxplane.managed-by';
export const MANAGED_BY_VALUE = 'cloud-sandbox-plane';

/** The sandbox a container belongs to. */
export const SANDBOX_ID_LABEL = 'io.sandboxplane.sandbox-id';

/** The emulator adapter that launched the container (`floci`, `moto`, …). */
export const ADAPTER_LABEL = 'io.sandboxplane.adapter';

/**
 * Which plane launched a container (DESIGN §11: `io.sandboxplane.plane=<planeId>`).
 * Two planes may share one engine; a container without this plane's label is foreign,
 * and the sweep never touches it.
 */
export const PLANE_LABEL = 'io.sandboxplane.plane';

/**
 * What a plane id may look like (`SANDBOXPLANE_PLANE_ID`): a Docker label value that
 * reads well in `docker ps` and survives shells and filters unquoted. `@` and `:` are
 * allowed so a plane can keep the `namespace@host:port` value older workers wrote.
 */
export const PLANE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}$/;

/**
 * The default plane id, from Temporal's own identity rather than from how the worker
 * spelled the address: the cluster id and the namespace id, hashed, behind the
 * namespace's name so a person can tell planes apart (`default-3f2a9c1b7e4d0a5c`).
 * Another dev server (a new cluster id) or a recreated namespace is another plane.
 */
export function derivePlaneId(identity: { namespace: string; clusterId: string; namespaceId: string }): string {
  const readable = identity.namespace
    .replace(/[^A-Za-z0-9._-]/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 40);
  const digest = sha256Hex(`${identity.clusterId}/${identity.namespaceId}`).slice(0, 16);
  return readable === '' ? `plane-${digest}` : `${readable}-${digest}`;
}

/** The label set for one sandbox's container. */
export function sandboxContainerLabels(sandboxId: string, adapter: string): Readonly<Record<string, string>> {
  return Object.freeze({
    [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
    [SANDBOX_ID_LABEL]: sandboxId,
    [ADAPTER_LABEL]: adapter,
  });
}

/** The label filter that selects every container we manage. */
export function managedContainersFilter(): Readonly<Record<string, string>> {
  return Object.freeze({ [MANAGED_BY_LABEL]: MANAGED_BY_VALUE });
}

/** Whether a container's or a network's labels mark it as ours: the broker touches nothing else. */
export function isManaged(labels: Readonly<Record<string, string>>): boolean {
  return labels[MANAGED_BY_LABEL] === MANAGED_BY_VALUE;
}

/**
 * The name of the network a sandbox's (or a pool slot's) container gets to itself
 * (DESIGN §12): one per owner, per plane, so two planes on one engine never share one.
 */
export function sandboxNetworkName(plane: string | undefined, owner: string): string {
  return plane === undefined ? `sandboxplane-net-${owner}` : `sandboxplane-net-${sha256Hex(plane).slice(0, 8)}-${owner}`;
}
