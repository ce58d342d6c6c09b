import type { SandboxState } from './sandbox-states';
import { isTerminal } from './sandbox-states';

/** What the sweep can find wrong (DESIGN §8). */
export const LEAK_KINDS = ['orphan_container', 'stranded_sandbox', 'live_mismatch', 'host_unreachable'] as const;
export type LeakKind = (typeof LEAK_KINDS)[number];

/** A container carrying our managed-by label, as the broker lists it. */
export interface ManagedContainer {
  readonly id: string;
  readonly sandboxId: string | null;
  readonly adapter: string | null;
  readonly state: string;
}

/** What the sweep reads of a projection row. */
export interface InventoryRow {
  readonly state: SandboxState;
  readonly adapter: string;
  /** The docker host it was placed on; null for sandboxes placed before hosts existed (or never placed). */
  readonly host?: string | null;
}

export interface Inventory {
  /** This plane's containers (foreign ones are never listed). */
  readonly containers: readonly ManagedContainer[];
  /** Projection rows the sweep has work for: sandbox id → state and adapter. */
  readonly rows: Readonly<Record<string, InventoryRow>>;
  /** Sandboxes whose lifecycle workflow is running. */
  readonly running: readonly string[];
}

export interface LeakFinding {
  readonly kind: LeakKind;
  /** A container id for container findings, a sandbox id for stranded sandboxes. */
  readonly subject: string;
  readonly sandboxId: string | null;
  readonly detail: string;
}

export interface Classification {
  /** Containers to stop and remove: no open workflow for their sandbox, whatever the projection says. */
  readonly orphans: readonly LeakFinding[];
  /**
   * Rows whose workflow has ended but which are not properly closed: not terminal, or
   * DESTROY_FAILED (leftovers to retry). The sweep closes them once their containers are gone (`reconciled`).
   */
  readonly stranded: readonly LeakFinding[];
  /** Reported and handed to the running workflow, never repaired by the sweep. */
  readonly liveMismatches: readonly LeakFinding[];
}

const RUNTIME_STATES: ReadonlySet<SandboxState> = new Set(['PROVISIONING', 'READY', 'DESTROYING']);

/** Adapters whose runtime is no container (the memory adapter lives in the worker's process). */
const CONTAINERLESS_ADAPTERS: ReadonlySet<string> = new Set(['memory']);

/**
 * Sorts what the sweep sees. The one rule that protects live work comes first: a
 * container of a sandbox whose workflow is running is never an orphan, whatever else
 * looks wrong — at most it is reported (DESIGN §8: an exited container under a READY
 * sandbox, a READY sandbox with no container). Pure and deterministic: the cleanup
 * workflow runs it on recorded activity results.
 */
export function classifyInventory(inventory: Inventory): Classification {
  const running = new Set(inventory.running);
  const orphans: LeakFinding[] = [];
  const stranded: LeakFinding[] = [];
  const liveMismatches: LeakFinding[] = [];
  const containersBySandbox = new Map<string, ManagedContainer[]>();
  for (const container of inventory.containers) {
    if (container.sandboxId !== null) containersBySandbox.set(container.sandboxId, [...(containersBySandbox.get(container.sandboxId) ?? []), container]);
  }

  for (const container of inventory.containers) {
    const sandboxId = container.sandboxId;
    const row = sandboxId === null ? undefined : inventory.rows[sandboxId]?.state;
    if (sandboxId !== null && running.has(sandboxId)) {
      const mismatch =
        row === undefined || !RUNTIME_STATES.has(row)
          ? `container ${container.state} while its sandbox's workflow runs in state ${row ?? 'with no projection row'}`
          : row === 'READY' && container.state !== 'running' && !(containersBySandbox.get(sandboxId) ?? []).some((c) => c.state === 'running')
            ? `container exited under a READY sandbox: it is ${container.state} while sandbox ${sandboxId}'s workflow runs and says READY`
            : undefined;
      if (mismatch !== undefined) liveMismatches.push({ kind: 'live_mismatch', subject: container.id, sandboxId, detail: mismatch });
      continue;
    }
    // Temporal is the authority (DESIGN §8): no open workflow means nobody will tear this down.
    orphans.push({
      kind: 'orphan_container',
      subject: container.id,
      sandboxId,
      detail:
        sandboxId === null
          ? 'container without a sandbox-id label'
          : row === undefined
            ? `no sandbox ${sandboxId} in the projection and no running workflow`
            : isTerminal(row)
              ? `sandbox ${sandboxId} is ${row} and its workflow has ended`
              : `the projection says ${row} but sandbox ${sandboxId}'s workflow has ended (terminated, or its history is gone)`,
    });
  }

  for (const [sandboxId, { state, adapter }] of Object.entries(inventory.rows)) {
    const containers = containersBySandbox.get(sandboxId) ?? [];
    if (running.has(sandboxId)) {
      if (state === 'READY' && containers.length === 0 && !CONTAINERLESS_ADAPTERS.has(adapter)) {
        liveMismatches.push({
          kind: 'live_mismatch',
          subject: sandboxId,
          sandboxId,
          detail: `READY with no container: sandbox ${sandboxId}'s workflow runs and says READY, but no ${adapter} container of this plane exists`,
        });
      }
      continue;
    }
    if (isTerminal(state) && state !== 'DESTROY_FAILED') continue;
    const orphaned = containers.length > 0 ? `; its containers ${containers.map((c) => c.id.slice(0, 12)).join(', ')} are orphans` : '';
    stranded.push({
      kind: 'stranded_sandbox',
      subject: sandboxId,
      sandboxId,
      detail: state === 'DESTROY_FAILED' ? `its teardown failed (DESTROY_FAILED) and no workflow runs for it${orphaned}` : `projection says ${state} but no workflow runs for it${orphaned}`,
    });
  }
  return { orphans, stranded, liveMismatches };
}

/**
 * How the sweep left one row it tried to close: `changed` when it wrote the state, and
 * what still stands in the way when that state is DESTROY_FAILED.
 */
export interface ReconcileOutcome {
  readonly state: SandboxState;
  readonly changed: boolean;
  readonly leftovers: readonly string[];
}

/** What one sweep did and saw; `sandboxctl sweep --wait --json` prints it. */
export interface SweepReport {
  readonly sweptAt: string;
  readonly workflowId: string;
  readonly counts: {
    readonly containers: number;
    readonly orphans: number;
    readonly stranded: number;
    readonly liveMismatches: number;
    readonly removed: number;
    /** Stranded rows the sweep closed. */
    readonly reconciled: number;
    readonly outstanding: number;
    /** Snapshots past SANDBOXPLANE_SNAPSHOT_MAX_AGE this sweep deleted (absent from sweeps before snapshot ages). */
    readonly snapshotsDeleted?: number;
  };
  readonly removed: readonly LeakFinding[];
  /** Stranded rows closed by this sweep (a DESTROY_FAILED one moves to DESTROYED), and the state each was given. */
  readonly reconciled: readonly { readonly sandboxId: string; readonly state: SandboxState }[];
  /** Everything still wrong after re-measuring: kept orphans, stranded sandboxes, DESTROY_FAILED rows with leftovers, mismatches. */
  readonly remaining: readonly LeakFinding[];
  /** The docker hosts the sweep knew, and whether each was live and swept (absent from sweeps before hosts). */
  readonly hosts?: readonly { readonly hostId: string; readonly live: boolean; readonly swept: boolean }[];
}

/**
 * How many orphans a host's sweep removes at once, unless SANDBOXPLANE_SWEEP_REMOVE_CONCURRENCY
 * says otherwise: a removal is a round trip the engine spends little CPU on, so a few at
 * once hide the latency, while many at once would queue behind the engine's own lock and
 * slow the creates and destroys of live sandboxes on the same host (docs/performance.md, P4).
 */
export const DEFAULT_SWEEP_REMOVE_CONCURRENCY = 8;

/**
 * Orphans handed to one removal activity (and their audit rows to one store transaction):
 * few activities per sweep, yet each one short enough for its start-to-close timeout on a slow engine.
 */
export const SWEEP_REMOVE_BATCH = 100;
