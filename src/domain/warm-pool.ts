import { z } from 'zod';
import { SANDBOX_ID_LABEL } from './docker-labels';
import { SANDBOX_ID_PATTERN } from './sandbox-id';
import { ADAPTER_NAMES, type AdapterName } from './service-catalog';
import { sha256Hex } from './sha256';

/**
 * Warm pools (DESIGN §13): started, health-checked emulator containers a docker host
 * keeps per adapter, which a create claims instead of starting one.
 *
 * Labels are immutable, so an idle pool container carries a pool slot id as its
 * sandbox-id label, and a claim renames it to the sandbox's own container name. The
 * name is the durable record of who holds a pool container: the engine makes a rename
 * from the slot's name succeed once, so two claims can never both get it.
 */

/** `io.sandboxplane.pool=<adapter>` marks a container that came from a warm pool. */
export const POOL_LABEL = 'io.sandboxplane.pool';

/** The docker host whose pool keeps the container: two host ids on one engine keep pools apart. */
export const POOL_HOST_LABEL = 'io.sandboxplane.pool-host';

/** The labels that make a container one of `hostId`'s `adapter` pool. */
export function poolLabels(adapter: PoolableAdapter, hostId: string): Readonly<Record<string, string>> {
  return { [POOL_LABEL]: adapter, [POOL_HOST_LABEL]: hostId };
}

/**
 * A pool slot's id, the sandbox-id label of its container: `pool.<adapter>.<12 hex>`.
 * Sandbox ids cannot contain dots, so a slot id is never a sandbox's.
 */
export const POOL_SLOT_ID_PATTERN = /^pool\.[a-z]+\.[0-9a-f]{12}$/;

/** Adapters whose emulator can be reset to empty state, and so handed to a sandbox after waiting in a pool. */
export const POOLABLE_ADAPTERS = ['moto'] as const satisfies readonly AdapterName[];
export type PoolableAdapter = (typeof POOLABLE_ADAPTERS)[number];

/** The most idle containers one host keeps per adapter. */
export const MAX_POOL_SIZE = 50;

/** `SANDBOXPLANE_WARM_POOL`: adapter → how many idle containers each docker host keeps. */
export type WarmPoolTargets = Readonly<Partial<Record<PoolableAdapter, number>>>;

export function poolSlotId(adapter: PoolableAdapter, randomHex: string): string {
  return `pool.${adapter}.${randomHex.slice(0, 12)}`;
}

/** What one pool reports (DESIGN §11, `sandboxctl pools --json`). */
export interface PoolStatus {
  readonly hostId: string;
  readonly adapter: PoolableAdapter;
  /** Idle containers the host keeps. */
  readonly target: number;
  /** Idle, healthy containers ready to be claimed now. */
  readonly ready: number;
  /** Containers that came from the pool and belong to a sandbox now. */
  readonly claimed: number;
  /** Idle containers being started (or replaced). */
  readonly starting: number;
}

/** What `sandboxctl pools --json` prints: every live host's pools, and the live hosts that did not answer. */
export interface WarmPoolReport {
  readonly pools: readonly PoolStatus[];
  readonly unanswered: readonly string[];
}

/**
 * Parses `SANDBOXPLANE_WARM_POOL` (`moto=2`, or a comma list). Empty or unset: no pool.
 * Throws a message that names what to fix.
 */
export function parseWarmPoolTargets(raw: string | undefined): WarmPoolTargets {
  const targets: Partial<Record<PoolableAdapter, number>> = {};
  if (raw === undefined || raw.trim() === '') return targets;
  for (const entry of raw.split(',').map((part) => part.trim())) {
    const match = /^([a-z]+)=(\d+)$/.exec(entry);
    if (match === null) throw new Error(`"${entry}" is not adapter=count (example: moto=2)`);
    const [, adapter = '', count = ''] = match;
    if (!(POOLABLE_ADAPTERS as readonly string[]).includes(adapter)) {
      const known = (ADAPTER_NAMES as readonly string[]).includes(adapter);
      throw new Error(
        known
          ? `the ${adapter} adapter cannot be pooled: its emulator has no state reset (pools: ${POOLABLE_ADAPTERS.join(', ')})`
          : `unknown adapter "${adapter}" (pools: ${POOLABLE_ADAPTERS.join(', ')})`,
      );
    }
    const size = Number(count);
    if (size > MAX_POOL_SIZE) throw new Error(`${adapter}=${size} is more than ${MAX_POOL_SIZE} idle containers`);
    if (targets[adapter as PoolableAdapter] !== undefined) throw new Error(`${adapter} is named twice`);
    targets[adapter as PoolableAdapter] = size;
  }
  return targets;
}

/** How many of a host's capacity slots its pools hold (idle containers count against capacity). */
export function pooledSlots(targets: WarmPoolTargets | undefined): number {
  return Object.values(targets ?? {}).reduce((sum, size) => sum + (size ?? 0), 0);
}

export const warmPoolTargetsSchema = z.record(z.enum(POOLABLE_ADAPTERS), z.number().int().min(0).max(MAX_POOL_SIZE));

/**
 * A container's name: `sandboxplane-<plane hash>-<sandbox id or pool slot id>`. Unique
 * per plane too, so a retried run adopts its own container, never another plane's.
 */
export function containerNameFor(plane: string | undefined, owner: string): string {
  return plane === undefined ? `sandboxplane-${owner}` : `sandboxplane-${sha256Hex(plane).slice(0, 8)}-${owner}`;
}

/** Who a container of this plane belongs to: a sandbox, or an idle pool slot. */
export type ContainerOwner = { readonly sandboxId: string } | { readonly poolSlotId: string } | { readonly unknown: true };

/**
 * A container's owner. Not pooled: its sandbox-id label. Pooled: the name it was renamed
 * to when claimed, else the slot it waits in.
 */
export function containerOwner(container: { readonly name: string; readonly labels: Readonly<Record<string, string>> }): ContainerOwner {
  const label = container.labels[SANDBOX_ID_LABEL];
  if (container.labels[POOL_LABEL] === undefined) return label === undefined ? { unknown: true } : { sandboxId: label };
  const named = /^sandboxplane-[0-9a-f]{8}-(.+)$/.exec(container.name)?.[1];
  if (named !== undefined && SANDBOX_ID_PATTERN.test(named)) return { sandboxId: named };
  if (label !== undefined && POOL_SLOT_ID_PATTERN.test(label) && named === label) return { poolSlotId: label };
  return { unknown: true };
}

/** Whether a container belongs to `sandboxId` (by its label, or by the claim of a pooled one). */
export function belongsTo(container: { readonly name: string; readonly labels: Readonly<Record<string, string>> }, sandboxId: string): boolean {
  const owner = containerOwner(container);
  return 'sandboxId' in owner && owner.sandboxId === sandboxId;
}
