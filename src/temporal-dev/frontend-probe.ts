import { Connection } from '@temporalio/client';
import { readTemporalTls, type TemporalTlsSettings } from '../config/temporal-tls';

/** Resolves to a connection when the frontend at `address` answers within `timeoutMs` (over mTLS when `tls` is given), else `undefined`. */
export async function connectIfAnswering(address: string, timeoutMs: number, tls?: TemporalTlsSettings): Promise<Connection | undefined> {
  try {
    const connection = await Connection.connect({ address, connectTimeout: timeoutMs, ...(tls !== undefined ? { tls: readTemporalTls(tls) } : {}) });
    try {
      await connection.workflowService.getSystemInfo({});
      return connection;
    } catch {
      await connection.close();
      return undefined;
    }
  } catch {
    return undefined;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls until the frontend answers and `namespace` is described, or the deadline passes. */
export async function waitForFrontend(address: string, namespace: string, deadline: number, stillWorthWaiting: () => boolean = () => true): Promise<Connection | undefined> {
  while (Date.now() < deadline && stillWorthWaiting()) {
    const connection = await connectIfAnswering(address, Math.min(2_000, Math.max(250, deadline - Date.now())));
    if (connection !== undefined) {
      try {
        await connection.workflowService.describeNamespace({ namespace });
        return connection;
      } catch {
        await connection.close();
      }
    }
    await sleep(250);
  }
  return undefined;
}
