import type { OperationRecord } from '../domain/lifecycle-record';

/** An audit row just written for the first time: a sandbox's (`operations`) or a target's (`target_operations`). */
export type WrittenAudit = { readonly sandboxId: string; readonly operation: OperationRecord } | { readonly target: string; readonly operation: OperationRecord };

/**
 * Tells listeners (the worker's metrics) of each audit row as it is first written: the
 * audit trail is the plane's one record of what happened, and a retried write, which
 * finds its row there, tells nobody twice.
 */
export class AuditTap {
  private readonly listeners = new Set<(written: WrittenAudit) => void>();

  /** Adds `listener`; the returned function removes it. */
  listen(listener: (written: WrittenAudit) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  written(audit: WrittenAudit): void {
    // A listener's failure is its own: the row is written, and the caller's transaction goes on.
    for (const listener of this.listeners) {
      try {
        listener(audit);
      } catch {
        // nothing to undo
      }
    }
  }
}
