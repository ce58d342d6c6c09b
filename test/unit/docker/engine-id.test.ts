/** The broker's engineId() and engineMemoryBytes(): `docker info`'s ID (with its name and data root) and MemTotal, checked with zod (no engine needed). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type Docker from 'dockerode';
import { SandboxPlaneError } from '../../../src/domain/errors';
import { DockerContainerBroker } from '../../../src/docker';
import { sameEngine } from '../../../src/domain/engine-identity';

function brokerAnswering(answers: unknown[]): { broker: DockerContainerBroker; calls: () => number } {
  let calls = 0;
  const docker = {
    modem: { socketPath: '/run/test.sock' },
    info: async () => {
      const answer = answers[Math.min(calls, answers.length - 1)];
      calls += 1;
      if (answer instanceof Error) throw answer;
      return answer;
    },
  } as unknown as Docker;
  return { broker: new DockerContainerBroker({ docker }), calls: () => calls };
}

describe('DockerContainerBroker.engineId', () => {
  test('returns the ID and asks the engine only once', async () => {
    const { broker, calls } = brokerAnswering([{ ID: 'BKIB:5XVY:RHIC', ServerVersion: '20.10' }]);
    assert.equal(await broker.engineId(), 'BKIB:5XVY:RHIC');
    assert.equal(await broker.engineId(), 'BKIB:5XVY:RHIC');
    assert.equal(calls(), 1);
  });

  test('an answer without an ID is DOCKER_RESPONSE_INVALID, naming the field', async () => {
    const { broker } = brokerAnswering([{ ServerVersion: '20.10' }]);
    await assert.rejects(broker.engineId(), (err: unknown) => err instanceof SandboxPlaneError && err.code === 'DOCKER_RESPONSE_INVALID' && /info answer.*ID/.test(err.message));
    const blank = brokerAnswering([{ ID: '  ' }]).broker;
    await assert.rejects(blank.engineId(), (err: unknown) => err instanceof SandboxPlaneError && err.code === 'DOCKER_RESPONSE_INVALID');
  });

  test('a failed read is not remembered: the next call asks again', async () => {
    const { broker, calls } = brokerAnswering([Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), { ID: 'E1' }]);
    await assert.rejects(broker.engineId(), (err: unknown) => err instanceof SandboxPlaneError && err.code === 'DOCKER_UNREACHABLE' && err.retryable);
    assert.equal(await broker.engineId(), 'E1');
    assert.equal(calls(), 2);
  });

  test('engines that share a docker ID (one key.json) are told apart by name and data root; ids recorded bare still match', async () => {
    const a = await brokerAnswering([{ ID: 'K:E:Y', Name: 'vm', DockerRootDir: '/var/lib/docker' }]).broker.engineId();
    const b = await brokerAnswering([{ ID: 'K:E:Y', Name: 'vm', DockerRootDir: '/tmp/engine-b/data' }]).broker.engineId();
    assert.match(a, /^K:E:Y\/[0-9a-f]{12}$/);
    assert.notEqual(a, b);
    assert.equal(sameEngine(a, b), false);
    assert.equal(sameEngine(a, a), true);
    assert.equal(sameEngine('K:E:Y', a), true, 'a sandbox recorded before the suffix existed is still on its engine');
    assert.equal(sameEngine('OTHER', a), false);
  });
});

describe('DockerContainerBroker.engineMemoryBytes', () => {
  test("is docker info's MemTotal; an answer without a positive whole MemTotal is DOCKER_RESPONSE_INVALID naming it", async () => {
    assert.equal(await brokerAnswering([{ ID: 'E1', MemTotal: 25_276_194_816 }]).broker.engineMemoryBytes(), 25_276_194_816);
    for (const answer of [{ ID: 'E1' }, { ID: 'E1', MemTotal: 0 }, { ID: 'E1', MemTotal: '8g' }, { ID: 'E1', MemTotal: 1.5 }]) {
      await assert.rejects(
        brokerAnswering([answer]).broker.engineMemoryBytes(),
        (err: unknown) => err instanceof SandboxPlaneError && err.code === 'DOCKER_RESPONSE_INVALID' && /info answer.*MemTotal/.test(err.message),
        JSON.stringify(answer),
      );
    }
  });
});
