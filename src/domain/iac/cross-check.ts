/**
 * Where the target's own change set and the plane's plan disagree, in words a reviewer can
 * act on (DESIGN §14). The plane's plan is the verdict; the notes are part of what the
 * reviewer sees and of the plan's digest.
 */
import type { Replacement } from './plan-impact';

/** One row of a change set as the emulator or CloudFormation gave it. moto gives only the first three; CloudFormation all. */
export interface EmulatorChange {
  readonly action: string;
  readonly logicalId: string;
  readonly type: string;
  /** CloudFormation's `Replacement` for a Modify (`True`, `False`, `Conditional`), when given. */
  readonly replacement?: string;
  /** The properties CloudFormation says change (`Details[].Target.Name` of attribute Properties), with its `RequiresRecreation`. */
  readonly details?: readonly { readonly name: string; readonly requiresRecreation?: string }[];
}

const byId = (a: [string, unknown], b: [string, unknown]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);

/**
 * The notes, sorted by logical id. moto executes what its change set says, so a resource
 * it calls Modify that the plane finds unchanged is re-created there (with a new physical id);
 * CloudFormation's Replacement is compared with the plane's where both give one.
 */
export function crossCheck(plane: readonly { action: string; logicalId: string; replacement?: Replacement | null }[], emulator: readonly EmulatorChange[], emulatorName: string): string[] {
  if (emulator.length === 0 && plane.length > 0) return [`${emulatorName}'s change set lists no changes (it gives no preview); the plane's own diff is all there is to read`];
  const ours = new Map(plane.map((change) => [change.logicalId, change]));
  const theirs = new Map(emulator.map((change) => [change.logicalId, change]));
  const notes: string[] = [];
  for (const [logicalId, change] of [...theirs].sort(byId)) {
    const planned = ours.get(logicalId);
    if (planned === undefined && change.action === 'Modify') {
      notes.push(`${emulatorName}'s change set says Modify for ${logicalId}, which the plane finds unchanged; ${emulatorName} may re-create it with a new physical id`);
    } else if (planned === undefined) {
      notes.push(`${emulatorName}'s change set says ${change.action} for ${logicalId}, which the plane finds unchanged`);
    } else if (planned.action !== change.action) {
      notes.push(`${emulatorName}'s change set says ${change.action} for ${logicalId}; the plane says ${planned.action}`);
    } else if (change.action === 'Modify' && change.replacement !== undefined && planned.replacement != null && change.replacement !== planned.replacement) {
      const named = (change.details ?? []).filter((detail) => detail.requiresRecreation !== undefined && detail.requiresRecreation !== 'Never').map((detail) => detail.name);
      notes.push(
        `${emulatorName}'s change set says Replacement ${change.replacement} for ${logicalId}${named.length > 0 ? ` (${named.join(', ')})` : ''}; the plane says ${planned.replacement}`,
      );
    }
  }
  for (const [logicalId, change] of [...ours].sort(byId)) {
    if (!theirs.has(logicalId)) notes.push(`the plane says ${change.action} for ${logicalId}; ${emulatorName}'s change set does not list it`);
  }
  return notes;
}
