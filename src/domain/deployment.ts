import { z } from 'zod';

/**
 * Worker Versioning (DESIGN §16): every lifecycle worker declares one deployment and the
 * build id of its workflow code. Sandbox lifecycles are pinned to the build that started
 * them; sweeps, store commands and round trips move to the current build.
 */

/** `SANDBOXPLANE_DEPLOYMENT` when unset. */
export const DEFAULT_DEPLOYMENT = 'sandboxplane';

/** Temporal refuses '.' and ':' in a deployment name (they separate it from the build id). */
export const deploymentNameSchema = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/, "must be letters, digits, '_' or '-' (no '.' or ':'), e.g. sandboxplane");

/** ':' would make `deployment:build` (how Temporal's visibility names a version) ambiguous. */
export const buildIdSchema = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, "must be letters, digits, '.', '_' or '-' (no ':'), e.g. 2026-12-05.1");

/** One build of the deployment, as `sandboxctl deployment --json` shows it. */
export interface DeploymentBuild {
  readonly buildId: string;
  readonly current: boolean;
  /** Lifecycle workers of this build polling now. */
  readonly pollers: number;
  /** Sandbox lifecycles still pinned to this build: it may stop once this is 0. */
  readonly openRuns: number;
}

/** `sandboxctl deployment --json`. */
export interface DeploymentReport {
  readonly deployment: string;
  /** The build new runs start on; `null` before any build was made current. */
  readonly current: string | null;
  readonly builds: readonly DeploymentBuild[];
  /** Open runs on the lifecycle queue that workers without a build ran: a release before Worker Versioning (they finish on its workers). */
  readonly unversionedOpenRuns: number;
}

/** Visibility query for the open runs pinned to one build (the query Temporal's own drainage check uses). */
export function pinnedOpenRunsQuery(deployment: string, buildId: string): string {
  return `BuildIds = 'pinned:${deployment}:${buildId}' AND ExecutionStatus = 'Running'`;
}

/**
 * Visibility query for the open runs of a task queue that a worker without a build has
 * run (Temporal marks them `unversioned`): a release before Worker Versioning. A run
 * still waiting for its first task carries no mark and is not one of them.
 */
export function unversionedOpenRunsQuery(taskQueue: string): string {
  return `TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Running' AND BuildIds = 'unversioned'`;
}
