import v8 from 'node:v8';
import { Worker, type WorkflowBundle } from '@temporalio/worker';
import type { Logger } from '../logging/logger';
import { promoteOncePolling, type PromotionOutcome, type PromotionPolicy } from './build-promotion';
import type { RoleContext, RoleStart } from './role-workers';
import { buildIdOf, builtWorkflowBundle, bundleWorkflows } from './workflow-code';

/**
 * The V8 heap limit of the lifecycle worker's workflow thread, in MB: room for a full
 * workflow cache (a held run takes about 1 MB with its garbage) twice over, on top of the
 * bundle and the SDK. Without a limit V8 sizes the thread's heap by the machine's memory
 * and lets it grow with the garbage of evicted runs, so the resident set kept growing with
 * the live sandboxes after the cache was full (docs/performance.md, P5).
 */
export function workflowThreadHeapMb(cacheSize: number): number {
  return 128 + 2 * cacheSize;
}

/** Whether the operator sized V8's heap themselves (`--max-old-space-size` in NODE_OPTIONS or on node's command line): theirs is kept. */
export function heapLimitGiven(execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  return [...execArgv, ...(nodeOptions ?? '').split(/\s+/)].some((arg) => /^--max[-_]old[-_]space[-_]size(=|$)/.test(arg));
}

/** The build's workflow bundle when it is current; else bundled here (webpack, at debug level). */
async function workflowCode(logger: Logger): Promise<WorkflowBundle> {
  const built = builtWorkflowBundle();
  logger.info({ workflowCode: built.reason }, built.bundle === undefined ? 'bundling the workflow code' : 'workflow code from the build');
  return built.bundle ?? (await bundleWorkflows(logger));
}

/** The lifecycle role started: its build id, and the build's self-promotion to run once the workers poll. */
export interface LifecycleStart extends RoleStart {
  readonly buildId: string;
  readonly whileRunning: (running: () => boolean) => Promise<void>;
}

/** The lifecycle workflows on `<tq>` (DESIGN §10), a versioned build of the deployment (DESIGN §16); `settled` is told whether new sandboxes start on it. */
export async function startLifecycleRole(
  ctx: RoleContext,
  input: { readonly workflowBundle?: WorkflowBundle; readonly promote?: PromotionPolicy; readonly maxCachedWorkflows?: number },
  settled: (outcome: PromotionOutcome) => void,
): Promise<LifecycleStart> {
  const { config, logger, client, identity } = ctx;
  const workflowBundle = input.workflowBundle ?? (await workflowCode(logger));
  const buildId = config.deployment.buildId ?? buildIdOf(workflowBundle);
  const target = { namespace: config.temporalNamespace, deployment: config.deployment.name, taskQueue: config.taskQueue };
  const whileRunning = (running: () => boolean) => promoteOncePolling({ client, target, buildId, policy: input.promote ?? 'if-none', identity, logger, running, settled });
  const maxCachedWorkflows = input.maxCachedWorkflows ?? config.workflowCacheSize;
  if (!heapLimitGiven(process.execArgv, process.env.NODE_OPTIONS)) {
    // Read by V8 when the workflow thread's isolate starts (the SDK gives no resourceLimits); this
    // process's own heap is sized already. A thread that reaches it stops the worker, which restarts
    // and replays: the limit is twice what the cache was measured to hold.
    const heapMb = workflowThreadHeapMb(maxCachedWorkflows);
    v8.setFlagsFromString(`--max-old-space-size=${heapMb}`);
    logger.info({ workflowCacheSize: maxCachedWorkflows, workflowThreadHeapMb: heapMb }, 'workflow cache and workflow thread heap limit');
  }
  const worker = await Worker.create({
    ...ctx.workerOptions,
    taskQueue: config.taskQueue,
    identity,
    workflowBundle,
    // Bounds the worker's memory however many sandboxes live: a run evicted from it replays on its next task.
    maxCachedWorkflows,
    // Lifecycles say PINNED themselves (workflows/index.ts); sweeps and commands follow the current build.
    workerDeploymentOptions: { useWorkerVersioning: true, version: { deploymentName: config.deployment.name, buildId }, defaultVersioningBehavior: 'AUTO_UPGRADE' },
  });
  return { worker, queue: config.taskQueue, buildId, whileRunning };
}
