import os from 'node:os';
import { Worker } from '@temporalio/worker';
import { createTargetActivities } from '../activities';
import { targetsQueue } from '../domain/task-queues';
import type { RoleContext, RoleStart } from './role-workers';

/** IaC against operators' targets on `<tq>-targets` (DESIGN §10): their keys come from this process's AWS SDK credential chain. */
export async function startTargetsRole(ctx: RoleContext): Promise<RoleStart> {
  const taskQueue = targetsQueue(ctx.config.taskQueue);
  const identity = `sandboxplane-targets@${os.hostname()}:${process.pid}`;
  const worker = await Worker.create({ ...ctx.workerOptions, taskQueue, identity, activities: createTargetActivities({ parameterSeal: ctx.payloadCodec.parameterSeal() }) });
  return { worker, queue: taskQueue };
}
