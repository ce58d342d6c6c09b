/**
 * A moto container started before the operator token moved into a header has the token
 * label and not `io.sandboxplane.operator-api`: its guard would answer the header 403.
 * That must read as "not known", never as a death (which would restart the sandbox and
 * lose its state). Against a broker that shows one running container.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OPERATOR_API_LABEL, OPERATOR_TOKEN_LABEL } from '../../src/adapters/container-emulator';
import { createMotoAdapter } from '../../src/adapters/moto-adapter';
import type { ContainerBroker, ContainerInfo } from '../../src/docker';
import { SandboxPlaneError } from '../../src/domain/errors';
import { sandboxContainerLabels } from '../../src/domain/docker-labels';
import { freePort } from '../harness/free-port';

function brokerShowing(labels: Record<string, string>, hostPort: number): ContainerBroker {
  const container: ContainerInfo = {
    id: 'c1',
    name: 'sandboxplane-legacy-1',
    image: 'sha256:moto',
    imageId: 'sha256:moto',
    state: 'running',
    labels: { ...sandboxContainerLabels('legacy-1', 'moto'), ...labels },
    // A port nothing listens on: a look that reaches the probe finds no emulator there.
    ports: [{ containerPort: 5000, protocol: 'tcp', hostIp: '127.0.0.1', hostPort }],
    createdAt: '2026-12-05T00:00:00Z',
    networks: {},
    exitCode: null,
    oomKilled: false,
    startedAt: '2026-12-05T00:00:00Z',
    finishedAt: null,
    limits: { memoryBytes: 512 * 1024 * 1024, pidsLimit: 256 },
  };
  return {
    list: async () => [container],
    inspect: async (id: string) => {
      if (id === 'c1') return container;
      throw new SandboxPlaneError('CONTAINER_NOT_FOUND', `no container ${id}`);
    },
  } as unknown as ContainerBroker;
}

test("a container from before the operator header: its health is not known (INVALID_STATE), not dead; one of this build's is probed", async () => {
  const port = await freePort();
  const legacy = createMotoAdapter({ broker: brokerShowing({ [OPERATOR_TOKEN_LABEL]: 'tok-5e3c' }, port), image: 'sha256:moto', healthTimeoutMs: 1_000 });
  await assert.rejects(legacy.health('legacy-1', null), (err: SandboxPlaneError) => err.code === 'INVALID_STATE' && /earlier build/.test(err.message) && !err.message.includes('tok-5e3c'));
  const current = createMotoAdapter({ broker: brokerShowing({ [OPERATOR_TOKEN_LABEL]: 'tok-5e3c', [OPERATOR_API_LABEL]: 'header' }, port), image: 'sha256:moto', healthTimeoutMs: 1_000 });
  // Probed: nothing listens on the port, so the look gets no answer: unhealthy (the looks that follow confirm it), not the label check's refusal.
  const probed = await current.health('legacy-1', null);
  assert.equal(probed.healthy, false);
  assert.notEqual(probed.certain, true, 'a container that runs is looked at again before it is called dead');
  assert.match(probed.detail, /its container runs, but the emulator does not answer \(.*fetch failed/);
});
