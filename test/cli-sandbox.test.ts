import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { ApprovalOutcome, SandboxSummary } from '../src/client/sandbox-client';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import type { AuditEntry, PolicyRecord } from '../src/domain/store-commands';
import { STORE_COMMAND_WORKFLOW } from '../src/domain/contract-names';
import { runCli } from './harness/cli';
import { cliFailure, cliOutput } from './helpers/cli-json';
import { authenticatorFor, wrongCode, type TestAuthenticator } from './helpers/approvers';
import { eventually } from './harness/eventually';
import { startTestWorker, type TestWorker } from './harness/test-worker';
import { testTemporalAddress } from './harness/test-temporal';

// The tests run in order and build on each other: the first one adds the policy rows
// and the approver the later ones rely on.
describe('sandboxctl sandbox, policy and approver commands', () => {
  let worker: TestWorker;
  let alice: TestAuthenticator;
  const cli = (...args: string[]) => runCli(args, worker.env);

  before(async () => {
    worker = await startTestWorker(await testTemporalAddress());
  });
  after(async () => worker?.stop());

  test('policy add/list/remove and approvers add/list speak JSON', async () => {
    const [allow, gated, scratch] = await Promise.all([
      cli('policy', 'add', '--principal', 'agent-*', '--capability', 'cloud.sandbox', '--effect', 'allow', '--max-ttl', '1h', '--services', 'S3, sqs', '--json'),
      cli('policy', 'add', '--principal', 'intern-*', '--capability', 'cloud.sandbox', '--effect', 'require_approval', '--max-concurrent', '2', '--json'),
      cli('policy', 'add', '--principal', 'temp', '--capability', 'cloud.iac.local', '--effect', 'deny', '--json'),
    ]);
    const allowRow = cliOutput<PolicyRecord>(allow);
    assert.deepEqual(
      { ...allowRow, id: 0, createdAt: '' },
      {
        id: 0,
        principalPattern: 'agent-*',
        capability: 'cloud.sandbox',
        effect: 'allow',
        maxTtlSeconds: 3600,
        services: ['s3', 'sqs'],
        maxConcurrent: null,
        maxSandboxHoursPerDay: null,
        createdAt: '',
      },
    );
    assert.equal(cliOutput<PolicyRecord>(gated).maxConcurrent, 2);
    const scratchRow = cliOutput<PolicyRecord>(scratch);

    const removed = cliOutput<PolicyRecord>(await cli('policy', 'remove', String(scratchRow.id), '--json'));
    assert.equal(removed.principalPattern, 'temp');

    const [list, approverAdded] = await Promise.all([cli('policy', 'list', '--json'), cli('approvers', 'add', 'alice', '--json')]);
    const { policies } = cliOutput<{ policies: PolicyRecord[] }>(list);
    assert.deepEqual(policies.map((p) => [p.principalPattern, p.effect]).sort(), [
      ['agent-*', 'allow'],
      ['intern-*', 'require_approval'],
    ]);
    const enrolled = cliOutput<{ name: string; addedAt: string; otpauthUri: string }>(approverAdded);
    assert.equal(enrolled.name, 'alice');
    assert.match(enrolled.otpauthUri, /^otpauth:\/\/totp\/.*alice\?secret=[A-Z2-7]+&/, 'the secret is shown to the enroller, once');
    alice = authenticatorFor('alice', enrolled.otpauthUri);
    const twice = cliFailure(await cli('approvers', 'add', 'alice', '--json'), 3, 'INVALID_STATE');
    assert.match(twice.hint, /approvers remove alice/, 'nobody re-enrols alice in passing');

    const { approvers } = cliOutput<{ approvers: { name: string; addedAt: string }[] }>(await cli('approvers', 'list', '--json'));
    assert.deepEqual(
      approvers.map((a) => a.name),
      ['alice'],
    );
    assert.ok(worker.store.approvers.has('alice'), 'the worker reads the same store');
  });

  test('create --wait → READY; status, list, extend (and past the ceiling), destroy, audit', async () => {
    const ready = cliOutput<SandboxStatus>(
      await cli('create', '--id', 'cli-ready', '--principal', 'agent-1', '--services', 's3,sqs', '--ttl', '30m', '--label', 'team=infra', '--wait', '--json'),
    );
    assert.equal(ready.state, 'READY');
    assert.equal(ready.endpoint, 'memory://cli-ready');
    assert.equal(ready.clientConfig?.endpoint, 'memory://cli-ready');
    assert.deepEqual(ready.labels, { team: 'infra' });
    assert.ok(ready.timeLeftSeconds !== null && ready.timeLeftSeconds > 29 * 60 && ready.timeLeftSeconds <= 30 * 60);

    const status = cliOutput<SandboxStatus>(await cli('status', 'cli-ready', '--json'));
    for (const field of ['id', 'workflowId', 'state', 'principal', 'capability', 'adapter', 'services', 'expiresAt', 'timeLeftSeconds', 'endpoint', 'clientConfig', 'fidelity', 'decision']) {
      assert.ok(field in status, `status --json has ${field}`);
    }
    assert.equal(status.workflowId, 'sandbox-cli-ready');
    assert.deepEqual(status.decision?.effect, 'allow');
    assert.deepEqual(status.runtimeIds, ['memory-cli-ready']);
    assert.ok(['ok', 'unknown'].includes(status.health.status) && status.health.restarts === 0, JSON.stringify(status.health));
    const text = (await cli('status', 'cli-ready')).stdout;
    assert.match(text, /containers\s+memory-cli-r/);
    assert.match(text, /health\s+(ok|unknown) \((checked|not checked yet)/);

    // Visibility lags the workflow by about a second.
    let listed: SandboxSummary[] = [];
    for (let attempt = 0; attempt < 5 && !listed.some((row) => row.id === 'cli-ready'); attempt += 1) {
      listed = cliOutput<{ sandboxes: SandboxSummary[] }>(await cli('list', '--state', 'READY', '--json')).sandboxes;
    }
    assert.ok(
      listed.some((row) => row.id === 'cli-ready' && row.state === 'READY' && row.principal === 'agent-1'),
      JSON.stringify(listed),
    );

    const extended = cliOutput<SandboxStatus>(await cli('extend', 'cli-ready', '--ttl', '10m', '--reason', 'more tests', '--json'));
    assert.equal(Date.parse(extended.expiresAt ?? '') - Date.parse(ready.expiresAt ?? ''), 10 * 60_000);

    const ceiling = cliFailure(await cli('extend', 'cli-ready', '--ttl', '2h', '--json'), 3, 'TTL_EXCEEDS_CEILING');
    assert.match(ceiling.message, /max TTL of 1h/);

    const destroyed = cliOutput<SandboxStatus>(await cli('destroy', 'cli-ready', '--reason', 'finished', '--actor', 'ci-job', '--json'));
    assert.equal(destroyed.state, 'DESTROYED');
    assert.equal(destroyed.clientConfig, null);

    const audit = cliOutput<{ sandboxId: string; operations: AuditEntry[] }>(await cli('audit', 'cli-ready', '--json'));
    assert.equal(audit.sandboxId, 'cli-ready');
    assert.deepEqual(
      audit.operations.map((op) => op.action),
      ['requested', 'screened', 'placed', 'ready', 'extended', 'destroying', 'destroyed'],
    );
    const extendRow = audit.operations.find((op) => op.action === 'extended');
    assert.equal(extendRow?.reason, 'more tests');
    assert.match(extendRow?.actor ?? '', /^cli:/, 'extend names the OS user by default');
    assert.equal(audit.operations.find((op) => op.action === 'destroying')?.actor, 'ci-job');
  });

  test('approval: the requester, an unlisted approver and a locked-out one are refused, a listed one gets it READY; deny → DENIED', async () => {
    const [waiting, toDeny] = await Promise.all([
      cli('create', '--id', 'cli-review', '--principal', 'intern-1', '--services', 'dynamodb', '--purpose', 'schema test'),
      cli('create', '--id', 'cli-refuse', '--principal', 'intern-2', '--services', 's3', '--json'),
    ]);
    assert.equal(waiting.code, 0, waiting.stderr);
    assert.match(waiting.stdout, /^sandbox cli-review {2}AWAITING_APPROVAL/);
    assert.match(waiting.stdout, /sandboxctl approve cli-review --approver NAME/, 'the human output says how to approve');
    assert.match(waiting.stdout, /must not be intern-1/, "the workflow's own words are shown too");
    assert.equal(cliOutput<SandboxStatus>(toDeny).state, 'AWAITING_APPROVAL');

    const self = cliFailure(await cli('approve', 'cli-review', '--approver', 'intern-1', '--json'), 3, 'APPROVER_NOT_ALLOWED');
    assert.match(self.message, /requested this sandbox/);
    // A name that is not an approver reads exactly like a listed one with a wrong code (DESIGN §18).
    const unlisted = cliFailure(await cli('approve', 'cli-review', '--approver', 'mallory', '--code', '123456', '--json'), 3, 'APPROVAL_UNVERIFIED');
    const aliceWrong = cliFailure(await cli('approve', 'cli-review', '--approver', 'alice', '--code', wrongCode(await alice.code()), '--json'), 3, 'APPROVAL_UNVERIFIED');
    assert.equal(unlisted.message.replaceAll('mallory', 'NAME'), aliceWrong.message.replaceAll('alice', 'NAME'));

    // Guessing: five wrong codes in a row lock a name out, listed or not, and then its right code is refused too.
    const { otpauthUri } = cliOutput<{ otpauthUri: string }>(await cli('approvers', 'add', 'carol', '--json'));
    const carol = authenticatorFor('carol', otpauthUri);
    const guess = wrongCode(await carol.code());
    for (let guesses = 0; guesses < 4; guesses += 1) {
      await assert.rejects(worker.sandboxes.approve('cli-review', { approver: 'carol', code: guess }), (err: Error & { code?: string }) => err.code === 'APPROVAL_UNVERIFIED');
    }
    const fifth = cliFailure(await cli('approve', 'cli-review', '--approver', 'carol', '--code', guess, '--json'), 3, 'RATE_LIMITED');
    assert.match(fifth.message, /carol is locked out until/);
    const rightButLocked = cliFailure(await cli('approve', 'cli-review', '--approver', 'carol', '--code', await carol.code(), '--json'), 3, 'RATE_LIMITED');
    assert.match(rightButLocked.message, /carol is locked out after too many wrong codes/);
    assert.equal((await worker.sandboxes.status('cli-review')).state, 'AWAITING_APPROVAL');
    const lockedRows = worker.store.sandboxes.audit('cli-review').filter((op) => op.actor === 'carol');
    assert.deepEqual(
      lockedRows.map((op) => op.reason?.split(':')[0]),
      [...Array<string>(4).fill('APPROVAL_UNVERIFIED'), 'RATE_LIMITED', 'RATE_LIMITED'],
      'every guess is audited',
    );

    const forged = cliFailure(await cli('approve', 'cli-review', '--approver', 'alice', '--reason', 'forged', '--json'), 3, 'APPROVAL_UNVERIFIED');
    assert.match(forged.message, /no code/);
    assert.match(forged.hint, /--code/);
    const badCode = await cli('approve', 'cli-review', '--approver', 'alice', '--code', '12345', '--json');
    assert.match(cliFailure(badCode, 2, 'INVALID_INPUT').message, /--code/);

    const approved = cliOutput<ApprovalOutcome>(await cli('approve', 'cli-review', '--approver', 'alice', '--reason', 'fine', '--code', await alice.code(), '--json'));
    assert.equal(approved.attempt.verdict, 'accepted');
    assert.ok(['PROVISIONING', 'READY'].includes(approved.status.state), approved.status.state);
    const deadline = Date.now() + 10_000;
    let state = approved.status.state;
    while (state !== 'READY' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      state = (await worker.sandboxes.status('cli-review')).state;
    }
    assert.equal(state, 'READY');

    const denied = cliOutput<ApprovalOutcome>(await cli('deny', 'cli-refuse', '--approver', 'alice', '--reason', 'use mocks', '--code', await alice.code(), '--json'));
    assert.equal(denied.status.state, 'DENIED');
    assert.equal(denied.status.error?.code, 'APPROVAL_DENIED');
    assert.deepEqual(
      worker.store.sandboxes.audit('cli-review').map((op) => op.action),
      ['requested', 'screened', ...Array<string>(10).fill('approve_ignored'), 'approved', 'placed', 'ready'],
    );
  });

  test("SANDBOXPLANE_PRINCIPAL: the CLI acts as that principal (its own sandboxes only, no one else's name); sandboxctl mcp needs one", async () => {
    const asAgent = (...args: string[]) => runCli(args, { ...worker.env, SANDBOXPLANE_PRINCIPAL: 'agent-own' });
    const mine = cliOutput<SandboxStatus>(await asAgent('create', '--id', 'cli-own', '--services', 's3', '--wait', '--json'));
    assert.equal(mine.principal, 'agent-own', '--principal defaults to the caller');
    const other = await worker.sandboxes.create({ id: 'cli-other', principal: 'agent-other', services: ['s3'] }, { wait: 'ready' });
    assert.equal(other.state, 'READY');
    assert.equal(cliFailure(await asAgent('status', 'cli-other', '--json'), 4, 'NOT_FOUND').message, 'no sandbox cli-other');
    cliFailure(await asAgent('destroy', 'cli-other', '--json'), 4, 'NOT_FOUND');
    const mismatch = cliFailure(await asAgent('create', '--principal', 'admin', '--services', 's3', '--json'), 3, 'PRINCIPAL_MISMATCH');
    assert.match(mismatch.message, /acts as agent-own/);
    const listed = cliOutput<{ sandboxes: SandboxSummary[] }>(await asAgent('list', '--json')).sandboxes;
    assert.ok(
      listed.every((row) => row.principal === 'agent-own'),
      JSON.stringify(listed),
    );
    cliFailure(await runCli(['mcp', '--json'], worker.env), 2, 'INVALID_INPUT');

    // Operator commands are refused to a principal-bound caller (DESIGN §18), before anything reaches the store.
    const operatorCommands = [
      ['approvers', 'add', 'helper'],
      ['approvers', 'list'],
      ['policy', 'add', '--principal', 'agent-own', '--capability', 'cloud.sandbox', '--effect', 'allow'],
      ['policy', 'list'],
      ['hosts'],
      ['leaks'],
      ['keys', 'add', 'agent-own'],
      ['targets', 'list'],
      ['sweep'],
      ['deployment'],
    ];
    const refusals = await Promise.all(operatorCommands.map((args) => asAgent(...args, '--json')));
    for (const [index, refusal] of refusals.entries())
      assert.match(cliFailure(refusal, 3, 'PRINCIPAL_MISMATCH').message, /operator's command.*agent-own/, operatorCommands[index]?.join(' '));
    assert.deepEqual(
      worker.store.approvers.list().map((approver) => approver.name),
      ['alice', 'carol'],
      'no approver was added',
    );
    const ownAudit = cliOutput<{ operations: AuditEntry[] }>(await asAgent('audit', 'cli-own', '--json'));
    assert.equal(ownAudit.operations[0]?.action, 'requested', 'its own audit trail it may read');
    cliFailure(await asAgent('audit', 'cli-other', '--json'), 4, 'NOT_FOUND');
    await worker.sandboxes.destroy('cli-own');
    await worker.sandboxes.destroy('cli-other');
  });

  test('refused → exit 3, not found → exit 4', async () => {
    const [refused, status, audit, policy] = await Promise.all([
      cli('create', '--principal', 'stranger', '--services', 's3', '--json'),
      cli('status', 'nosuch', '--json'),
      cli('audit', 'nosuch', '--json'),
      cli('policy', 'remove', '999', '--json'),
    ]);
    assert.match(cliFailure(refused, 3, 'POLICY_DENIED').message, /no policy row lets stranger/);
    assert.match(cliFailure(status, 4, 'NOT_FOUND').message, /nosuch/);
    assert.match(cliFailure(audit, 4, 'NOT_FOUND').message, /nosuch/);
    assert.match(cliFailure(policy, 4, 'NOT_FOUND').message, /999/);
  });

  test('policy add works with no store file where the caller runs, and the change is a storeCommand execution', async () => {
    // The caller's SANDBOXPLANE_DB names nothing: only the store worker holds the file.
    const remote = { ...worker.env, SANDBOXPLANE_DB: '/nonexistent/x.sqlite' };
    const added = cliOutput<PolicyRecord>(await runCli(['policy', 'add', '--principal', 'remote-*', '--capability', 'cloud.sandbox', '--effect', 'deny', '--json'], remote));
    const { policies } = cliOutput<{ policies: PolicyRecord[] }>(await runCli(['policy', 'list', '--json'], remote));
    assert.ok(
      policies.some((row) => row.id === added.id && row.principalPattern === 'remote-*'),
      'the new row is listed',
    );
    assert.ok(
      worker.store.policies.list().some((row) => row.id === added.id),
      "the row is in the store worker's file",
    );
    assert.equal(fs.existsSync('/nonexistent/x.sqlite'), false);

    const query = `WorkflowType = '${STORE_COMMAND_WORKFLOW}' AND TaskQueue = '${worker.config.taskQueue}'`;
    const execution = await eventually('the policy change in Temporal visibility', async () => {
      for await (const found of worker.client.workflow.list({ query })) {
        if (found.workflowId.startsWith('store-policy-add-') && found.status.name === 'COMPLETED') {
          const result: unknown = await worker.client.workflow.getHandle(found.workflowId, found.runId).result();
          if ((result as PolicyRecord).id === added.id) return found;
        }
      }
      return undefined;
    });
    assert.equal(execution.type, STORE_COMMAND_WORKFLOW);
    assert.equal(execution.taskQueue, worker.config.taskQueue);
  });

  test('hosts lists the docker host of the all-roles worker, with the documented fields', async () => {
    // The docker role registers its host when it starts; the store answers once it has.
    const local = await eventually('host local in `sandboxctl hosts`', async () => {
      const { hosts } = cliOutput<{ hosts: Record<string, unknown>[] }>(await cli('hosts', '--json'));
      return hosts.find((host) => host.hostId === 'local');
    });
    for (const field of ['hostId', 'taskQueue', 'capacity', 'live', 'adapters', 'lastSeenAt', 'warmPool']) assert.ok(field in local, `hosts[].${field}`);
    assert.equal(local.live, true);
    assert.deepEqual(local.warmPool, {}, 'no pool unless SANDBOXPLANE_WARM_POOL is set');
    // Memory (DESIGN §12): the engine's, the default 0.9 of it for the containers' limits, and what they hold.
    assert.ok(typeof local.engineMemoryBytes === 'number' && local.engineMemoryBytes > 0, `engineMemoryBytes ${String(local.engineMemoryBytes)}`);
    assert.equal(local.memoryCapacityBytes, Math.floor(local.engineMemoryBytes * 0.9));
    assert.equal(typeof local.memoryUsedBytes, 'number');
    // Requests fill the allocatable memory; limits may add up to it × SANDBOXPLANE_HOST_MEMORY_OVERCOMMIT (default 3).
    assert.equal(typeof local.memoryRequestedBytes, 'number');
    assert.equal(local.memoryLimitCapacityBytes, Math.floor(local.memoryCapacityBytes * 3));
    // What the host's containers use now, asked of its docker worker (test/warm-pool.test.ts checks it against docker stats).
    assert.equal(typeof local.memoryInUseBytes, 'number');
    const human = await cli('hosts');
    assert.equal(human.code, 0, human.stderr);
    assert.match(
      human.stdout,
      /HOST\s+LIVE\s+SANDBOXES\s+REQUESTED\s+LIMITS\s+IN USE\s+WARM POOL\s+ADAPTERS\s+LAST SEEN\nlocal\s+yes\s+\d+\/\d+\s+[\d.]+ [KMG]?i?B\/[\d.]+ GiB\s+[\d.]+ [KMG]?i?B\/[\d.]+ GiB\s+[\d.]+ [KMG]?i?B\s+-\s/,
    );
  });

  test('invalid input → exit 2 naming every bad flag', async () => {
    const [create, policy] = await Promise.all([
      cli('create', '--services', 's3', '--ttl', '5x', '--json'),
      cli('policy', 'add', '--principal', 'p', '--capability', 'cloud.sandbox', '--effect', 'maybe', '--json'),
    ]);
    const createError = cliFailure(create, 2, 'INVALID_INPUT');
    assert.match(createError.message, /--principal is required/);
    assert.match(createError.message, /--ttl must be a duration such as 90s, 30m or 2h, got '5x'/);
    assert.match(cliFailure(policy, 2, 'INVALID_INPUT').message, /--effect must be one of allow, require_approval, deny, got 'maybe'/);
  });
});
