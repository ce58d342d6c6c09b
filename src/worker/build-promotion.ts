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

/**
 * Where the promotion stands once it is known whether new sandboxes start on this build:
 * current, or not (and why). "worker ready" is logged with it (DESIGN §16).
 */
export type PromotionOutcome = { readonly buildCurrent: true } | { readonly buildCurrent: false; readonly reason: string };

interface PromotionInput {
  readonly client: Client;
  readonly target: DeploymentTarget;
  readonly buildId: string;
  readonly policy: PromotionPolicy;
  readonly identity: string;
  readonly logger: Logger;
  /** Whether the worker still runs: the promotion stops trying once it does not. */
  readonly running: () => boolean;
}

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
 * runs, and says why. `settled` is told once: when the build is current, when the policy
 * leaves another build current, or when a minute of trying has not made it current (it
 * goes on trying).
 */
export async function promoteOncePolling(input: PromotionInput & { settled?: (outcome: PromotionOutcome) => void; calls?: PromotionCalls }): Promise<void> {
  const { target, buildId, logger } = input;
  const calls = input.calls ?? TEMPORAL_CALLS;
  let told = false;
  const settle = (outcome: PromotionOutcome): void => {
    if (told) return;
    told = true;
    input.settled?.(outcome);
  };
  const giveUpTellingAt = Date.now() + REGISTRATION_WAIT_MS;
  for (let attempt = 1; input.running(); attempt += 1) {
    try {
      const outcome = await promoteOnce({ ...input, settle, giveUpTellingAt }, calls);
      if (outcome !== undefined) settle(outcome);
      return;
    } catch (err) {
      const retryInMs = Math.min(MAX_RETRY_INTERVAL_MS, LOOK_INTERVAL_MS * 2 ** attempt);
      if (Date.now() > giveUpTellingAt) settle({ buildCurrent: false, reason: `Temporal has not made it current yet: ${err instanceof Error ? err.message : String(err)}` });
      logger.warn(
        { err, deployment: target.deployment, buildId, attempt, retryInMs },
        `build ${buildId} could not be made current yet; trying again (\`sandboxctl deployment\` shows the builds)`,
      );
      await sleep(retryInMs);
    }
  }
}

/** Makes the build current when the policy says so; returns where it stands, or nothing when the worker stopped first. */
async function promoteOnce(input: PromotionInput & { settle: (outcome: PromotionOutcome) => void; giveUpTellingAt: number }, calls: PromotionCalls): Promise<PromotionOutcome | undefined> {
  const { client, target, buildId, policy, logger } = input;
  // Looked for with one cheap call a time: the counts of describeDeployment are visibility queries.
  let saidIt = false;
  let known = await calls.builds(client, target);
  while (!known.buildIds.includes(buildId)) {
    if (!input.running()) return undefined;
    if (!saidIt && Date.now() > input.giveUpTellingAt) {
      const reason = 'the build has not appeared in the deployment yet; still looking (`sandboxctl deployment` shows what Temporal knows)';
      logger.warn({ deployment: target.deployment, buildId }, reason);
      input.settle({ buildCurrent: false, reason });
      saidIt = true;
    }
    await sleep(LOOK_INTERVAL_MS);
    known = await calls.builds(client, target);
  }
  if (known.current === buildId) return { buildCurrent: true };
  if (policy === 'if-none' && known.current !== null) {
    const reason = `build ${buildId} serves the runs pinned to it; \`sandboxctl deployment promote ${buildId}\` makes it current`;
    logger.info({ deployment: target.deployment, buildId, current: known.current }, reason);
    return { buildCurrent: false, reason: `build ${known.current} is current (promotion policy if-none): ${reason}` };
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
  return { buildCurrent: true };
}
