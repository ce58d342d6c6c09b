/**
 * Every refusal happens before the engine sees anything: the broker runs over a spy
 * around a real dockerode client, and the spy must record zero calls.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sandboxContainerLabels } from '../../src/domain/docker-labels';
import { isSandboxPlaneError } from '../../src/domain/errors';
import { DockerContainerBroker, type ContainerSpecInput, type SpecRefusalCode } from '../../src/docker';
import { MIB, engineDocker, removeSandboxContainers, requireEngineAndImage, spyOnDocker, uniqueSandboxId, validSpec } from './docker-test-support';

const REFUSALS: ReadonlyArray<readonly [SpecRefusalCode, string, ContainerSpecInput | Record<string, unknown>]> = [
  ['SPEC_INVALID', 'unknown key', { ...validSpec(), HostConfig: { Privileged: true } }],
  ['SPEC_IMAGE_NOT_PINNED', 'floating tag', validSpec({ image: 'floci/floci:latest' })],
  ['SPEC_PRIVILEGED', 'privileged', validSpec({ privileged: true })],
  ['SPEC_CAPABILITY_ADDED', 'added capability', validSpec({ capAdd: ['SYS_ADMIN'] })],
  ['SPEC_HOST_NAMESPACE', 'host network', validSpec({ networkMode: 'host' })],
  ['SPEC_HOST_NAMESPACE', 'host PID', validSpec({ pidMode: 'host' })],
  ['SPEC_HOST_NAMESPACE', 'host IPC', validSpec({ ipcMode: 'host' })],
  ['SPEC_HOST_NAMESPACE', 'host UTS', validSpec({ utsMode: 'host' })],
  ['SPEC_DEVICES', 'device', validSpec({ devices: ['/dev/kvm'] })],
  ['SPEC_LIMITS_MISSING', 'no limits', validSpec({ limits: undefined })],
  ['SPEC_LIMITS_MISSING', 'unlimited PIDs', validSpec({ limits: { memoryBytes: 64 * MIB, pidsLimit: 0, nanoCpus: 1e9 } })],
  ['SPEC_LIMITS_MISSING', 'no CPU limit', validSpec({ limits: { memoryBytes: 64 * MIB, pidsLimit: 16 } })],
  ['SPEC_LIMITS_MISSING', 'no log limit', validSpec({ limits: { memoryBytes: 64 * MIB, pidsLimit: 16, nanoCpus: 1e9 } })],
  ['SPEC_NETWORK_NOT_SEALED', 'the default bridge', validSpec({ networkMode: 'bridge' })],
  ['SPEC_NETWORK_NOT_SEALED', 'no network', validSpec({ networkMode: 'none' })],
  ['SPEC_NETWORK_NOT_SEALED', "another sandbox's network", validSpec({ networkMode: 'sandboxplane-net-other' })],
  ['SPEC_CAPABILITIES_NOT_DROPPED', 'capabilities kept', validSpec({ capDrop: ['NET_RAW'] })],
  ['SPEC_RESTART_POLICY', 'restart always', validSpec({ restartPolicy: { name: 'always' } })],
  ['SPEC_LABELS_MISSING', 'no labels', validSpec({ labels: {} })],
  ['SPEC_PORT_INVALID', 'string port', validSpec({ ports: [{ containerPort: '8080' }] })],
  ['SPEC_PORT_NOT_LOOPBACK', 'all interfaces', validSpec({ ports: [{ containerPort: 8080, hostIp: '0.0.0.0' }] })],
  ['SPEC_BIND_FORBIDDEN', 'Docker socket', validSpec({ binds: ['/var/run/docker.sock:/var/run/docker.sock'] })],
  ['SPEC_BIND_FORBIDDEN', 'Windows profile', validSpec({ binds: ['C:\\Users\\me:/workspace'] })],
  ['SPEC_BIND_FORBIDDEN', 'engine pipe', validSpec({ binds: ['\\\\.\\pipe\\docker_engine:\\\\.\\pipe\\docker_engine'] })],
  ['SPEC_BIND_FORBIDDEN', 'host root via ..', validSpec({ binds: ['/srv/../:/host'] })],
];

describe('refusals never reach the engine', () => {
  const docker = engineDocker();
  const sandboxId = uniqueSandboxId('spy');
  let imageId = '';

  before(async () => {
    imageId = await requireEngineAndImage(docker);
  });

  after(async () => {
    await removeSandboxContainers(docker, sandboxId);
  });

  for (const [code, label, spec] of REFUSALS) {
    test(`${code}: ${label}`, async () => {
      const spy = spyOnDocker(engineDocker());
      const broker = new DockerContainerBroker({ docker: spy.docker });
      await assert.rejects(broker.run(spec as ContainerSpecInput), (err: unknown) => {
        assert.ok(isSandboxPlaneError(err));
        assert.equal(err.code, code);
        assert.equal(err.retryable, false);
        return true;
      });
      assert.deepEqual(spy.calls, [], 'no engine call was made');
    });
  }

  test('the spy does see the calls of an accepted spec', async () => {
    const spy = spyOnDocker(engineDocker());
    const broker = new DockerContainerBroker({ docker: spy.docker });
    const info = await broker.run({ ...validSpec({ image: imageId, ports: [] }), labels: { ...sandboxContainerLabels(sandboxId, 'testhttp') } });
    assert.deepEqual(spy.calls, ['listNetworks', 'createNetwork', 'createContainer', 'getContainer', 'getContainer().start', 'getContainer', 'getContainer().inspect']);
    assert.equal(info.state, 'running');
    await broker.remove(info.id);
    assert.deepEqual(await broker.listNetworks({ 'io.sandboxplane.sandbox-id': sandboxId }), [], 'its network went with it');
  });
});
