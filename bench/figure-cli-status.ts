import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { workflowIdFor } from '../src/domain/contract-names';
import { locateTemporalCli } from '../src/temporal-dev/temporal-cli';
import { cliEnv, REPO_ROOT } from '../test/harness/cli';
import { BENCH_PRINCIPAL, type BenchContext, type Figure } from './bench-context';
import { latency, ratioOf, type FigureRow } from './bench-report';
import type { MeasuredWorker } from './bench-context';
import { alternate, median, rounded, timed } from './measure';

/** `status` against `temporal workflow describe` (issue 42; 3× before). */
const TARGET_RATIO = 2;
const PROFILE_RUNS = 3;
/** `create --wait` from the CLI against the same create from the SDK (issue 42). */
const CREATE_TARGET_RATIO = 1.2;

/**
 * How an operator starts `sandboxctl`: linked into node_modules/.bin by the set-up when it
 * is this checkout's (a git worktree sharing another checkout's node_modules links to that
 * one's CLI), else the file itself.
 */
function sandboxctlCommand(): { command: string; args: string[]; shown: string } {
  const linked = path.join(REPO_ROOT, 'node_modules', '.bin', 'sandboxctl');
  const own = path.join(REPO_ROOT, 'bin', 'sandboxctl.js');
  if (fs.existsSync(linked) && fs.realpathSync(linked) === fs.realpathSync(own)) return { command: linked, args: [], shown: 'node_modules/.bin/sandboxctl' };
  return { command: process.execPath, args: [path.join(REPO_ROOT, 'bin', 'sandboxctl.js')], shown: 'node bin/sandboxctl.js' };
}

/** Runs a command to its end and returns its wall milliseconds; a non-zero exit throws with its stderr. */
function wallMs(command: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const started = performance.now();
  const child = spawn(command, args, { cwd: REPO_ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      if (code === 0) resolve(performance.now() - started);
      else reject(new Error(`${path.basename(command)} ${args.join(' ')} exited ${code}: ${stderr.slice(-2000)}`));
    });
  });
}

async function medianMs(runs: number, command: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const times: number[] = [];
  for (let run = 0; run < runs; run += 1) times.push(await wallMs(command, args, env));
  return rounded(median(times));
}

type Sandboxctl = ReturnType<typeof sandboxctlCommand>;

/**
 * CLI.create: `sandboxctl create --wait` (a process start, the CLI's modules with the
 * Temporal SDK, a connection, the update-with-start that waits inside the lifecycle, the
 * status query for the client settings) against the same create from the SDK in this
 * process on its open connection, alternating, medians. Memory sandboxes: what is
 * measured is the plane's lifecycle through Temporal, not an emulator's start, so the
 * difference (`createCliOverheadMs`) is what the CLI adds and stays put round to round.
 */
async function createRow(context: BenchContext, worker: MeasuredWorker, sandboxctl: Sandboxctl, env: NodeJS.ProcessEnv): Promise<{ row: FigureRow; profile: Record<string, number> }> {
  const created: string[] = [];
  const request = (id: string) => {
    created.push(id);
    return { id, principal: BENCH_PRINCIPAL, services: ['s3'], adapter: 'memory' as const, ttlSeconds: 3600 };
  };
  const cliArgs = (id: string) => [...sandboxctl.args, 'create', '--id', id, '--principal', BENCH_PRINCIPAL, '--services', 's3', '--adapter', 'memory', '--ttl', '1h', '--wait', '--json'];
  try {
    // Warm-up: the file system cache of the CLI, and the worker's first lifecycle.
    await worker.sandboxes.create(request(`cli-create-${context.runId}-warm-sdk`), { wait: 'ready' });
    await wallMs(sandboxctl.command, cliArgs(request(`cli-create-${context.runId}-warm-cli`).id), env);
    context.progress(`CLI: ${context.options.cliRounds} rounds of an SDK create --wait, then ${sandboxctl.shown} create --wait (memory sandboxes)`);
    const measured = await alternate(
      context.options.cliRounds,
      (round) => timed(() => worker.sandboxes.create(request(`cli-create-${context.runId}-sdk-${round}`), { wait: 'ready' })),
      (round) => wallMs(sandboxctl.command, cliArgs(request(`cli-create-${context.runId}-cli-${round}`).id), env),
    );
    const cli = median(measured.measured);
    const sdk = median(measured.baseline);
    const ratio = ratioOf(cli, sdk);
    return {
      row: {
        key: 'CLI.create',
        measured: latency(`${sandboxctl.shown} create --wait`, measured.measured),
        baseline: latency('SandboxClient.create wait ready (in process)', measured.baseline),
        ratio,
        target: { text: `<= ${CREATE_TARGET_RATIO}x`, reached: ratio === null ? null : ratio <= CREATE_TARGET_RATIO },
        detail: `${context.options.cliRounds} rounds alternating, medians; memory sandboxes, create → READY; the CLI from spawn to exit, the SDK on its open connection`,
      },
      profile: { createCliOverheadMs: rounded(cli - sdk) },
    };
  } finally {
    await Promise.all(created.map((id) => worker.sandboxes.destroy(id).catch(() => undefined)));
  }
}

/**
 * CLI: the wall time of `sandboxctl status ID` (a process start, a connection, the
 * workflow's status query answered by the worker) against `temporal workflow describe`
 * of the same workflow (a process start, a connection, one read of the server),
 * alternating, medians. `status` answers without the Temporal SDK (one QueryWorkflow
 * over node:http2), so what is left is mostly Node's own start: `nodeStartMs` in the
 * profile is that floor, about 1.5× `describe` on its own (docs/performance.md#cli-start-up).
 */
export const cliStatus: Figure = {
  id: 'CLI',
  title: 'sandboxctl status vs temporal workflow describe',
  needs: [],
  async run(context) {
    const worker = await context.measuredWorker();
    const id = `cli-${context.runId}`;
    await worker.sandboxes.create({ id, principal: BENCH_PRINCIPAL, services: ['s3'], ttlSeconds: 3600 }, { wait: 'ready' });
    try {
      const sandboxctl = sandboxctlCommand();
      const env = cliEnv(worker.env);
      const temporal = locateTemporalCli(process.env.SANDBOXPLANE_TEMPORAL_CLI);
      const describeArgs = ['workflow', 'describe', '--workflow-id', workflowIdFor(id), '--address', context.server.address, '--namespace', 'default'];
      const statusArgs = [...sandboxctl.args, 'status', id];
      // Warm-up: the file system cache of both programs.
      await wallMs(temporal, describeArgs, env);
      await wallMs(sandboxctl.command, statusArgs, env);
      context.progress(`CLI: ${context.options.cliRounds} rounds of temporal workflow describe, then ${sandboxctl.shown} status`);
      const measured = await alternate(
        context.options.cliRounds,
        () => wallMs(temporal, describeArgs, env),
        () => wallMs(sandboxctl.command, statusArgs, env),
      );
      const status = median(measured.measured);
      const describe = median(measured.baseline);
      const ratio = ratioOf(status, describe);
      context.progress('CLI: what a start costs (node alone, loading the CLI, --help)');
      const profile = {
        sandboxctl: sandboxctl.shown,
        nodeStartMs: await medianMs(PROFILE_RUNS, process.execPath, ['-e', '0'], env),
        cliLoadMs: await medianMs(PROFILE_RUNS, process.execPath, ['-e', `require(${JSON.stringify(path.join(REPO_ROOT, 'dist', 'cli', 'main.js'))})`], env),
        helpMs: await medianMs(PROFILE_RUNS, sandboxctl.command, [...sandboxctl.args, '--help'], env),
        temporalHelpMs: await medianMs(PROFILE_RUNS, temporal, ['--help'], env),
      };
      const create = await createRow(context, worker, sandboxctl, env);
      return {
        rows: [
          {
            key: 'CLI.status',
            measured: latency(`${sandboxctl.shown} status`, measured.measured),
            baseline: latency('temporal workflow describe', measured.baseline),
            ratio,
            target: { text: `<= ${TARGET_RATIO}x`, reached: ratio === null ? null : ratio <= TARGET_RATIO },
            detail: `${context.options.cliRounds} rounds alternating, medians of wall time from spawn to exit; the same READY sandbox`,
          },
          create.row,
        ],
        profile: { ...profile, ...create.profile },
      };
    } finally {
      await worker.sandboxes.destroy(id);
    }
  },
};
