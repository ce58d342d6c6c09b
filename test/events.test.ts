/**
 * `sandboxctl events` (issue 40, DESIGN §11 "Events", §19) on a real dev server and the
 * store's real SQLite file, through the CLI, with the memory adapter: a sandbox created,
 * extended and destroyed says so in four events with their reasons, states and actors; a
 * bound CLI of another principal sees none of them and reads the sandbox as one that never
 * was; `--follow` prints an event written after it started (its read waits in the store
 * role); a bad `--since` is INVALID_INPUT naming the flag.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { PlaneEvent } from '../src/domain/events';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import { runCli, spawnCli, stopChild, waitForOutput } from './harness/cli';
import { cliFailure, cliOutput } from './helpers/cli-json';
import { testTemporalAddress } from './harness/test-temporal';
import { startTestWorker, type TestWorker } from './harness/test-worker';

const CONTRACT_FIELDS = ['eventId', 'time', 'kind', 'sandboxId', 'runId', 'principal', 'actor', 'reason', 'from', 'to', 'detail'];

/** JSON lines, one event each. */
function eventLines(stdout: string): PlaneEvent[] {
  return stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as PlaneEvent);
}

describe('sandboxctl events (real dev server, store file and CLI)', () => {
  let worker: TestWorker;
  const as = (principal: string | undefined, ...args: string[]) => {
    const { SANDBOXPLANE_PRINCIPAL: _operator, ...env } = worker.env;
    return runCli(args, principal === undefined ? env : { ...env, SANDBOXPLANE_PRINCIPAL: principal });
  };
  const asAgent = (...args: string[]) => as('agent-events', ...args);
  const listed = async (principal: string | undefined, ...args: string[]) => {
    const result = await as(principal, 'events', ...args, '--json');
    assert.equal(result.code, 0, result.stderr);
    return eventLines(result.stdout);
  };

  before(async () => {
    worker = await startTestWorker(await testTemporalAddress());
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
  });
  after(async () => worker?.stop());

  test('create, extend (by the agent) and destroy (by an operator): four events in order, with reasons, states and actors', async () => {
    cliOutput<SandboxStatus>(await asAgent('create', '--id', 'evt-one', '--adapter', 'memory', '--services', 's3', '--wait', '--json'));
    cliOutput<SandboxStatus>(await asAgent('extend', 'evt-one', '--ttl', '10m', '--actor', 'planner', '--json'));
    await worker.sandboxes.destroy('evt-one', { actor: 'ops-alice', reason: 'done' });

    const events = await listed(undefined, '--sandbox', 'evt-one');
    assert.deepEqual(
      events.map((e) => [e.kind, e.reason, e.from, e.to]),
      [
        ['sandbox.requested', 'agent', null, 'REQUESTED'],
        ['sandbox.ready', 'agent', 'REQUESTED', 'READY'],
        ['sandbox.extended', 'agent', 'READY', 'READY'],
        ['sandbox.destroyed', 'operator', 'READY', 'DESTROYED'],
      ],
      JSON.stringify(events, null, 2),
    );
    for (const event of events) {
      assert.deepEqual(Object.keys(event), CONTRACT_FIELDS, 'the contract fields, no internal place in the order');
      assert.equal(event.sandboxId, 'evt-one');
      assert.equal(event.principal, 'agent-events');
      assert.match(event.eventId, /^evt_[0-9a-f]{32}$/);
    }
    assert.equal(events[2]?.actor, 'agent:planner', 'a bound CLI acts as the agent');
    assert.equal(events[3]?.actor, 'ops-alice', 'a destroy names who asked for it');
    assert.equal(typeof events[2]?.detail.expiresAt, 'string', 'an extension says the new expiry');
    assert.equal(new Set(events.map((e) => e.eventId)).size, 4);

    assert.deepEqual(await listed('agent-events', '--sandbox', 'evt-one'), events, 'the owner sees the same events');
    assert.deepEqual(await listed('agent-events', '--since', '1h'), events, 'and all of its own since an hour ago');

    const human = await as(undefined, 'events', '--sandbox', 'evt-one');
    assert.equal(human.code, 0, human.stderr);
    const lines = human.stdout.trimEnd().split('\n');
    assert.equal(lines.length, 4);
    assert.match(lines[3] ?? '', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z {2}sandbox\.destroyed {2}evt-one {2}READY→DESTROYED {2}operator {2}\([^)]+\)$/);
  });

  test("another principal's bound CLI sees none of them, and reads the sandbox as one that never was", async () => {
    assert.deepEqual(await listed('agent-other'), [], 'no events of agent-events');
    const other = cliFailure(await as('agent-other', 'events', '--sandbox', 'evt-one', '--json'), 4, 'NOT_FOUND');
    const never = cliFailure(await as('agent-other', 'events', '--sandbox', 'evt-never', '--json'), 4, 'NOT_FOUND');
    assert.equal(other.message.replace('evt-one', 'ID'), never.message.replace('evt-never', 'ID'));
    assert.equal(other.hint, never.hint);
    assert.ok((await listed(undefined)).length >= 4, 'an operator sees everyone');
  });

  test('--follow prints an event written after it started: the read waits in the store role for it', async () => {
    const since = new Date().toISOString();
    cliOutput<SandboxStatus>(await asAgent('create', '--id', 'evt-follow', '--adapter', 'memory', '--services', 's3', '--wait', '--json'));
    const { SANDBOXPLANE_PRINCIPAL: _operator, ...env } = worker.env;
    const child = spawnCli(['events', '--follow', '--sandbox', 'evt-follow', '--since', since, '--json'], { ...env, SANDBOXPLANE_PRINCIPAL: 'agent-events' });
    try {
      const before = await waitForOutput(child, /sandbox\.ready/, 60_000);
      assert.deepEqual(
        eventLines(before).map((e) => e.kind),
        ['sandbox.requested', 'sandbox.ready'],
      );
      // Past the first read: the follower now waits in a read of its own for what comes next.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const destroyedAt = Date.now();
      const destroying = worker.sandboxes.destroy('evt-follow', { actor: 'ops-bob' });
      const seen = await waitForOutput(child, /sandbox\.destroyed/, 30_000);
      await destroying;
      const destroyed = eventLines(seen).find((e) => e.kind === 'sandbox.destroyed');
      assert.equal(destroyed?.reason, 'operator');
      assert.ok(Date.now() - destroyedAt < 15_000, 'heard within seconds, not at the end of a 20 s wait');
    } finally {
      await stopChild(child);
    }
  });

  test('a bad --since is INVALID_INPUT naming the flag and the forms it takes', async () => {
    const bad = cliFailure(await as(undefined, 'events', '--since', 'yesterday', '--json'), 2, 'INVALID_INPUT');
    assert.match(bad.message, /--since must be an ISO 8601 time .* or a duration ago \(90s, 10m, 2h, 1d\), got 'yesterday'/);
    cliFailure(await as(undefined, 'events', '--since', '2026-13-45T00:00:00Z', '--json'), 2, 'INVALID_INPUT');
    cliFailure(await as(undefined, 'events', '--sandbox', 'Not An Id', '--json'), 2, 'INVALID_INPUT');
  });
});
