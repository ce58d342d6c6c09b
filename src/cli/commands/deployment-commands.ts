import os from 'node:os';
import type { Command } from 'commander';
import { z } from 'zod';
import type { Client } from '@temporalio/client';
import type { DeploymentTarget } from '../../client/deployment-client';
import type { Config } from '../../config/config';
import { loadConfig } from '../../config/config';
import { buildIdSchema, type DeploymentReport } from '../../domain/deployment';
import { action, jsonOption } from '../command-action';
import { parseCliOptions } from '../cli-options';
import { formatTable } from '../format/table';
import { printResult } from '../output';
import { withOperatorClient } from '../temporal-clients';

const promoteArgumentsSchema = z.object({ buildId: buildIdSchema, force: z.boolean().optional() });

function formatDeployment(report: DeploymentReport): string {
  const lines = [`Deployment ${report.deployment}: current build ${report.current ?? 'none yet'}.`];
  if (report.builds.length === 0) lines.push('No lifecycle worker has polled yet: start one (`sandboxctl worker` or `sandboxctl dev`).');
  else {
    lines.push(
      formatTable(
        ['BUILD', 'CURRENT', 'POLLERS', 'OPEN RUNS'],
        report.builds.map((build) => [build.buildId, build.current ? 'yes' : 'no', String(build.pollers), String(build.openRuns)]),
      ),
    );
  }
  const draining = report.builds.filter((build) => !build.current && build.openRuns > 0 && build.pollers === 0);
  for (const build of draining) lines.push(`Build ${build.buildId} has ${build.openRuns} pinned run(s) and no worker: start one of that build until they end.`);
  if (report.unversionedOpenRuns > 0) {
    lines.push(`${report.unversionedOpenRuns} run(s) started by a release before Worker Versioning are open: they finish on that release's workers.`);
  }
  return lines.join('\n');
}

/** Runs `work` with a client on the configured Temporal and the plane's deployment. */
async function withDeployment<T>(config: Config, what: string, work: (client: Client, target: DeploymentTarget) => Promise<T>): Promise<T> {
  const target = { namespace: config.temporalNamespace, deployment: config.deployment.name, taskQueue: config.taskQueue };
  return withOperatorClient(config, what, (client) => work(client, target));
}

/** `deployment`: the builds of the lifecycle workers, which is current, and what still runs on each (DESIGN §16). */
export function registerDeploymentCommands(program: Command): void {
  const deployment = program
    .command('deployment')
    .description('the builds of the lifecycle workers (SANDBOXPLANE_DEPLOYMENT): which is current, the pollers of each, and the sandboxes still pinned to it')
    .addOption(jsonOption())
    .action(
      action(async (raw) => {
        const { describeDeployment } = await import('../../client/deployment-client.js');
        const report = await withDeployment(loadConfig(), 'deployment', describeDeployment);
        printResult({ json: raw.json === true }, report, formatDeployment(report));
      }),
    );

  deployment
    .command('promote')
    .description('make BUILD_ID the current build: new sandboxes start on it, running ones stay on the build that started them')
    .argument('<buildId>', 'a build a lifecycle worker polls with (`sandboxctl deployment` lists them)')
    .option('--force', 'promote even while runs of a release before Worker Versioning are open (they move to this build and fail to replay there)')
    .addOption(jsonOption())
    .action(
      action(async (raw, args) => {
        const options = parseCliOptions(promoteArgumentsSchema, { buildId: args[0], force: raw.force });
        const { promoteBuild } = await import('../../client/deployment-client.js');
        const report = await withDeployment(loadConfig(), 'deployment promote', (client, target) =>
          promoteBuild(client, target, options.buildId, { identity: `sandboxctl@${os.hostname()}`, force: options.force }),
        );
        printResult({ json: raw.json === true }, report, formatDeployment(report));
      }),
    );
}
