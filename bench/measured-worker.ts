import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { SandboxClient } from '../src/client/sandbox-client';
import { LOCAL_FLAGS, testDataConverter } from '../test/harness/test-worker';
import { runSandboxctl, startWorkerProcess } from '../test/harness/worker-process';
import { BENCH_PRINCIPAL, benchWorkerEnv, type BenchContext, type MeasuredWorker } from './bench-context';

/** Starts the {@link MeasuredWorker}: `sandboxctl worker` in a child process, with a policy that lets the bench's agents in. */
export async function startMeasuredWorker(context: BenchContext, purpose: string): Promise<MeasuredWorker> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-bench-'));
  const env: Record<string, string> = {
    TEMPORAL_ADDRESS: context.server.address,
    TEMPORAL_NAMESPACE: 'default',
    SANDBOXPLANE_TASK_QUEUE: `bench-${purpose}-${context.runId}`,
    SANDBOXPLANE_DB: path.join(dir, 'plane.sqlite'),
    ...LOCAL_FLAGS,
    ...benchWorkerEnv(context, purpose),
  };
  // Written when the worker exits (stop() is a SIGTERM and a drain); open it in Chrome DevTools.
  const nodeArgs = context.options.cpuProfDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${context.options.cpuProfDir}`];
  try {
    const worker = await startWorkerProcess(env, { nodeArgs });
    let connection: Connection | undefined;
    try {
      const policy = await runSandboxctl(['policy', 'add', '--principal', `${BENCH_PRINCIPAL}*`, '--capability', 'cloud.sandbox', '--effect', 'allow'], env);
      if (policy.code !== 0) throw new Error(`sandboxctl policy add exited ${policy.code}: ${policy.stderr}`);
      connection = await Connection.connect({ address: context.server.address });
      // The worker encrypts payloads with the checkout's codec keys; this client reads them alike.
      const client = new Client({ connection, namespace: 'default', dataConverter: testDataConverter() });
      const opened = connection;
      return {
        pid: worker.pid,
        taskQueue: env.SANDBOXPLANE_TASK_QUEUE as string,
        env,
        client,
        sandboxes: new SandboxClient({ client, taskQueue: env.SANDBOXPLANE_TASK_QUEUE as string }),
        stop: async () => {
          await worker.stop();
          await opened.close();
          fs.rmSync(dir, { recursive: true, force: true });
        },
      };
    } catch (err) {
      await worker.stop();
      await connection?.close();
      throw err;
    }
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
