import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { IacStackClaim } from '../../src/domain/iac/iac-run';
import { IacStackLocks } from '../../src/workflows/iac-stack-locks';

// Each run its own principal unless a test says otherwise: one principal's share of a stack's line is bounded.
const claim = (runId: string, stack = 'app', leaseMs = 10_000, principal = `agent-${runId}`): IacStackClaim => ({ runId, stack, principal, leaseMs, services: ['sqs'] });
const holder = (runId: string, grantedAtMs: number, stack = 'app', leaseMs = 10_000) => ({ ...claim(runId, stack, leaseMs), leaseUntilMs: grantedAtMs + leaseMs });

test('one run at a time per stack: others wait in order, and each release hands the stack to the next', () => {
  const locks = new IacStackLocks();
  assert.deepEqual(locks.claim(claim('a'), 0), { granted: true });
  assert.deepEqual(locks.claim(claim('b'), 0), { granted: false, behind: holder('a', 0) });
  assert.deepEqual(locks.claim(claim('c'), 0), { granted: false, behind: holder('a', 0) });
  assert.deepEqual(locks.claim(claim('x', 'other'), 0), { granted: true }, 'another stack is free');
  assert.deepEqual(locks.claim(claim('a'), 0), { granted: true }, 'the holder claiming again keeps it');
  assert.deepEqual(locks.release('a', 'app', 5), holder('b', 5));
  assert.deepEqual(locks.release('b', 'app', 6), holder('c', 6));
  assert.equal(locks.release('c', 'app', 7), undefined);
  assert.deepEqual(locks.claim(claim('d'), 8), { granted: true }, 'free again');
});

test('a lease counts from the grant: a run that waited long still gets its whole lease', () => {
  const locks = new IacStackLocks();
  locks.claim(claim('first', 'app', 100), 0);
  locks.claim(claim('waited', 'app', 100), 0);
  assert.deepEqual(locks.release('first', 'app', 5_000), holder('waited', 5_000, 'app', 100));
  assert.equal(locks.nextExpiryMs, 5_100);
});

test('a holder whose lease ran out is passed over and named, so it can be told; the next waiter gets the stack', () => {
  const locks = new IacStackLocks();
  locks.claim(claim('dead', 'app', 100), 0);
  locks.claim(claim('next'), 10);
  assert.deepEqual(locks.claim(claim('late'), 200), {
    granted: false,
    behind: holder('next', 200),
    handover: { passedOver: holder('dead', 0, 'app', 100), next: holder('next', 200) },
  });
  assert.deepEqual(locks.claim(claim('next'), 300), { granted: true });
});

test("the keeper's timer passes over a dead holder even when nobody claims", () => {
  const locks = new IacStackLocks();
  locks.claim(claim('dead', 'app', 100), 0);
  locks.claim(claim('alone', 'other', 1_000), 0);
  assert.deepEqual(locks.expire(50), []);
  assert.deepEqual(locks.expire(150), [{ passedOver: holder('dead', 0, 'app', 100), next: undefined }]);
  assert.equal(locks.nextExpiryMs, 1_000);
  assert.deepEqual(locks.expire(2_000), [{ passedOver: holder('alone', 0, 'other', 1_000), next: undefined }]);
  assert.equal(locks.busy, false);
});

test('a waiter that gives up leaves the line; draining forgets and returns every run', () => {
  const locks = new IacStackLocks();
  locks.claim(claim('a'), 0);
  locks.claim(claim('b'), 0);
  locks.claim(claim('c'), 0);
  assert.equal(locks.release('b', 'app', 0), undefined, 'a waiter leaving hands nothing on');
  assert.deepEqual(locks.release('a', 'app', 0), holder('c', 0));
  locks.claim(claim('z', 'other'), 0);
  assert.deepEqual(
    locks
      .drain()
      .map((held) => held.runId)
      .sort(),
    ['c', 'z'],
  );
  assert.equal(locks.busy, false);
});

test('what a keeper carries to its next run restores the same turns', () => {
  const locks = new IacStackLocks();
  locks.claim(claim('a'), 0);
  locks.claim(claim('b'), 0);
  const next = new IacStackLocks(JSON.parse(JSON.stringify(locks.carried())));
  assert.deepEqual(next.claim(claim('c'), 0), { granted: false, behind: holder('a', 0) });
  assert.deepEqual(next.release('a', 'app', 0), holder('b', 0));
});

test('a flood of waiters is refused past the limit instead of growing the keeper without end', () => {
  const locks = new IacStackLocks();
  locks.claim(claim('holder'), 0);
  for (let i = 0; i < 50; i += 1) assert.equal('granted' in locks.claim(claim(`w${i}`), 0), true);
  assert.deepEqual(locks.claim(claim('one-too-many'), 0), { full: true });
});

test("one principal holds or waits for one stack at most three times: another principal's turn cannot be crowded out", () => {
  const locks = new IacStackLocks();
  locks.claim(claim('mine-1', 'app', 10_000, 'agent-greedy'), 0);
  assert.equal('granted' in locks.claim(claim('mine-2', 'app', 10_000, 'agent-greedy'), 0), true);
  assert.equal('granted' in locks.claim(claim('mine-3', 'app', 10_000, 'agent-greedy'), 0), true);
  assert.deepEqual(locks.claim(claim('mine-4', 'app', 10_000, 'agent-greedy'), 0), { full: true, principal: true });
  assert.equal('granted' in locks.claim(claim('yours', 'app', 10_000, 'agent-other'), 0), true, 'another principal still gets in line');
  assert.equal('granted' in locks.claim(claim('mine-5', 'other-stack', 10_000, 'agent-greedy'), 0), true, 'the bound is per stack');
});
