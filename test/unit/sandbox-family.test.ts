import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { firstFailure, forkMany, type FamilyOutcome } from '../../src/client/sandbox-family';
import { clampToRoot } from '../../src/domain/lifecycle-record';
import { SandboxPlaneError } from '../../src/domain/errors';
import type { SandboxStatus } from '../../src/domain/lifecycle-messages';

const status = (id: string, state: SandboxStatus['state'], error: SandboxStatus['error'] = null) => ({ id, state, error }) as SandboxStatus;

describe('a fork never outlives its root', () => {
  test('an expiry past the live root is moved to the root; one before it, or with the root ended, stays', () => {
    assert.deepEqual(clampToRoot(2_000, 1_500), { expiresAtMs: 1_500, clamped: true });
    assert.deepEqual(clampToRoot(1_000, 1_500), { expiresAtMs: 1_000, clamped: false });
    assert.deepEqual(clampToRoot(2_000, null), { expiresAtMs: 2_000, clamped: false });
  });
});

describe('fork many', () => {
  test('every fork gets an id of its own and an outcome of its own: a refusal of one does not hide the others', async () => {
    let next = 0;
    const result = await forkMany(
      {
        createOne: async (id) => {
          if (id === 'sbx-2') throw new SandboxPlaneError('WAIT_TIMEOUT', 'gave up waiting');
          return status(id, id === 'sbx-3' ? 'DENIED' : 'READY', id === 'sbx-3' ? { code: 'QUOTA_EXCEEDED', message: 'over' } : null);
        },
        get: async () => undefined,
      },
      3,
      5,
      () => `sbx-${(next += 1)}`,
    );
    assert.deepEqual(
      result.sandboxes.map((outcome) => ('state' in outcome ? `${outcome.id} ${outcome.state}` : `${outcome.id} ${outcome.error.code}`)),
      ['sbx-1 READY', 'sbx-2 WAIT_TIMEOUT', 'sbx-3 DENIED'],
    );
    const failure = firstFailure(result.sandboxes, 'forks');
    assert.equal(failure?.code, 'WAIT_TIMEOUT');
    assert.match(failure?.message ?? '', /^2 of 3 forks failed; sbx-2: gave up waiting/);
  });

  test("a failure that is not the plane's own (a lost connection) is one fork's outcome too: the others are still told", async () => {
    const result = await forkMany(
      { createOne: async (id) => (id === 'sbx-a' ? status(id, 'READY') : Promise.reject(new Error('socket hang up'))), get: async () => undefined },
      2,
      5,
      (() => {
        const ids = ['sbx-a', 'sbx-b'];
        return () => ids.shift() as string;
      })(),
    );
    assert.equal((result.sandboxes[0] as SandboxStatus).state, 'READY');
    assert.ok('error' in (result.sandboxes[1] as object) && !('state' in (result.sandboxes[1] as object)));
  });

  test('past the limit nothing is asked for', async () => {
    await assert.rejects(
      forkMany({ createOne: () => assert.fail('a fork was made'), get: async () => undefined }, 6, 5, () => 'sbx-x'),
      (err: unknown) => err instanceof SandboxPlaneError && err.code === 'INVALID_INPUT' && /at most 5 \(SANDBOXPLANE_FORK_MAX\)/.test(err.message),
    );
  });

  test("a tree's teardown fails only for what it could not do: members that had ended before (DENIED) are no failure", () => {
    const tree: FamilyOutcome[] = [status('root', 'DESTROYED'), status('sbx-1', 'DENIED', { code: 'QUOTA_EXCEEDED', message: 'over' }), status('sbx-2', 'DESTROYED')];
    assert.equal(firstFailure(tree, 'teardowns', { acted: true }), undefined);
    assert.equal(firstFailure([...tree, { id: 'sbx-3', error: { code: 'TEMPORAL_UNREACHABLE', message: 'down' } }], 'teardowns', { acted: true })?.code, 'TEMPORAL_UNREACHABLE');
    assert.equal(firstFailure([...tree, status('sbx-4', 'DESTROY_FAILED', { code: 'DESTROY_FAILED', message: 'stuck' })], 'teardowns', { acted: true })?.code, 'DESTROY_FAILED');
  });
});
