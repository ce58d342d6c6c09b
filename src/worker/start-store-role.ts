import { Worker } from '@temporalio/worker';
import { createStoreActivities } from '../activities';
import { moveSnapshotContentsOut } from '../activities/snapshot-activities';
import type { Config } from '../config/config';
import { AUDIT_CHAIN_KEY_PURPOSE, SecretBox } from '../crypto/secret-box';
import { SandboxPlaneError } from '../domain/errors';
import { storeQueue } from '../domain/task-queues';
import type { Store } from '../store';
import { startRole, type RoleContext, type RoleStart } from './role-workers';
import { meterStore } from './store-metrics';
import { refuseSecondStoreWorker, storeWorkerIdentity } from './store-owner';
import type { TemporalHostDirectory } from './temporal-host-directory';
import { wakeWebhooks } from './webhook-wakes';

/** The store role's key for approvers' TOTP secrets, created beside the SQLite file on first use. */
function storeSecrets(config: Config): SecretBox {
  try {
    return SecretBox.fromKeyFile(config.storeKeyPath);
  } catch (err) {
    throw new SandboxPlaneError('CONFIG_INVALID', `SANDBOXPLANE_STORE_KEY_FILE ${config.storeKeyPath}: ${(err as Error).message}`, {
      hint: 'Point SANDBOXPLANE_STORE_KEY_FILE at the store key file (32 random bytes, base64), or remove it to start afresh (approvers then re-enrol).',
    });
  }
}

/** The projection's single writer on `<tq>-store` (DESIGN §10), with the store's metrics and the webhooks' wakes beside it. */
export async function startStoreRole(ctx: RoleContext, store: Store, hosts: TemporalHostDirectory): Promise<RoleStart> {
  const { config, logger, client, contents } = ctx;
  const taskQueue = storeQueue(config.taskQueue);
  const identity = storeWorkerIdentity(store.file);
  await refuseSecondStoreWorker({ service: client.workflowService, namespace: config.temporalNamespace, taskQueue, identity });
  const deps = {
    store,
    workerIdentity: identity,
    flags: config.flags,
    lifecycle: config.lifecycle,
    client,
    hosts,
    maxSandboxes: config.maxSandboxes,
    secrets: storeSecrets(config),
    snapshotQuota: config.snapshotQuota,
    contents,
  };
  const moved = await moveSnapshotContentsOut(store, deps.secrets, contents);
  if (moved > 0) logger.info({ moved, dir: contents.dir }, 'snapshot content moved out of the SQLite file');
  const chained = store.auditChain.useKey(deps.secrets.deriveKey(AUDIT_CHAIN_KEY_PURPOSE));
  if (chained > 0) logger.info({ chained }, 'audit rows of an earlier build chained (DESIGN §19)');
  return startRole(async (beside) => {
    const worker = await Worker.create({ ...ctx.workerOptions, taskQueue, identity, activities: createStoreActivities(deps) });
    beside(meterStore(store, config.taskQueue, async (query) => (await client.workflow.count(query)).count));
    beside(wakeWebhooks({ store, client, taskQueue: config.taskQueue, logger }));
    return { worker, queue: taskQueue };
  });
}
