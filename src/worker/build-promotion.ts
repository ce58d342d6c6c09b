import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { deploymentBuilds, promoteBuild, type DeploymentTarget } from '../client/deployment-client';
import { pinnedOpenRunsQuery } from '../domain/deployment';
import type { Logger } from '../logging/logger';

/** When a lifecycle worker makes its own build current (DESIGN §16). */
export type PromotionPolicy = 'if-none' | 'always';

/** How long a worker looks for its build to show up in the deployment before it says so (it goes on looking while it runs). */
const REGISTRATION_WAIT_MS = 60_000;
const LOOK_INTERVAL_MS = 250;
/** The longest pause between two tries at a promotion Temporal refused or did not answer. */
const MAX_RETRY_INTERVAL_MS = 5_000;

/** Temporal's calls the promotion makes: the real ones, or a test's. */
export interface PromotionCalls {
  readonly builds: (client: Client, target: DeploymentTarget) => Promise<{ current: string | null; buildIds: string[] }>;
  readonly promote: typeof promoteBuild;
}

const TEMPORAL_CALLS: PromotionCalls = { builds: deploymentBuilds, promote: promoteBuild };

/**
 * Once the worker's first poll has made its build known to Temporal, makes it current
 * when the policy says so: `if-none` only while the deployment has none (a plane's first
 * start), `always` whatever is current (the dev launcher, which is the whole plane).
 * Never throws, and does not give up while the worker runs: a promotion Temporal refused
 * or did not answer (a busy server) is tried again, since a plane whose deployment has no
 * current build runs nothing new. A worker that cannot promote still serves its pinned
 * runs, and says why.
 */
export async function promoteOncePolling(input: {
  client: Client;
  target: DeploymentTarget;
  buildId: string;
  policy: PromotionPolicy;
  identity: string;
  logger: Logger;
  running: () => boolean;
  calls?: PromotionCalls;
}): Promise<void> {
  const { target, buildId, logger } = input;
  const calls = input.calls ?? TEMPORAL_CALLS;
  for (let attempt = 1; input.running(); attempt += 1) {
    try {
      await promoteOnce(input, calls);
      return;
    } catch (err) {
      const retryInMs = Math.min(MAX_RETRY_INTERVAL_MS, LOOK_INTERVAL_MS * 2 ** attempt);
      logger.warn(
        { err, deployment: target.deployment, buildId, attempt, retryInMs },
        `build ${buildId} could not be made current yet; trying again (\`sandboxctl deployment\` shows the builds)`,
      );
      await sleep(retryInMs);
    }
  }
}

async function promoteOnce(
  input: { client: Client; target: DeploymentTarget; buildId: string; policy: PromotionPolicy; identity: string; logger: Logger; running: () => boolean },
  calls: PromotionCalls,
): Promise<void> {
  const { client, target, buildId, policy, logger } = input;
  // Looked for with one cheap call a time: the counts of describeDeployment are visibility queries.
  const said = Date.now() + REGISTRATION_WAIT_MS;
  let saidIt = false;
  let known = await calls.builds(client, target);
  while (!known.buildIds.includes(buildId)) {
    if (!input.running()) return;
    if (!saidIt && Date.now() > said) {
      logger.warn({ deployment: target.deployment, buildId }, 'the build has not appeared in the deployment yet; still looking (`sandboxctl deployment` shows what Temporal knows)');
      saidIt = true;
    }
    await sleep(LOOK_INTERVAL_MS);
    known = await calls.builds(client, target);
  }
  if (known.current === buildId) return;
  if (policy === 'if-none' && known.current !== null) {
    logger.info(
      { deployment: target.deployment, buildId, current: known.current },
      `build ${buildId} serves the runs pinned to it; \`sandboxctl deployment promote ${buildId}\` makes it current`,
    );
    return;
  }
  const promoted = await calls.promote(client, target, buildId, { identity: input.identity, force: policy === 'always' });
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
}
