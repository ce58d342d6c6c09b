import { sandboxNetworkName } from './docker-labels';

/**
 * Pre-made sealed networks (DESIGN §12, §13): each docker host keeps a few empty sealed
 * networks, so a cold create attaches its container to one instead of making its own
 * (about 60 ms of engine calls, measured in docs/performance.md, P2).
 *
 * Docker can rename neither a network nor its labels, so a pooled network keeps its pool
 * name and labels for life: its sandbox-id label holds a pool id (`netpool.<12 hex>`;
 * sandbox ids have no dots, so it is never a sandbox's), and it is handed to one sandbox
 * only because only the process that made it hands it out, once, from memory.
 */

/** `io.sandboxplane.network-pool=<hostId>` marks a network made ahead by that docker host's pool. */
export const NETWORK_POOL_LABEL = 'io.sandboxplane.network-pool';

/** A pooled network's owner id, its sandbox-id label: `netpool.<12 hex>`. */
export const NETWORK_POOL_ID_PATTERN = /^netpool\.[0-9a-f]{12}$/;

/** `SANDBOXPLANE_NETWORK_POOL` unset: two networks, enough for creates a second apart (the refill takes about 60 ms). */
export const DEFAULT_NETWORK_POOL_SIZE = 2;

/** Each network holds one of the engine's address ranges (31 with Docker's defaults), so the pool stays small. */
export const MAX_NETWORK_POOL_SIZE = 20;

/**
 * How long the sweep leaves an unattached pooled network that no pool of its process
 * holds: a network another process's pool made (and may hand out) is younger than this;
 * one older belongs to a pool that stopped without removing it (a killed worker).
 */
export const NETWORK_POOL_GRACE_MS = 10 * 60_000;

export function networkPoolId(randomHex: string): string {
  return `netpool.${randomHex.slice(0, 12)}`;
}

/** Whether `name` is a pooled network's name on `plane` (the network a claimed sandbox's container sits on). */
export function isPooledNetworkName(plane: string | undefined, name: string): boolean {
  const prefix = sandboxNetworkName(plane, '');
  return name.startsWith(prefix) && NETWORK_POOL_ID_PATTERN.test(name.slice(prefix.length));
}
