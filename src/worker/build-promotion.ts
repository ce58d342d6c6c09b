import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { deploymentBuilds, promoteBuild, type DeploymentTarget } from '../client/deployment-client';
import { pinnedOpenRunsQuery } from '../domain/deployment';
import type { Logger } from '../logging/logger';

/** When a lifecycle worker makes its own build current (DESIGN §16). */
export type PromotionPolicy = 'if-none' | 'always';

/** How long a worker looks for its build to show up in the deployment before it gives up (it says so). */
const REGISTRATION_WAIT_MS = 60_000;
const LOOK_INTERVAL_MS = 250;

/**
 * Once the worker's first poll has made its build known to Temporal, makes it current
 * when the policy says so: `if-none` only while the deployment has none (a plane's first
 * start), `always` whatever is current (the dev launcher, which is the whole plane).
 * Never throws: a worker that cannot promote still serves its pinned runs, and says why.
 */
export async function promoteOncePolling(input: {
  client: Client;
  target: DeploymentTarget;
  buildId: string;
  policy: PromotionPolicy;
  identity: string;
  logger: Logger;
  running: () => boolean;
}): Promise<void> {
  const { client, target, buildId, policy, logger } = input;
  try {
    // Looked for with one cheap call a time: the counts of describeDeployment are visibility queries.
    const deadline = Date.now() + REGISTRATION_WAIT_MS;
    let known = await deploymentBuilds(client, target);
    while (!known.buildIds.includes(buildId)) {
      if (!input.running()) return;
      if (Date.now() > deadline) {
        logger.warn({ deployment: target.deployment, buildId }, 'the build did not appear in the deployment; `sandboxctl deployment` shows what Temporal knows');
        return;
      }
      await sleep(LOOK_INTERVAL_MS);
      known = await deploymentBuilds(client, target);
    }
    if (known.current === buildId) return;
    if (policy === 'if-none' && known.current !== null) {
      logger.info(
        { deployment: target.deployment, buildId, current: known.current },
        `build ${buildId} serves the runs pinned to it; \`sandboxctl deployment promote ${buildId}\` makes it current`,
      );
      return;
    }
    const promoted = await promoteBuild(client, target, buildId, { identity: input.identity, force: policy === 'always' });
    const stranded = promoted.builds.filter((build) => !build.current && build.openRuns > 0 && build.pollers === 0);
    logger.info({ deployment: target.deployment, buildId, was: known.current }, `build ${buildId} is current: new sandboxes start on it`);
    for (const build of stranded) {
      const query = pinnedOpenRunsQuery(target.deployment, build.buildId);
      logger.warn(
        { buildId: build.buildId, openRuns: build.openRuns },
        `${build.openRuns} sandbox(es) stay pinned to build ${build.buildId}, which no worker serves: run a worker of that build until they end, ` +
          `or end them (\`temporal workflow terminate --query "${query}"\`; the cleanup sweep then removes their containers)`,
      );
    }
  } catch (err) {
    logger.warn({ err, deployment: target.deployment, buildId }, `build ${buildId} could not be made current; \`sandboxctl deployment\` shows the builds`);
  }
}
