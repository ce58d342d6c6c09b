import { Worker } from '@temporalio/worker';
import { createTargetActivities } from '../activities';
import { targetsQueue } from '../domain/task-queues';
import { workerIdentity, type RoleContext, type RoleStart } from './role-workers';

/** IaC against operators' targets on `<tq>-targets` (DESIGN §10): their keys come from this process's AWS SDK credential chain. */
export async function startTargetsRole(ctx: RoleContext): Promise<RoleStart> {
  const taskQueue = targetsQueue(ctx.config.taskQueue);
  const worker = await Worker.create({
    ...ctx.workerOptions,
    taskQueue,
    identity: workerIdentity('targets'),
    activities: createTargetActivities({ parameterSeal: ctx.payloadCodec.parameterSeal() }),
  });
  return { worker, queue: taskQueue };
}
