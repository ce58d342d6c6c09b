import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { StartSlots } from '../../src/adapters/start-slots';

const quiet = { heartbeat: () => undefined };
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('StartSlots: a host starts a bounded few emulators at once', () => {
  test('never more than its size at once; the rest start in arrival order as slots free', async () => {
    const slots = new StartSlots(2);
    let running = 0;
    let most = 0;
    const order: number[] = [];
    const gates = Array.from({ length: 6 }, () => {
      let resolve = () => {};
      const promise = new Promise<void>((done) => (resolve = done));
      return { promise, resolve };
    });
    const starts = gates.map(async (gate, index) => {
      const release = await slots.take(quiet);
      order.push(index);
      running += 1;
      most = Math.max(most, running);
      await gate.promise;
      running -= 1;
      release();
    });
    await tick();
    assert.deepEqual(order, [0, 1]);
    assert.deepEqual(slots.depth(), { running: 2, waiting: 4, size: 2 });
    for (const gate of gates) {
      gate.resolve();
      await tick();
    }
    await Promise.all(starts);
    assert.equal(most, 2);
    assert.deepEqual(order, [0, 1, 2, 3, 4, 5]);
    assert.deepEqual(slots.depth(), { running: 0, waiting: 0, size: 2 });
  });

  test('a freed slot goes to the first in the queue, not to a start that arrives just then', async () => {
    const slots = new StartSlots(1);
    const first = await slots.take(quiet);
    const queued = slots.take(quiet);
    first();
    const late = slots.take(quiet);
    const releaseQueued = await queued;
    assert.deepEqual(slots.depth(), { running: 1, waiting: 1, size: 1 }, 'the late start waits behind the queued one');
    releaseQueued();
    (await late)();
    assert.deepEqual(slots.depth(), { running: 0, waiting: 0, size: 1 });
  });

  test('a release called twice frees one slot', async () => {
    const slots = new StartSlots(1);
    const release = await slots.take(quiet);
    release();
    release();
    assert.deepEqual(slots.depth(), { running: 0, waiting: 0, size: 1 });
  });

  test('a start cancelled while it waits leaves the queue with the reason, and says it waited', async () => {
    const slots = new StartSlots(1);
    const held = await slots.take(quiet);
    const abort = new AbortController();
    const beats: unknown[] = [];
    const waiting = slots.take({ heartbeat: (details) => beats.push(details), cancelled: abort.signal });
    await tick();
    assert.deepEqual(beats, [{ step: 'waiting for a start slot', ahead: 0, running: 1 }]);
    abort.abort(new Error('activity cancelled'));
    await assert.rejects(waiting, /activity cancelled/);
    assert.deepEqual(slots.depth(), { running: 1, waiting: 0, size: 1 });
    held();
    assert.deepEqual(slots.depth(), { running: 0, waiting: 0, size: 1 }, 'the slot is not handed to the start that left');
  });

  test('a size below 1 is refused', () => {
    assert.throws(() => new StartSlots(0), RangeError);
  });
});
