import fs from 'node:fs';
import { Client, type Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { tracingClientInterceptors } from '../telemetry/tracing';
import type { Config } from '../config/config';
import { describeDeployment } from '../client/deployment-client';
import { runRoundTrip } from '../client/round-trip';
import { StoreClient } from '../client/store-client';
import { dataConverterFor } from '../client/temporal-connection';
import { payloadCodecFor } from '../codec/codec-settings';
import type { HostView } from '../domain/hosts';
import { storeQueue } from '../domain/task-queues';
import { lastPoll, queuePollers } from '../client/queue-pollers';
import { ERROR_CODES } from '../domain/error-codes';
import { isSandboxPlaneError } from '../domain/errors';
import { LATEST_SCHEMA_VERSION, Store } from '../store';
import { connectIfAnswering } from '../temporal-dev/frontend-probe';
import { missingSearchAttributes } from '../temporal-dev/search-attribute-setup';
import { pingDockerEngine } from './docker-ping';

export type CheckStatus = 'ok' | 'fail' | 'warn';

export interface CheckResult {
  readonly name: string;
  readonly required: boolean;
  readonly status: CheckStatus;
  readonly detail: string;
  readonly hint?: string;
}

const ROUND_TRIP_TIMEOUT_MS = 10_000;

function describeError(err: unknown): string {
  return err instanceof Error ? (err.message.split('\n')[0] ?? String(err)) : String(err);
}

/** Each check reports instead of throwing, so one broken dependency never hides the others. */
async function check(name: string, required: boolean, hint: string, body: () => Promise<{ ok: boolean; detail: string; hint?: string }>): Promise<CheckResult> {
  try {
    const outcome = await body();
    if (outcome.ok) return { name, required, status: 'ok', detail: outcome.detail };
    return { name, required, status: required ? 'fail' : 'warn', detail: outcome.detail, hint: outcome.hint ?? hint };
  } catch (err) {
    return { name, required, status: required ? 'fail' : 'warn', detail: describeError(err), hint };
  }
}

function skipped(name: string, because: string): CheckResult {
  return { name, required: true, status: 'fail', detail: `not checked: ${because}`, hint: 'Fix the failure above first.' };
}

async function temporalChecks(config: Config, connection: Connection, roundTrip: boolean): Promise<CheckResult[]> {
  const namespace = config.temporalNamespace;
  // Made inside each check that needs it: keys that cannot be read fail that check, not the doctor.
  const client = () => new Client({ connection, namespace, dataConverter: dataConverterFor(payloadCodecFor(config.codec)), interceptors: tracingClientInterceptors() });
  const results: CheckResult[] = [];
  results.push(
    await check('namespace', true, `Create it: temporal operator namespace create --namespace ${namespace}`, async () => {
      await connection.workflowService.describeNamespace({ namespace });
      return { ok: true, detail: `${namespace} exists` };
    }),
  );
  if (results[0]?.status !== 'ok') return [...results, ...['search attributes', 'deployment', 'worker', 'store worker', 'docker hosts'].map((name) => skipped(name, 'no namespace'))];

  results.push(
    await check('search attributes', true, 'Run `sandboxctl dev` once against this server; it registers them.', async () => {
      const { missing, wrongType } = await missingSearchAttributes(connection, namespace);
      if (missing.length === 0 && wrongType.length === 0) return { ok: true, detail: 'SandboxState, SandboxPrincipal, SandboxCapability, SandboxExpiresAt' };
      const parts = [missing.length > 0 ? `missing ${missing.join(', ')}` : '', wrongType.length > 0 ? `registered with the wrong type: ${wrongType.join(', ')}` : ''].filter(
        (part) => part !== '',
      );
      return { ok: false, detail: parts.join('; ') };
    }),
  );

  results.push(await deploymentCheck(config, client));
  results.push(
    await check(
      'worker',
      true,
      `Start one: \`sandboxctl worker\` (or \`sandboxctl dev\`) with the same TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and SANDBOXPLANE_TASK_QUEUE (${config.taskQueue}).`,
      async () => {
        const { pollers } = await connection.workflowService.describeTaskQueue({
          namespace,
          taskQueue: { name: config.taskQueue },
          taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        });
        if ((pollers ?? []).length === 0) return { ok: false, detail: `no worker polls task queue ${config.taskQueue}` };
        if (!roundTrip) {
          return { ok: true, detail: `${(pollers ?? []).length} poller(s) on task queue ${config.taskQueue} (no round trip: --quick)` };
        }
        const started = Date.now();
        const result = await runRoundTrip(client(), {
          taskQueue: config.taskQueue,
          requestedBy: 'doctor',
          timeoutMs: ROUND_TRIP_TIMEOUT_MS,
        });
        return {
          ok: true,
          detail: `round trip through ${result.workerIdentity} in ${Date.now() - started} ms (workflow ${result.workflowId})`,
        };
      },
    ),
  );
  results.push(await storeWorkerCheck(config, connection));
  results.push(results.find((result) => result.name === 'worker')?.status === 'ok' ? await dockerHostsCheck(config, client) : skipped('docker hosts', 'no worker answered the round trip'));
  return results;
}

/**
 * New sandboxes, sweeps and round trips go to the deployment's current build (DESIGN §16):
 * without one, or with no worker of it polling, they wait.
 */
function deploymentCheck(config: Config, client: () => Client): Promise<CheckResult> {
  const name = config.deployment.name;
  return check('deployment', true, `Start a lifecycle worker (\`sandboxctl worker\`); \`sandboxctl deployment\` lists the builds of ${name}.`, async () => {
    const report = await describeDeployment(client(), { namespace: config.temporalNamespace, deployment: name, taskQueue: config.taskQueue });
    const current = report.builds.find((build) => build.current);
    if (current === undefined) {
      const polling = report.builds.filter((build) => build.pollers > 0).map((build) => build.buildId);
      return {
        ok: false,
        detail: `${name} has no current build${polling.length > 0 ? ` (polling: ${polling.join(', ')})` : ''}`,
        hint: polling.length > 0 ? `Make one current: \`sandboxctl deployment promote ${polling[0]}\` (docs/deploy.md#rolling-out-a-new-build).` : undefined,
      };
    }
    const pinned = report.builds.filter((build) => !build.current && build.openRuns > 0).map((build) => `${build.buildId}: ${build.openRuns} pinned`);
    const detail = `${name}: current build ${current.buildId} (${current.pollers} poller(s))${pinned.length > 0 ? `; draining ${pinned.join(', ')}` : ''}`;
    if (current.pollers === 0) return { ok: false, detail, hint: `Start a lifecycle worker of build ${current.buildId}, or promote a build that polls (\`sandboxctl deployment\`).` };
    return { ok: true, detail };
  });
}

/** Exactly one store worker may poll `<tq>-store`: it is the projection's single writer. */
function storeWorkerCheck(config: Config, connection: Connection): Promise<CheckResult> {
  const queue = storeQueue(config.taskQueue);
  return check('store worker', true, `Run exactly one store worker: \`sandboxctl worker\` (all roles) or \`sandboxctl worker --role store\`, on ${queue}.`, async () => {
    const pollers = (await queuePollers(connection.workflowService, config.temporalNamespace, queue)).filter((poller) => lastPoll([poller]).live);
    const identities = [...new Set(pollers.map((poller) => poller.identity))];
    if (identities.length === 1) return { ok: true, detail: `${identities[0]} polls ${queue}` };
    if (identities.length === 0) return { ok: false, detail: `no store worker polls ${queue}` };
    return { ok: false, detail: `${identities.length} store workers poll ${queue}: ${identities.join(', ')}`, hint: 'Stop all but one: two store workers split the projection.' };
  });
}

/** The registered docker hosts, through the store role: at least one must be live for a sandbox to be placed. */
function dockerHostsCheck(config: Config, client: () => Client): Promise<CheckResult> {
  return check('docker hosts', true, 'Start a docker worker: `sandboxctl worker` (all roles) or `sandboxctl worker --role docker --host-id NAME` beside each Docker engine.', async () => {
    const store = new StoreClient({ client: client(), taskQueue: config.taskQueue });
    const hosts = await store.hosts();
    const describe = (host: HostView) =>
      `${host.hostId} ${host.live ? `live, ${host.liveSandboxes}/${host.capacity} (${host.adapters.join(', ')})` : `not live (last poll ${host.lastSeenAt ?? 'never'})`}`;
    const live = hosts.filter((host) => host.live);
    if (hosts.length === 0) return { ok: false, detail: 'no docker host has registered' };
    return { ok: live.length > 0, detail: hosts.map(describe).join('; ') };
  });
}

/** The SQLite file; required only where the store role runs (no other role opens it). */
function storeCheck(config: Config): Promise<CheckResult> {
  return check('store', config.workerRoles.includes('store'), 'Start the worker (`sandboxctl worker` or `sandboxctl dev`): it creates and migrates the store.', async () => {
    if (!fs.existsSync(config.storePath)) return { ok: false, detail: `${config.storePath} does not exist yet` };
    let store: Store;
    try {
      store = Store.open(config.storePath, { readonly: true, migrate: false });
    } catch (err) {
      if (isSandboxPlaneError(err)) return { ok: false, detail: err.message, hint: err.hint };
      throw err;
    }
    try {
      const version = store.schemaVersion;
      if (version < LATEST_SCHEMA_VERSION) {
        return { ok: false, detail: `${config.storePath} is at schema version ${version}; this build needs ${LATEST_SCHEMA_VERSION}` };
      }
      return { ok: true, detail: `${config.storePath} at schema version ${version}` };
    } finally {
      store.close();
    }
  });
}

/** Runs every check of `sandboxctl doctor`; the caller decides the exit code. */
export async function runDoctorChecks(config: Config, options: { roundTrip: boolean } = { roundTrip: true }): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  const connection = await connectIfAnswering(config.temporalAddress, 3_000, config.temporalTls);
  results.push(
    await check('temporal', true, ERROR_CODES.TEMPORAL_UNREACHABLE.hint, async () =>
      connection !== undefined
        ? { ok: true, detail: `frontend answers at ${config.temporalAddress}` }
        : {
            ok: false,
            detail: `nothing answers at ${config.temporalAddress} ${config.temporalTls === undefined ? 'over plain gRPC (a cluster that requires mTLS wants SANDBOXPLANE_TEMPORAL_TLS_CERT, _KEY, _CA)' : 'over mTLS'}`,
          },
    ),
  );
  if (connection === undefined) {
    results.push(...['namespace', 'search attributes', 'deployment', 'worker', 'store worker', 'docker hosts'].map((name) => skipped(name, 'Temporal is unreachable')));
  } else {
    try {
      results.push(...(await temporalChecks(config, connection, options.roundTrip)));
    } finally {
      await connection.close();
    }
  }
  results.push(await storeCheck(config));
  results.push(
    await check('docker', false, 'Sandboxes need a Docker engine: run `bash scripts/docker-engine.sh` and export the DOCKER_HOST it prints.', async () => ({
      ok: true,
      detail: await pingDockerEngine(config.dockerHost),
    })),
  );
  return results;
}

export function doctorPassed(results: readonly CheckResult[]): boolean {
  return results.every((result) => !result.required || result.status === 'ok');
}
