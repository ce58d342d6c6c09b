import { randomUUID } from 'node:crypto';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { ensureSearchAttributes } from '../../src/temporal-dev/search-attribute-setup';

/**
 * A Temporal namespace of one test file's own, with our search attributes registered:
 * the cleanup schedule's id is fixed by contract (one per namespace), and the plane
 * label is `<namespace>@<address>`, so a namespace keeps a file's schedule and
 * containers apart from every other file's.
 */
export async function createTestNamespace(address: string, prefix: string): Promise<string> {
  const namespace = `${prefix}-${randomUUID().slice(0, 8)}`;
  const connection = await Connection.connect({ address });
  try {
    await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
    for (let attempt = 0; ; attempt += 1) {
      try {
        await connection.workflowService.describeNamespace({ namespace });
        break;
      } catch (err) {
        if (attempt > 50) throw err;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    await ensureSearchAttributes(connection, namespace);
  } finally {
    await connection.close();
  }
  return namespace;
}
