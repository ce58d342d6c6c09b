import { isGrpcServiceError, type Client } from '@temporalio/client';
import { pinnedOpenRunsQuery, unversionedOpenRunsQuery, type DeploymentBuild, type DeploymentReport } from '../domain/deployment';
import { SandboxPlaneError } from '../domain/errors';
import { GRPC_NOT_FOUND } from './grpc-status-errors';
import { lastPoll, queuePollers } from './queue-pollers';

/** Which deployment, and the lifecycle queue its workers poll. */
export interface DeploymentTarget {
  readonly namespace: string;
  readonly deployment: string;
  readonly taskQueue: string;
}

/**
 * The builds Temporal knows in the deployment (a build is known once one of its workers
 * polled) and the current one (`null`: none yet). One call, no visibility query.
 */
export async function deploymentBuilds(client: Client, target: DeploymentTarget): Promise<{ current: string | null; buildIds: string[] }> {
  let info;
  try {
    ({ workerDeploymentInfo: info } = await client.workflowService.describeWorkerDeployment({ namespace: target.namespace, deploymentName: target.deployment }));
  } catch (err) {
    if (isGrpcServiceError(err) && err.code === GRPC_NOT_FOUND) return { current: null, buildIds: [] };
    throw err;
  }
  return {
    current: info?.routingConfig?.currentDeploymentVersion?.buildId || null,
    buildIds: (info?.versionSummaries ?? []).map((summary) => summary.deploymentVersion?.buildId ?? '').filter((id) => id !== ''),
  };
}

/** Live lifecycle pollers of `<tq>` by build id (Temporal keeps a poller for minutes after it stopped: only recent polls count). */
async function pollersByBuild(client: Client, target: DeploymentTarget): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const poller of await queuePollers(client.workflowService, target.namespace, target.taskQueue, 'workflow')) {
    if (poller.build === null || poller.build.deployment !== target.deployment || !lastPoll([poller]).live) continue;
    counts.set(poller.build.buildId, (counts.get(poller.build.buildId) ?? 0) + 1);
  }
  return counts;
}

async function countRuns(client: Client, query: string): Promise<number> {
  return (await client.workflow.count(query)).count;
}

/**
 * What `sandboxctl deployment` shows: the current build, and for each build Temporal
 * knows its live pollers and the sandbox lifecycles still pinned to it (DESIGN §16).
 */
export async function describeDeployment(client: Client, target: DeploymentTarget): Promise<DeploymentReport> {
  const [{ current, buildIds }, pollers, unversionedOpenRuns] = await Promise.all([
    deploymentBuilds(client, target),
    pollersByBuild(client, target),
    countRuns(client, unversionedOpenRunsQuery(target.taskQueue)),
  ]);
  const builds: DeploymentBuild[] = await Promise.all(
    buildIds.map(async (buildId) => ({
      buildId,
      current: buildId === current,
      pollers: pollers.get(buildId) ?? 0,
      openRuns: await countRuns(client, pinnedOpenRunsQuery(target.deployment, buildId)),
    })),
  );
  builds.sort((a, b) => Number(b.current) - Number(a.current) || a.buildId.localeCompare(b.buildId));
  return { deployment: target.deployment, current, builds, unversionedOpenRuns };
}

export interface PromoteOptions {
  readonly identity: string;
  /** Promote even while runs of a release before Worker Versioning are open (they move to this build and do not replay on it). */
  readonly force?: boolean;
}

/**
 * Makes `buildId` the deployment's current build: new sandboxes start on it, sweeps and
 * store commands move to it, pinned runs stay where they are. Refused (PROMOTION_REFUSED)
 * for a build no lifecycle worker has polled with, and, unless forced, while runs of a
 * release before Worker Versioning are open: they would move to this build and not
 * replay there (they finish on that release's workers).
 */
export async function promoteBuild(client: Client, target: DeploymentTarget, buildId: string, options: PromoteOptions): Promise<DeploymentReport> {
  const report = await describeDeployment(client, target);
  if (report.current === buildId) return report;
  if (!report.builds.some((build) => build.buildId === buildId)) {
    const known = report.builds.map((build) => build.buildId).join(', ') || 'none yet';
    throw new SandboxPlaneError('PROMOTION_REFUSED', `no lifecycle worker of build ${buildId} has polled deployment ${target.deployment} (builds: ${known})`);
  }
  if (report.current === null && report.unversionedOpenRuns > 0 && options.force !== true) {
    throw new SandboxPlaneError(
      'PROMOTION_REFUSED',
      `${report.unversionedOpenRuns} run(s) on ${target.taskQueue} were started by workers without a build (a release before Worker Versioning); promoting would move them to ${buildId}, where they do not replay`,
      { hint: 'Let them end on the workers that started them, or promote with --force when no such worker is left (docs/deploy.md, "Rolling out").' },
    );
  }
  await client.workflowService.setWorkerDeploymentCurrentVersion({
    namespace: target.namespace,
    deploymentName: target.deployment,
    buildId,
    identity: options.identity,
  });
  return describeDeployment(client, target);
}
