/**
 * Usage and budgets (issue 40 part 3, DESIGN §19): on a real dev server, Docker engine and
 * moto, through the CLI. A moto sandbox kept 20 s shows its READY seconds, CPU, peak memory
 * (the engine's stats) and the requests its agent made (the guard's count, not the plane's
 * own calls) in `sandboxctl usage`; a principal-bound caller sees its own rows only; and a
 * policy row's `--max-sandbox-hours-per-day` refuses the next create with QUOTA_EXCEEDED,
 * saying when the count starts again.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { CreateBucketCommand, ListBucketsCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { ClientConfig } from '../src/domain/client-config';
import { isSandboxPlaneError } from '../src/domain/errors';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import type { PolicyRecord } from '../src/domain/store-commands';
import type { UsageRow } from '../src/domain/usage';
import { runCli } from './harness/cli';
import { cliFailure, cliOutput } from './helpers/cli-json';
import { createTestNamespace } from './helpers/test-namespace';
import { testTemporalAddress } from './harness/test-temporal';
import { startTestWorker, type TestWorker } from './harness/test-worker';

const motoImage = process.env.SANDBOXPLANE_MOTO_IMAGE;
const PRINCIPAL = 'agent-usage';

describe(
  'usage and the daily cap (real dev server, Docker engine, moto and CLI)',
  { skip: motoImage === undefined && 'needs the moto image (SANDBOXPLANE_MOTO_IMAGE, set by the test runner)' },
  () => {
    let worker: TestWorker;
    const as = (principal: string | undefined, ...args: string[]) => {
      const { SANDBOXPLANE_PRINCIPAL: _operator, ...env } = worker.env;
      return runCli([...args, '--json'], principal === undefined ? env : { ...env, SANDBOXPLANE_PRINCIPAL: principal });
    };
    const usage = async (principal: string | undefined, ...args: string[]) => cliOutput<{ rows: UsageRow[] }>(await as(principal, 'usage', ...args)).rows;

    before(async () => {
      const address = await testTemporalAddress();
      const namespace = await createTestNamespace(address, 'usage');
      // A short health interval: the slow usage read happens while the sandbox is READY, before the teardown's.
      worker = await startTestWorker(address, {
        env: { TEMPORAL_NAMESPACE: namespace, SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1', SANDBOXPLANE_MOTO_IMAGE: motoImage ?? '', SANDBOXPLANE_HEALTH_INTERVAL: '8s' },
      });
      cliOutput<PolicyRecord>(await as(undefined, 'policy', 'add', '--principal', 'agent-*', '--capability', 'cloud.sandbox', '--effect', 'allow'));
    });

    after(async () => {
      await worker?.stop();
    });

    test('a moto sandbox kept 20 s shows its sandbox-seconds, CPU, peak memory and the requests its agent made', { timeout: 180_000 }, async () => {
      const created = cliOutput<SandboxStatus>(await as(PRINCIPAL, 'create', '--id', 'usage-moto', '--adapter', 'moto', '--services', 's3', '--wait'));
      assert.equal(created.state, 'READY');
      const s3 = new S3Client({ ...(created.clientConfig as ClientConfig), maxAttempts: 1 });
      const calls = 5;
      try {
        await s3.send(new CreateBucketCommand({ Bucket: 'metered' }));
        for (let i = 0; i < calls - 2; i += 1) await s3.send(new PutObjectCommand({ Bucket: 'metered', Key: `k${i}`, Body: 'x'.repeat(1000) }));
        await s3.send(new ListBucketsCommand({}));
      } finally {
        s3.destroy();
      }
      await sleep(20_000);
      const live = (await usage(undefined, '--principal', PRINCIPAL)).find((row) => row.principal === PRINCIPAL);
      assert.ok(live !== undefined && live.sandboxSeconds >= 15, `a live sandbox counts up to now: ${JSON.stringify(live)}`);
      cliOutput<SandboxStatus>(await as(PRINCIPAL, 'destroy', 'usage-moto'));

      const rows = await usage(undefined, '--principal', PRINCIPAL, '--since', '1d');
      assert.equal(rows.length, 1, JSON.stringify(rows));
      const [row] = rows;
      assert.ok(row !== undefined);
      console.log(`usage of the moto sandbox: ${JSON.stringify(row)}`);
      assert.deepEqual(Object.keys(row).sort(), ['cpuSeconds', 'day', 'peakMemoryBytes', 'principal', 'requests', 'sandboxSeconds', 'sandboxes'].sort());
      assert.equal(row.principal, PRINCIPAL);
      assert.equal(row.day, new Date().toISOString().slice(0, 10));
      assert.equal(row.sandboxes, 1);
      assert.ok(row.sandboxSeconds >= 15 && row.sandboxSeconds < 120, `sandboxSeconds ${row.sandboxSeconds}`);
      assert.ok(row.cpuSeconds > 0, `cpuSeconds ${row.cpuSeconds}`);
      assert.ok(row.peakMemoryBytes > 0, `peakMemoryBytes ${row.peakMemoryBytes}`);
      // The agent's calls only: minting, health probes and the plane's usage reads are the plane's own.
      assert.equal(row.requests, calls, `requests ${row.requests}`);

      // A principal-bound caller sees its own rows only; another's are not there.
      assert.deepEqual(await usage(PRINCIPAL), rows);
      assert.deepEqual(await usage('agent-other'), []);
      assert.deepEqual(await usage('agent-other', '--principal', PRINCIPAL), []);
      cliFailure(await as(undefined, 'usage', '--since', 'yesterday'), 2, 'INVALID_INPUT');
    });

    test('a policy row with --max-sandbox-hours-per-day refuses the next create past it with QUOTA_EXCEEDED and says when it resets', async () => {
      // 0.004 h is 14.4 s: the 20 s sandbox above is past it.
      const capped = cliOutput<PolicyRecord>(
        await as(undefined, 'policy', 'add', '--principal', PRINCIPAL, '--capability', 'cloud.sandbox', '--effect', 'allow', '--max-sandbox-hours-per-day', '0.004'),
      );
      assert.equal(capped.maxSandboxHoursPerDay, 0.004);
      const listed = cliOutput<{ policies: PolicyRecord[] }>(await as(undefined, 'policy', 'list')).policies.find((policy) => policy.id === capped.id);
      assert.equal(listed?.maxSandboxHoursPerDay, 0.004);
      cliFailure(
        await as(undefined, 'policy', 'add', '--principal', PRINCIPAL, '--capability', 'cloud.sandbox', '--effect', 'allow', '--max-sandbox-hours-per-day', '0'),
        2,
        'INVALID_INPUT',
      );

      const refused = cliFailure(await as(PRINCIPAL, 'create', '--adapter', 'memory', '--services', 's3', '--wait'), 3, 'QUOTA_EXCEEDED');
      const tomorrow = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate() + 1)).toISOString();
      assert.match(refused.message, /agent-usage has used \d+ sandbox-seconds today \(UTC\); the policy allows 0\.004 sandbox-hours \(14 s\) per day/);
      assert.ok(refused.message.includes(`starts again at ${tomorrow}`), refused.message);
      // The SDK's error carries the numbers in its details.
      await assert.rejects(worker.sandboxes.create({ principal: PRINCIPAL, adapter: 'memory', services: ['s3'] }, { wait: 'ready' }), (err: unknown) => {
        assert.ok(isSandboxPlaneError(err) && err.code === 'QUOTA_EXCEEDED', String(err));
        assert.equal(err.details.resetsAt, tomorrow);
        assert.equal(err.details.maxSandboxHoursPerDay, 0.004);
        assert.ok(typeof err.details.usedSandboxSeconds === 'number' && err.details.usedSandboxSeconds >= 15);
        return true;
      });

      // Another principal under the uncapped row is not held back.
      const other = cliOutput<SandboxStatus>(await as('agent-other', 'create', '--adapter', 'memory', '--services', 's3', '--wait'));
      assert.equal(other.state, 'READY');
      await worker.sandboxes.destroy(other.id);
    });
  },
);
