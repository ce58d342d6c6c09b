/**
 * Sealed sandboxes (DESIGN §12, docs/security.md "Sealed sandboxes") on a real dev
 * server, a real engine and real moto: two sandboxes each answer on their loopback port,
 * a process inside one cannot reach the other nor anything outside, the containers run
 * with no capabilities, no new privileges, a CPU limit and a user that is not root,
 * teardown and the sweep leave no network behind, the plane's cap on live sandboxes
 * refuses one more, and control characters in agent text never reach a reviewer.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { CLEANUP_WORKFLOW } from '../src/domain/contract-names';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, PLANE_LABEL, SANDBOX_ID_LABEL, sandboxNetworkName } from '../src/domain/docker-labels';
import { isPooledNetworkName, NETWORK_POOL_LABEL } from '../src/domain/network-pool';
import { SandboxPlaneError } from '../src/domain/errors';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import { engineDocker } from './docker/docker-test-support';
import { runCli } from './harness/cli';
import { testTemporalAddress } from './harness/test-temporal';
import { createTestNamespace } from './helpers/test-namespace';
import { startTestWorker, type TestWorker } from './harness/test-worker';

const motoImage = process.env.SANDBOXPLANE_MOTO_IMAGE;
const skip = motoImage === undefined && 'needs the moto image and the Docker engine (SANDBOXPLANE_MOTO_IMAGE, set by the test runner)';

/** What a reviewer would see move or vanish: erase the line, cursor up, a colour, a title, a bidi override, a newline. */
const HOSTILE_PURPOSE = 'load test\u001b[2K\u001b[1A\u001b[31m red\u001b]0;title\u0007 \u202eevil\u009b2J\nline two';
const CLEAN_PURPOSE = 'load test red evil line two';
const HOSTILE_REASON = 'done\u001b[2K\u001b[1A\r\u001b[8mhidden\u001b[0m';
const CLEAN_REASON = 'done hidden';

/** Connects from inside a container to each `host:port`; prints one verdict a line. */
const PROBE = `
import socket, sys
for target in sys.argv[1:]:
    host, port = target.rsplit(':', 1)
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect((host, int(port)))
        verdict = 'CONNECTED'
    except ConnectionRefusedError:
        verdict = 'REFUSED'
    except (socket.timeout, TimeoutError):
        verdict = 'TIMEOUT'
    except OSError as err:
        verdict = 'UNREACHABLE ' + str(err.errno)
    finally:
        s.close()
    print(target, verdict)
`;

/** Runs the probe with `docker` (`args` say where) and reads its verdicts: target → verdict. */
function probe(args: readonly string[], targets: readonly string[]): Record<string, string> {
  const out = execFileSync('docker', [...args, '-c', PROBE, ...targets], { encoding: 'utf8', timeout: 60_000 });
  return Object.fromEntries(
    out
      .trim()
      .split('\n')
      .map((line) => [line.split(' ')[0] ?? '', line.split(' ').slice(1).join(' ')]),
  );
}

/** Each target's verdict, from a python inside `container` (the moto image has one). */
const probeFrom = (container: string, targets: readonly string[]) => probe(['exec', container, 'python3'], targets);

/** The same probe from a plain container on the engine's default bridge: what an unsealed sandbox reached. */
const probeFromDefaultBridge = (image: string, targets: readonly string[]) => probe(['run', '--rm', '--network', 'bridge', '--entrypoint', 'python3', image], targets);

/** This machine's default gateway (from /proc/net/route), the nearest address outside it. */
function defaultGateway(): string | undefined {
  const lines = fs.readFileSync('/proc/net/route', 'utf8').trim().split('\n').slice(1);
  const route = lines.map((line) => line.split(/\s+/)).find((fields) => fields[1] === '00000000' && fields[2] !== '00000000');
  if (route?.[2] === undefined) return undefined;
  const hex = route[2];
  return [3, 2, 1, 0].map((byte) => parseInt(hex.slice(byte * 2, byte * 2 + 2), 16)).join('.');
}

interface RawInspect {
  Config: { User: string };
  HostConfig: {
    CapDrop: string[] | null;
    CapAdd: string[] | null;
    SecurityOpt: string[] | null;
    NanoCpus: number;
    Memory: number;
    PidsLimit: number;
    ReadonlyRootfs: boolean;
    Privileged: boolean;
    LogConfig: { Type: string; Config: Record<string, string> };
  };
  NetworkSettings: { Networks: Record<string, { IPAddress: string; Gateway: string; NetworkID: string }> };
}

describe('sealed sandboxes (real dev server, engine and moto)', { skip }, () => {
  const docker = engineDocker();
  let worker: TestWorker;
  let plane: string;
  let a: SandboxStatus;
  let b: SandboxStatus;
  /** The networks sealed-a and sealed-b were created on. */
  let sandboxNetworkIds: string[] = [];

  const planeNetworks = async () =>
    (await docker.listNetworks({ filters: { label: [`${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`, `${PLANE_LABEL}=${plane}`] } })) as Array<{
      Id: string;
      Name: string;
      Labels: Record<string, string>;
    }>;
  /** The plane's networks but the pre-made ones waiting in the host's pool (DESIGN §12), which stay until the worker stops. */
  const sandboxNetworks = async () => {
    const networks = await planeNetworks();
    const attached = new Set(
      (await docker.listContainers({ all: true, filters: { label: [`${PLANE_LABEL}=${plane}`] } })).flatMap((container) =>
        Object.values(container.NetworkSettings.Networks).map((network) => network.NetworkID),
      ),
    );
    return networks.filter((network) => network.Labels[NETWORK_POOL_LABEL] === undefined || attached.has(network.Id));
  };

  before(async () => {
    const address = await testTemporalAddress();
    // A namespace of its own is a plane of its own: the cap and the sweep see only this test's sandboxes.
    const namespace = await createTestNamespace(address, 'sealed');
    worker = await startTestWorker(address, {
      env: {
        TEMPORAL_NAMESPACE: namespace,
        SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1',
        SANDBOXPLANE_MOTO_IMAGE: motoImage as string,
        SANDBOXPLANE_HEALTH_INTERVAL: '1h',
        SANDBOXPLANE_MAX_SANDBOXES: '2',
        SANDBOXPLANE_PLACEMENT_WAIT: '2s',
        SANDBOXPLANE_CONTAINER_LOG_MAX: '6m',
        SANDBOXPLANE_CONTAINER_LOG_FILES: '3',
      },
    });
    plane = worker.plane.planeId;
    worker.store.policies.add({ principalPattern: '*', capability: 'cloud.sandbox', effect: 'allow' });
    [a, b] = await Promise.all([
      worker.sandboxes.create({ id: 'sealed-a', principal: 'agent-a', adapter: 'moto', services: ['s3'], purpose: HOSTILE_PURPOSE }, { wait: 'ready' }),
      worker.sandboxes.create({ id: 'sealed-b', principal: 'agent-b', adapter: 'moto', services: ['s3'] }, { wait: 'ready' }),
    ]);
    sandboxNetworkIds = (
      await Promise.all([a, b].map(async (status) => ((await docker.getContainer(status.runtimeIds[0] as string).inspect()) as RawInspect).NetworkSettings.Networks))
    ).flatMap((networks) => Object.values(networks).map((network) => network.NetworkID));
  });

  after(async () => {
    await worker?.stop();
    const containers = await docker.listContainers({ all: true, filters: { label: [`${PLANE_LABEL}=${plane}`] } });
    await Promise.all(containers.map((container) => docker.getContainer(container.Id).remove({ force: true })));
    for (const network of await planeNetworks())
      await docker
        .getNetwork(network.Id)
        .remove()
        .catch(() => undefined);
  });

  test('each endpoint answers from the host, on its own loopback port', async () => {
    assert.notEqual(a.endpoint, b.endpoint);
    for (const status of [a, b]) {
      assert.match(status.endpoint ?? '', /^http:\/\/127\.0\.0\.1:\d+$/);
      const answer = await fetch(`${status.endpoint}/moto-api/`, { signal: AbortSignal.timeout(10_000) });
      await answer.arrayBuffer();
      // moto answers; its own API is kept to the plane's operator path (docs/security.md#per-sandbox-credentials).
      assert.equal(answer.status, 403, `${status.id} serves at ${status.endpoint}`);
    }
  });

  test("inside sandbox A nothing answers but A itself: not B's container, not B's port through the gateway, not the outside", async (t) => {
    const [aId] = a.runtimeIds;
    const [bId] = b.runtimeIds;
    assert.ok(aId !== undefined && bId !== undefined);
    const aNet = Object.values(((await docker.getContainer(aId).inspect()) as RawInspect).NetworkSettings.Networks);
    const bNet = Object.values(((await docker.getContainer(bId).inspect()) as RawInspect).NetworkSettings.Networks);
    assert.equal(aNet.length, 1, 'one network');
    assert.equal(bNet.length, 1, 'one network');
    assert.notEqual(aNet[0]?.NetworkID, bNet[0]?.NetworkID, 'not the same network');
    const bIp = bNet[0]?.IPAddress ?? '';
    const aGateway = aNet[0]?.Gateway ?? '';
    const bPort = new URL(b.endpoint ?? '').port;
    const gateway = defaultGateway();
    const outside = ['1.1.1.1:53', '8.8.8.8:443', ...(gateway === undefined ? [] : [`${gateway}:53`])];
    const targets = ['127.0.0.1:5000', `${bIp}:5000`, `${aGateway}:${bPort}`, ...outside];

    const verdicts = probeFrom(aId, targets);
    assert.equal(verdicts['127.0.0.1:5000'], 'CONNECTED', 'the probe works: A reaches its own moto');
    assert.match(verdicts[`${bIp}:5000`] ?? '', /^(TIMEOUT|UNREACHABLE)/, `B's container (${bIp}) gives no answer at all`);
    assert.notEqual(verdicts[`${aGateway}:${bPort}`], 'CONNECTED', "B's published port is on the host's loopback only");
    for (const target of outside) {
      assert.match(verdicts[target] ?? '', /^(TIMEOUT|UNREACHABLE)/, `${target} gives no answer (no address translation out): ${verdicts[target]}`);
    }

    // What the same probe got from the engine's default bridge, where containers sat before.
    const control = probeFromDefaultBridge(motoImage as string, outside);
    const answered = outside.filter((target) => /^(CONNECTED|REFUSED)/.test(control[target] ?? ''));
    t.diagnostic(`from the default bridge: ${JSON.stringify(control)}`);
    if (answered.length === 0) t.diagnostic('this machine reaches nothing outside even unsealed: the outside part proves less here');
  });

  test('docker inspect: every capability dropped, no new privileges, CPU, memory, PID and log limits, user moto, a read-only root', async () => {
    for (const status of [a, b]) {
      const [id] = status.runtimeIds;
      const raw = (await docker.getContainer(id as string).inspect()) as RawInspect;
      assert.deepEqual(raw.HostConfig.CapDrop, ['ALL']);
      assert.ok((raw.HostConfig.CapAdd ?? []).length === 0);
      assert.deepEqual(raw.HostConfig.SecurityOpt, ['no-new-privileges']);
      assert.equal(raw.HostConfig.Privileged, false);
      assert.equal(raw.HostConfig.NanoCpus, 1_000_000_000);
      assert.equal(raw.HostConfig.Memory, 512 * 1024 * 1024);
      assert.equal(raw.HostConfig.PidsLimit, 256);
      assert.deepEqual(raw.HostConfig.LogConfig, { Type: 'json-file', Config: { 'max-size': String(2 * 1024 * 1024), 'max-file': '3' } }, 'SANDBOXPLANE_CONTAINER_LOG_MAX=6m in 3 files');
      assert.equal(raw.HostConfig.ReadonlyRootfs, true);
      assert.equal(raw.Config.User, '10001:10001');
      // Made at once from the host's full pool of two pre-made sealed networks: each took one of them (the other test above: never the same one).
      const networks = Object.keys(raw.NetworkSettings.Networks);
      assert.equal(networks.length, 1, 'one network');
      assert.ok(isPooledNetworkName(plane, networks[0] ?? ''), `a pooled network, got ${networks.join(', ')}`);
      assert.equal(execFileSync('docker', ['exec', id as string, 'id', '-u'], { encoding: 'utf8' }).trim(), '10001');
    }
  });

  test("the plane's cap: with two live sandboxes and a cap of two, a third is refused NO_CAPACITY and holds nothing", async () => {
    await assert.rejects(worker.sandboxes.create({ id: 'sealed-c', principal: 'agent-c', services: ['s3'] }, { wait: 'ready' }), (err: unknown) => {
      assert.ok(err instanceof SandboxPlaneError, String(err));
      assert.equal(err.code, 'NO_CAPACITY');
      assert.match(err.message, /the plane's cap of 2 live sandboxes is reached \(2 placed; SANDBOXPLANE_MAX_SANDBOXES\)/);
      return true;
    });
    const refused = await worker.sandboxes.status('sealed-c');
    assert.equal(refused.state, 'DENIED');
    assert.equal(refused.host, null);
  });

  test('control characters in the purpose and a destroy reason: cleaned in status JSON, sandboxctl status and audit', async () => {
    assert.equal(a.purpose, CLEAN_PURPOSE);
    const json = await runCli(['status', 'sealed-a', '--json'], worker.env);
    assert.equal(json.code, 0, json.stderr);
    assert.equal((JSON.parse(json.stdout) as SandboxStatus).purpose, CLEAN_PURPOSE);
    const text = await runCli(['status', 'sealed-a'], worker.env);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, new RegExp(`purpose +${CLEAN_PURPOSE}\\n`));

    await worker.sandboxes.destroy('sealed-b', { reason: HOSTILE_REASON });
    for (const id of ['sealed-a', 'sealed-b']) {
      const audit = await runCli(['audit', id], worker.env);
      assert.equal(audit.code, 0, audit.stderr);
      assert.doesNotMatch(audit.stdout, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202e]/, `no control character in the audit of ${id}`);
      assert.match(audit.stdout, id === 'sealed-a' ? new RegExp(CLEAN_PURPOSE) : new RegExp(CLEAN_REASON));
    }
    for (const output of [json.stdout, text.stdout]) assert.doesNotMatch(output, /\u001b|\u009b|\u202e/);
  });

  test('teardown leaves no network; the sweep removes a network no container uses', async () => {
    await worker.sandboxes.destroy('sealed-a');
    assert.deepEqual(await sandboxNetworks(), [], 'both sandboxes took their networks with them');
    for (const id of sandboxNetworkIds) await assert.rejects(docker.getNetwork(id).inspect(), { statusCode: 404 }, 'a pooled network goes with its sandbox, never back to the pool');

    // What a teardown that died between the container and its network leaves behind.
    const leaked = await docker.createNetwork({
      Name: sandboxNetworkName(plane, 'sealed-leak'),
      Labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [PLANE_LABEL]: plane, [SANDBOX_ID_LABEL]: 'sealed-leak' },
    });
    await worker.client.workflow.execute(CLEANUP_WORKFLOW, {
      taskQueue: worker.config.taskQueue,
      workflowId: `test-sweep-${randomUUID()}`,
      workflowExecutionTimeout: '2 minutes',
    });
    await assert.rejects(docker.getNetwork(leaked.id).inspect(), { statusCode: 404 }, 'the sweep removed the leaked network');
    assert.deepEqual(await sandboxNetworks(), []);
  });
});
