import type { OperationRecord } from '../domain/lifecycle-record';

/** An audit row just written for the first time: a sandbox's (`operations`) or a target's (`target_operations`). */
export type WrittenAudit = ({ readonly sandboxId: string } | { readonly target: string }) & { readonly workflowId: string; readonly operation: OperationRecord };

/**
 * Tells listeners (the worker's metrics) of each audit row as it is first written: the
 * audit trail is the plane's one record of what happened, and a retried write, which
 * finds its row there, tells nobody twice.
 */
export class AuditTap {
  private readonly listeners = new Set<(written: WrittenAudit) => void>();
  private pending: WrittenAudit[] = [];

  /** `committed` says whether a row is in the file: a transaction that wrote it may have rolled back since. */
  constructor(private readonly committed: (audit: WrittenAudit) => boolean = () => true) {}

  /** Adds `listener`; the returned function removes it. */
  listen(listener: (written: WrittenAudit) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Called as the row is inserted, inside its transaction. Listeners hear of it once that
   * is over (the store's transactions are synchronous, so by the next microtask it has
   * committed or rolled back), only if the row is there, and once however often it was
   * inserted meanwhile (rolled back, then written again).
   */
  written(audit: WrittenAudit): void {
    if (this.listeners.size === 0) return;
    if (this.pending.length === 0) queueMicrotask(() => this.deliver());
    this.pending.push(audit);
  }

  private deliver(): void {
    const batch = this.pending;
    this.pending = [];
    const seen = new Set<string>();
    for (const audit of batch) {
      const key = `${'sandboxId' in audit ? 'sandbox' : 'target'}\u0000${audit.workflowId}\u0000${audit.operation.runId ?? ''}\u0000${audit.operation.step}`;
      if (seen.has(key) || !this.isCommitted(audit)) continue;
      seen.add(key);
      for (const listener of this.listeners) {
        try {
          listener(audit);
        } catch {
          // A listener's failure is its own: the row is written.
        }
      }
    }
  }

  private isCommitted(audit: WrittenAudit): boolean {
    try {
      return this.committed(audit);
    } catch {
      // The store closed meanwhile: nobody is left to count it.
      return false;
    }
  }
}
