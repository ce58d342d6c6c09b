import type { SandboxState } from './sandbox-states';
import { isTerminal } from './sandbox-states';

/** What the sweep can find wrong (DESIGN §8). */
export const LEAK_KINDS = ['orphan_container', 'stranded_sandbox', 'live_mismatch'] as const;
export type LeakKind = (typeof LEAK_KINDS)[number];

/** A container carrying our managed-by label, as the broker lists it. */
export interface ManagedContainer {
  readonly id: string;
  readonly sandboxId: string | null;
  readonly adapter: string | null;
  readonly state: string;
}

export interface Inventory {
  readonly containers: readonly ManagedContainer[];
  /** Projection rows: sandbox id → state. */
  readonly rows: Readonly<Record<string, SandboxState>>;
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
  /** Rows that are not terminal although their workflow has ended: the sweep closes them (`reconciled`). */
  readonly stranded: readonly LeakFinding[];
  /** Reported and handed to the running workflow, never repaired by the sweep. */
  readonly liveMismatches: readonly LeakFinding[];
}

const RUNTIME_STATES: ReadonlySet<SandboxState> = new Set(['PROVISIONING', 'READY', 'DESTROYING']);

/**
 * Sorts what the sweep sees. The one rule that protects live work comes first: a
 * container of a sandbox whose workflow is running is never an orphan, whatever else
 * looks wrong — at most it is reported. Pure and deterministic: the cleanup workflow
 * runs it on recorded activity results.
 */
export function classifyInventory(inventory: Inventory): Classification {
  const running = new Set(inventory.running);
  const orphans: LeakFinding[] = [];
  const stranded: LeakFinding[] = [];
  const liveMismatches: LeakFinding[] = [];
  const containersBySandbox = new Map<string, ManagedContainer[]>();

  for (const container of inventory.containers) {
    const sandboxId = container.sandboxId;
    if (sandboxId !== null) containersBySandbox.set(sandboxId, [...(containersBySandbox.get(sandboxId) ?? []), container]);
    const row = sandboxId === null ? undefined : inventory.rows[sandboxId];
    if (sandboxId !== null && running.has(sandboxId)) {
      if (row === undefined || !RUNTIME_STATES.has(row)) {
        liveMismatches.push({
          kind: 'live_mismatch',
          subject: container.id,
          sandboxId,
          detail: `container ${container.state} while its sandbox's workflow runs in state ${row ?? 'with no projection row'}`,
        });
      }
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

  for (const [sandboxId, state] of Object.entries(inventory.rows)) {
    if (isTerminal(state) || running.has(sandboxId)) continue;
    const containers = containersBySandbox.get(sandboxId) ?? [];
    stranded.push({
      kind: 'stranded_sandbox',
      subject: sandboxId,
      sandboxId,
      detail: `projection says ${state} but no workflow runs for it${containers.length > 0 ? `; its containers ${containers.map((c) => c.id.slice(0, 12)).join(', ')} are orphans` : ''}`,
    });
  }
  return { orphans, stranded, liveMismatches };
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
  };
  readonly removed: readonly LeakFinding[];
  /** Stranded rows closed by this sweep, and the state each was given. */
  readonly reconciled: readonly { readonly sandboxId: string; readonly state: SandboxState }[];
  /** Everything still wrong after re-measuring: kept orphans, stranded sandboxes, mismatches. */
  readonly remaining: readonly LeakFinding[];
}
