/**
 * The broker against the real engine at DOCKER_HOST (scripts/docker-engine.sh) with the
 * offline test image (scripts/build-test-image.sh).
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type Docker from 'dockerode';
import { SANDBOX_ID_LABEL, sandboxContainerLabels } from '../../src/domain/docker-labels';
import { isSandboxPlaneError, type SandboxPlaneError } from '../../src/domain/errors';
import { DockerContainerBroker, stopAndRemove, type BrokerLogger, type ContainerSpecInput } from '../../src/docker';
import {
  MIB,
  TEST_IMAGE,
  TEST_LOG_LIMITS,
  engineDocker,
  httpGet,
  removeSandboxContainers,
  requireEngineAndImage,
  sandboxNetworks,
  spyOnDocker,
  uniqueSandboxId,
} from './docker-test-support';

interface LogLine {
  readonly level: 'info' | 'warn' | 'debug';
  readonly obj: Record<string, unknown>;
  readonly msg: string;
}

function recordingLogger(lines: LogLine[]): BrokerLogger {
  return {
    info: (obj, msg) => lines.push({ level: 'info', obj: obj as Record<string, unknown>, msg }),
    warn: (obj, msg) => lines.push({ level: 'warn', obj: obj as Record<string, unknown>, msg }),
    debug: (obj, msg) => lines.push({ level: 'debug', obj: obj as Record<string, unknown>, msg }),
  };
}

async function rejection(promise: Promise<unknown>): Promise<SandboxPlaneError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(isSandboxPlaneError(err), `expected a taxonomy error, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a rejection');
}

describe('DockerContainerBroker on a real engine', () => {
  const docker: Docker = engineDocker();
  const sandboxId = uniqueSandboxId('engine');
  const logs: LogLine[] = [];
  const scratch = mkdtempSync(path.join(tmpdir(), 'sandboxplane-broker-'));
  let imageId = '';
  let broker: DockerContainerBroker;

  const spec = (overrides: Partial<ContainerSpecInput> = {}): ContainerSpecInput => ({
    image: imageId,
    labels: { ...sandboxContainerLabels(sandboxId, 'testhttp') },
    limits: { memoryBytes: 64 * MIB, pidsLimit: 32, nanoCpus: 500_000_000, ...TEST_LOG_LIMITS },
    ports: [{ containerPort: 8080, hostPort: 0 }],
    ...overrides,
  });

  before(async () => {
    imageId = await requireEngineAndImage(docker);
    broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST, logger: recordingLogger(logs), imageAllowlist: [TEST_IMAGE] });
  });

  after(async () => {
    await removeSandboxContainers(docker, sandboxId);
    rmSync(scratch, { recursive: true, force: true });
  });

  test('ping names the engine version and where it answered', async () => {
    const engine = await broker.ping();
    assert.match(engine.version, /^\d+\.\d+/);
    assert.equal(engine.endpoint, process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock');
  });

  test('run → inspect → HTTP → list → stop → remove → list empty', async () => {
    const started = await broker.run(spec({ name: `sbp-${sandboxId}` }));
    assert.equal(started.state, 'running');
    assert.equal(started.name, `sbp-${sandboxId}`);

    const info = await broker.inspect(started.id);
    assert.equal(info.state, 'running');
    assert.equal(info.imageId, imageId);
    assert.deepEqual(info.labels, sandboxContainerLabels(sandboxId, 'testhttp'));
    assert.deepEqual(info.limits, { memoryBytes: 64 * MIB, pidsLimit: 32 });
    assert.equal(info.ports.length, 1);
    const [port] = info.ports;
    assert.equal(port?.containerPort, 8080);
    assert.equal(port?.hostIp, '127.0.0.1');
    assert.ok(port?.hostPort !== undefined && port.hostPort > 0, 'the engine assigned a host port');

    // What the engine was actually told, read past the broker.
    const raw = (await docker.getContainer(started.id).inspect()) as unknown as {
      HostConfig: {
        Privileged: boolean;
        CapAdd: string[] | null;
        SecurityOpt: string[] | null;
        RestartPolicy: { Name: string };
        PidsLimit: number;
        LogConfig: { Type: string; Config: Record<string, string> };
      };
    };
    assert.equal(raw.HostConfig.Privileged, false);
    assert.deepEqual(raw.HostConfig.LogConfig, { Type: 'json-file', Config: { 'max-size': String(MIB), 'max-file': '2' } }, 'the log is bounded: 2 MiB in 2 files');
    assert.deepEqual(raw.HostConfig.CapAdd ?? [], []);
    assert.deepEqual(raw.HostConfig.SecurityOpt, ['no-new-privileges']);
    assert.equal(raw.HostConfig.RestartPolicy.Name, 'no');

    const response = await httpGet(`http://127.0.0.1:${port.hostPort}/index.html`);
    assert.equal(response.status, 200);
    assert.equal(response.body, 'sandboxplane-testhttp ok\n');

    const listed = await broker.list({ [SANDBOX_ID_LABEL]: sandboxId });
    assert.deepEqual(
      listed.map((entry) => [entry.id, entry.state, entry.name]),
      [[started.id, 'running', `sbp-${sandboxId}`]],
    );
    assert.equal(listed[0]?.ports[0]?.hostIp, '127.0.0.1');

    assert.equal(await broker.stop(started.id, { timeoutSeconds: 1 }), 'stopped');
    assert.equal((await broker.inspect(started.id)).state, 'exited');
    assert.equal(await broker.stop(started.id), 'already_stopped');
    assert.ok(
      logs.some((line) => line.msg.includes('already stopped') && line.obj.containerId === started.id),
      'the absorbed stop is logged',
    );

    assert.equal(await broker.remove(started.id), 'removed');
    assert.equal(await broker.remove(started.id), 'already_gone');
    assert.ok(
      logs.some((line) => line.msg.includes('already gone') && line.obj.containerId === started.id),
      'the absorbed remove is logged',
    );
    assert.equal((await rejection(broker.inspect(started.id))).code, 'CONTAINER_NOT_FOUND');
    assert.deepEqual(await broker.list({ [SANDBOX_ID_LABEL]: sandboxId }), []);

    for (const operation of ['create', 'start', 'stop', 'remove']) {
      assert.ok(logs.some((line) => line.msg === `docker ${operation}`) && logs.some((line) => line.msg === `docker ${operation} done`), `${operation} is logged before and after`);
    }
    assert.ok(
      logs.some((line) => line.msg === 'docker remove' && line.obj.containerId === started.id),
      'logs carry the container id',
    );
  });

  test('engine-assigned ports of two containers do not collide, and both serve', async () => {
    const [first, second] = await Promise.all([broker.run(spec()), broker.run(spec())]);
    assert.ok(first && second);
    const ports = [first.ports[0]?.hostPort, second.ports[0]?.hostPort];
    assert.ok(
      ports.every((port) => typeof port === 'number' && port > 0),
      `ports ${ports.join(', ')}`,
    );
    assert.notEqual(ports[0], ports[1]);
    for (const port of ports) assert.equal((await httpGet(`http://127.0.0.1:${port}/`)).status, 200);
    await Promise.all([broker.remove(first.id), broker.remove(second.id)]);
  });

  test('an allowlisted tag runs, and a bind reaches the container read-only', async () => {
    const www = path.join(scratch, 'www');
    mkdirSync(www);
    chmodSync(scratch, 0o755);
    writeFileSync(path.join(www, 'index.html'), 'from the bind\n');
    const info = await broker.run(spec({ image: TEST_IMAGE, binds: [`${www}/:/www:ro`] }));
    const response = await httpGet(`http://127.0.0.1:${info.ports[0]?.hostPort}/index.html`);
    assert.equal(response.body, 'from the bind\n');
    await broker.remove(info.id);
  });

  test('a retried run with the same name returns the same container', async () => {
    const name = `sbp-${sandboxId}-retry`;
    const first = await broker.run(spec({ name }));
    const second = await broker.run(spec({ name }));
    assert.equal(second.id, first.id);
    assert.equal(second.state, 'running');
    assert.equal((await broker.list({ [SANDBOX_ID_LABEL]: sandboxId })).filter((entry) => entry.name === name).length, 1);

    const other = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
    const conflict = await rejection(other.run({ ...spec({ name }), labels: { ...sandboxContainerLabels(`${sandboxId}-other`, 'testhttp') } }));
    assert.equal(conflict.code, 'CONTAINER_CONFLICT');
    assert.deepEqual(await sandboxNetworks(docker, `${sandboxId}-other`), [], 'the refused run took its network away again');
    await broker.remove(first.id);
  });

  test('each container gets a sealed network of its own, which goes when the container goes (DESIGN §12)', async () => {
    const owner = `${sandboxId}-sealed`;
    const info = await broker.run({ ...spec(), labels: { ...sandboxContainerLabels(owner, 'testhttp') } });
    try {
      const raw = (await docker.getContainer(info.id).inspect()) as {
        HostConfig: { CapDrop: string[] | null; NanoCpus: number; SecurityOpt: string[] | null; NetworkMode: string };
      };
      assert.deepEqual(raw.HostConfig.CapDrop, ['ALL']);
      assert.equal(raw.HostConfig.NanoCpus, 500_000_000);
      assert.deepEqual(raw.HostConfig.SecurityOpt, ['no-new-privileges']);
      const [network] = await sandboxNetworks(docker, owner);
      assert.ok(network !== undefined, 'a network labelled for the sandbox');
      assert.deepEqual(Object.keys(info.networks), [network.Name], 'on its own network only, never the default bridge');
      const settings = (await docker.getNetwork(network.Id).inspect()) as { Internal: boolean; Options: Record<string, string> };
      assert.equal(settings.Options['com.docker.network.bridge.enable_icc'], 'false');
      assert.equal(settings.Options['com.docker.network.bridge.enable_ip_masquerade'], 'false');
      assert.equal((await httpGet(`http://127.0.0.1:${info.ports[0]?.hostPort}/`)).status, 200, 'its loopback port still serves');
      assert.equal(await broker.remove(info.id), 'removed');
      assert.deepEqual(await sandboxNetworks(docker, owner), [], 'no network left behind');
    } finally {
      await removeSandboxContainers(docker, owner);
    }
  });

  test('removing a container that never started removes its network too (the engine names it without an id then)', async () => {
    const owner = `${sandboxId}-created`;
    const labels = { ...sandboxContainerLabels(owner, 'testhttp') };
    const network = await docker.createNetwork({ Name: `sandboxplane-net-${owner}`, Labels: labels });
    const created = await docker.createContainer({ Image: imageId, Labels: labels, HostConfig: { NetworkMode: `sandboxplane-net-${owner}` } });
    try {
      assert.deepEqual((await broker.inspect(created.id)).networks, { [`sandboxplane-net-${owner}`]: '' });
      assert.equal(await broker.remove(created.id), 'removed');
      await assert.rejects(docker.getNetwork(network.id).inspect(), { statusCode: 404 });
    } finally {
      await removeSandboxContainers(docker, owner);
    }
  });

  test('two removers at once (a teardown and the sweep): the network goes, whichever of them finds the container gone', async () => {
    const owner = `${sandboxId}-twice`;
    const info = await broker.run({ ...spec(), labels: { ...sandboxContainerLabels(owner, 'testhttp') } });
    try {
      const outcomes = await Promise.all([broker.remove(info.id), broker.remove(info.id), stopAndRemove(broker, info.id)]);
      assert.ok(outcomes.includes('removed'), JSON.stringify(outcomes));
      assert.deepEqual(await sandboxNetworks(docker, owner), []);
    } finally {
      await removeSandboxContainers(docker, owner);
    }
  });

  test('a missing image is DOCKER_IMAGE_MISSING, not retryable, and leaves nothing behind', async () => {
    const missing = 'local/sandboxplane-missing:0';
    const refusing = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST, imageAllowlist: [missing] });
    const err = await rejection(refusing.run(spec({ image: missing })));
    assert.equal(err.code, 'DOCKER_IMAGE_MISSING');
    assert.equal(err.retryable, false);
    assert.match(err.message, /local\/sandboxplane-missing:0/);
    assert.deepEqual(await broker.list({ [SANDBOX_ID_LABEL]: sandboxId }), []);
    assert.deepEqual(await sandboxNetworks(docker, sandboxId), [], 'nor a network');
  });

  test('containers not managed by us are invisible and untouchable', async () => {
    const foreign = await docker.createContainer({ Image: imageId, Labels: { [SANDBOX_ID_LABEL]: sandboxId } });
    try {
      assert.deepEqual(await broker.list({ [SANDBOX_ID_LABEL]: sandboxId }), []);
      for (const attempt of [() => broker.inspect(foreign.id), () => broker.stop(foreign.id), () => broker.remove(foreign.id)]) {
        const err = await rejection(attempt());
        assert.equal(err.code, 'CONTAINER_NOT_FOUND');
        assert.match(err.message, /not managed by cloud-sandbox-plane/);
      }
      assert.equal(((await foreign.inspect()) as { Id: string }).Id, foreign.id, 'the foreign container is still there');
    } finally {
      await foreign.remove({ force: true });
    }
  });

  test('a bind through a symbolic link to /etc is refused before any engine call', async () => {
    const link = path.join(scratch, 'innocent');
    symlinkSync('/etc', link);
    const spy = spyOnDocker(engineDocker());
    const spied = new DockerContainerBroker({ docker: spy.docker, imageAllowlist: [TEST_IMAGE] });
    const err = await rejection(spied.run(spec({ binds: [`${link}/ssh:/mnt/ssh:ro`] })));
    assert.equal(err.code, 'SPEC_BIND_FORBIDDEN');
    assert.equal(err.message, `binds[0]: source ${link}/ssh resolves to /etc/ssh: source /etc/ssh is inside the forbidden path /etc`);
    assert.deepEqual(spy.calls, []);
  });

  test('a container that cannot start is removed again', async () => {
    const err = await rejection(broker.run(spec({ command: ['/no/such/program'] })));
    assert.ok(['DOCKER_REQUEST_REJECTED', 'DOCKER_ENGINE_ERROR'].includes(err.code), err.code);
    assert.match(err.message, /no\/such\/program/);
    assert.deepEqual(await broker.list({ [SANDBOX_ID_LABEL]: sandboxId }), []);
  });

  test('a bind source that does not exist is rejected, not created on the host', async () => {
    const missing = path.join(scratch, 'missing', 'dir');
    const err = await rejection(broker.run(spec({ binds: [`${missing}:/data`] })));
    assert.equal(err.code, 'DOCKER_REQUEST_REJECTED');
    assert.equal(err.retryable, false);
    assert.equal(existsSync(path.join(scratch, 'missing')), false);
  });

  test('stopAndRemove tears a running container down, and a second teardown finds it gone', async () => {
    const started = await broker.run(spec({ name: `sbp-teardown-${sandboxId}` }));
    const lines: LogLine[] = [];
    assert.deepEqual(await stopAndRemove(broker, started.id, { timeoutSeconds: 1, logger: recordingLogger(lines) }), { stop: 'stopped', remove: 'removed' });
    assert.equal((await rejection(broker.inspect(started.id))).code, 'CONTAINER_NOT_FOUND');
    assert.deepEqual(await stopAndRemove(broker, started.id, { logger: recordingLogger(lines) }), { stop: 'already_gone', remove: 'already_gone' });
    assert.ok(lines.some((line) => line.msg === 'stop absorbed: container already gone' && line.obj.containerId === started.id));
  });

  test('stop of a missing container is CONTAINER_NOT_FOUND', async () => {
    const err = await rejection(broker.stop('0'.repeat(64)));
    assert.equal(err.code, 'CONTAINER_NOT_FOUND');
    assert.equal(err.retryable, false);
  });
});

describe('DockerContainerBroker with a dead engine', () => {
  const scratch = mkdtempSync(path.join(tmpdir(), 'sandboxplane-dead-'));
  after(() => rmSync(scratch, { recursive: true, force: true }));

  async function assertUnreachable(dockerHost: string, errno: string): Promise<void> {
    const broker = new DockerContainerBroker({ dockerHost });
    for (const attempt of [() => broker.list({}), () => broker.inspect('abc'), () => broker.remove('abc'), () => broker.ping()]) {
      const err = await rejection(attempt());
      assert.equal(err.code, 'DOCKER_UNREACHABLE');
      assert.equal(err.retryable, true);
      assert.equal(err.details.errno, errno);
      assert.ok(err.message.includes(dockerHost), `message names ${dockerHost}: ${err.message}`);
    }
  }

  test('DOCKER_HOST at a socket that does not exist', async () => {
    await assertUnreachable(`unix://${scratch}/missing.sock`, 'ENOENT');
  });

  test('DOCKER_HOST at a socket nobody listens on', async () => {
    const socket = path.join(scratch, 'dead.sock');
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(socket, resolve));
    // Closing unlinks the socket; a stale file is what a crashed engine leaves, so recreate one.
    await new Promise<void>((resolve) => server.close(() => resolve()));
    writeFileSync(socket, '');
    await assertUnreachable(`unix://${socket}`, 'ECONNREFUSED');
  });

  test('DOCKER_HOST at a TCP port nobody listens on', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await assertUnreachable(`tcp://127.0.0.1:${port}`, 'ECONNREFUSED');
  });
});
