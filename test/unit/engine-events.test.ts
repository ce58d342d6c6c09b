/** Following the engine's event stream (docker/engine-events.ts) with a fake engine: lines, filters, breaks and `since`. */
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { followContainerEvents, type ContainerEvent, type EventSource } from '../../src/docker/engine-events';

const line = (action: string, id: string, time: number) => `${JSON.stringify({ Type: 'container', Action: action, Actor: { ID: id, Attributes: { name: `c-${id}` } }, time })}\n`;

test('events are read line by line (split anywhere), bad lines skipped; after a break the stream is asked again from the last second seen', async () => {
  const asked: { since: number; filters: Record<string, string[]> }[] = [];
  const streams = [
    // The first connection: an event split across chunks, a line that is not JSON, one of another type, then the engine goes away.
    () =>
      Readable.from([
        line('die', 'a', 100).slice(0, 20),
        line('die', 'a', 100).slice(20),
        'not json\n',
        `${JSON.stringify({ Type: 'network', Action: 'die', Actor: { ID: 'n' }, time: 101 })}\n`,
        line('oom', 'b', 105),
      ]),
    () => {
      throw new Error('engine restarting');
    },
    () => Readable.from([line('die', 'c', 107)]),
  ];
  const source: EventSource = {
    async events(options) {
      asked.push(options);
      const next = streams.shift();
      if (next === undefined) return new Readable({ read() {} });
      return next();
    },
  };
  const seen: ContainerEvent[] = [];
  const errors: number[] = [];
  let connected = 0;
  const follower = followContainerEvents({
    source,
    labels: ['io.sandboxplane.plane=p'],
    actions: ['die', 'oom'],
    onEvent: (event) => seen.push(event),
    onError: (_err, retryInMs) => errors.push(retryInMs),
    onConnected: () => (connected += 1),
    since: 90,
  });
  const deadline = Date.now() + 10_000;
  while (seen.length < 3 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  follower.stop();
  assert.deepEqual(
    seen.map((event) => [event.action, event.containerId, event.attributes.name, event.time]),
    [
      ['die', 'a', 'c-a', 100],
      ['oom', 'b', 'c-b', 105],
      ['die', 'c', 'c-c', 107],
    ],
  );
  assert.deepEqual(
    asked.map((options) => options.since),
    [90, 105, 105],
    'each reconnection asks from the last event seen',
  );
  assert.deepEqual(asked[0]?.filters, { type: ['container'], event: ['die', 'oom'], label: ['io.sandboxplane.plane=p'] });
  assert.deepEqual(errors, [1_000, 2_000, 1_000], 'a closed stream and a refused connection, retried with growing waits; a connection that worked starts the waits again');
  assert.ok(connected >= 2, `each connection that worked is announced (to look for deaths a restarted engine forgot): ${connected}`);
});
