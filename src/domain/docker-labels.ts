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
 * Which plane (Temporal address and namespace) launched a container. Two planes may
 * share one engine; a sweep leaves containers labelled with another plane alone.
 */
export const PLANE_LABEL = 'io.sandboxplane.plane';

export function planeIdentity(namespace: string, temporalAddress: string): string {
  return `${namespace}@${temporalAddress}`;
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
