import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { IacStackClaim } from '../../src/domain/iac/iac-run';
import { IacStackLocks } from '../../src/workflows/iac-stack-locks';

const claim = (runId: string, stack = 'app', leaseUntilMs = 10_000): IacStackClaim => ({ runId, stack, principal: 'agent', leaseUntilMs });

test('one run at a time per stack: others wait in order, and each release hands the stack to the next', () => {
  const locks = new IacStackLocks();
  assert.deepEqual(locks.claim(claim('a'), 0), { granted: true });
  assert.deepEqual(locks.claim(claim('b'), 0), { granted: false, behind: claim('a') });
  assert.deepEqual(locks.claim(claim('c'), 0), { granted: false, behind: claim('a') });
  assert.deepEqual(locks.claim(claim('x', 'other'), 0), { granted: true }, 'another stack is free');
  assert.deepEqual(locks.claim(claim('a'), 0), { granted: true }, 'the holder claiming again keeps it');
  assert.deepEqual(locks.release('a', 'app', 0), claim('b'));
  assert.deepEqual(locks.release('b', 'app', 0), claim('c'));
  assert.equal(locks.release('c', 'app', 0), undefined);
  assert.deepEqual(locks.claim(claim('d'), 0), { granted: true }, 'free again');
});

test('a holder whose lease ran out loses the stack to the first waiter whose lease still runs', () => {
  const locks = new IacStackLocks();
  locks.claim(claim('dead', 'app', 100), 0);
  locks.claim(claim('late', 'app', 150), 0);
  locks.claim(claim('next', 'app', 10_000), 0);
  assert.deepEqual(locks.claim(claim('next', 'app', 10_000), 200), { granted: true }, 'claiming again after the lease ends takes the stack');
  assert.deepEqual(locks.claim(claim('late', 'app', 150), 200), { granted: false, behind: claim('next', 'app', 10_000) }, 'an expired waiter queues again behind');
});

test('a waiter that gives up leaves the line; draining forgets and returns every run', () => {
  const locks = new IacStackLocks();
  locks.claim(claim('a'), 0);
  locks.claim(claim('b'), 0);
  locks.claim(claim('c'), 0);
  assert.equal(locks.release('b', 'app', 0), undefined, 'a waiter leaving hands nothing on');
  assert.deepEqual(locks.release('a', 'app', 0), claim('c'));
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

test('what a lifecycle carries to its next run restores the same turns', () => {
  const locks = new IacStackLocks();
  locks.claim(claim('a'), 0);
  locks.claim(claim('b'), 0);
  const next = new IacStackLocks(JSON.parse(JSON.stringify(locks.carried())));
  assert.deepEqual(next.claim(claim('c'), 0), { granted: false, behind: claim('a') });
  assert.deepEqual(next.release('a', 'app', 0), claim('b'));
});

test('a flood of waiters is refused past the limit instead of growing the lifecycle without end', () => {
  const locks = new IacStackLocks();
  locks.claim(claim('holder'), 0);
  for (let i = 0; i < 50; i += 1) assert.equal('granted' in locks.claim(claim(`w${i}`), 0), true);
  assert.deepEqual(locks.claim(claim('one-too-many'), 0), { full: true });
});
