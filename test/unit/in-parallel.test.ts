import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { inParallel } from '../../src/activities/in-parallel';

describe("inParallel (the sweep's bounded removals)", () => {
  test('never more than the limit at once, the limit reached, every item done, results in item order', async () => {
    let running = 0;
    let most = 0;
    const results = await inParallel([5, 1, 4, 2, 3, 1, 2], 3, async (ms) => {
      running += 1;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, ms));
      running -= 1;
      return ms * 10;
    });
    assert.equal(most, 3);
    assert.deepEqual(results, [50, 10, 40, 20, 30, 10, 20]);
  });

  test('no items, or fewer than the limit: no idle lanes, nothing waits', async () => {
    assert.deepEqual(await inParallel([], 8, async () => 1), []);
    assert.deepEqual(await inParallel(['a'], 8, async (item) => item.toUpperCase()), ['A']);
  });
});
