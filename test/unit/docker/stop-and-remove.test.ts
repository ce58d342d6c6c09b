/** The one teardown of a container, with brokers that fail on purpose (no engine needed). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SandboxPlaneError } from '../../../src/domain/errors';
import { stopAndRemove, type BrokerLogger, type ContainerBroker } from '../../../src/docker';

function broker(stop: ContainerBroker['stop'], removed: string[]): ContainerBroker {
  const unused = () => Promise.reject(new Error('not part of a teardown'));
  return {
    run: unused,
    inspect: unused,
    stats: unused,
    list: unused,
    ping: unused,
    engineId: unused,
    engineMemoryBytes: unused,
    rename: unused,
    listNetworks: unused,
    removeNetwork: unused,
    stop,
    remove: async (id) => {
      removed.push(id);
      return 'removed';
    },
  };
}

describe('stopAndRemove', () => {
  test('a container already gone when stopped is an outcome, logged, and removal still runs', async () => {
    const removed: string[] = [];
    const lines: string[] = [];
    const logger: BrokerLogger = { info: (_obj, msg) => lines.push(msg), warn: (_obj, msg) => lines.push(msg) };
    const gone = broker(() => Promise.reject(new SandboxPlaneError('CONTAINER_NOT_FOUND', 'No such container: c1')), removed);
    assert.deepEqual(await stopAndRemove(gone, 'c1', { logger }), { stop: 'already_gone', remove: 'removed' });
    assert.deepEqual(removed, ['c1']);
    assert.ok(lines.includes('stop absorbed: container already gone'));
  });

  test('any other stop failure propagates and nothing is removed', async () => {
    const removed: string[] = [];
    const busy = broker(() => Promise.reject(new SandboxPlaneError('DOCKER_ENGINE_ERROR', 'device or resource busy')), removed);
    await assert.rejects(stopAndRemove(busy, 'c2'), (err: unknown) => err instanceof SandboxPlaneError && err.code === 'DOCKER_ENGINE_ERROR');
    assert.deepEqual(removed, []);
  });
});
