/**
 * Shared by the Docker broker tests: a valid base spec, the real engine from DOCKER_HOST,
 * a spy over dockerode, and clean-up by label.
 */
import { randomBytes } from 'node:crypto';
import Docker from 'dockerode';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, SANDBOX_ID_LABEL, sandboxContainerLabels } from '../../src/domain/docker-labels';
import { parseDockerHost, type ContainerSpecInput } from '../../src/docker';

/** Built by scripts/build-test-image.sh. */
export const TEST_IMAGE = process.env.SANDBOXPLANE_TEST_IMAGE ?? 'local/sandboxplane-testhttp:1';
export const PINNED_IMAGE_ID = `sha256:${'a'.repeat(64)}`;
export const MIB = 1024 * 1024;
/** The log limit test specs carry (the broker refuses a container without one). */
export const TEST_LOG_LIMITS = Object.freeze({ logMaxBytes: 2 * MIB, logFiles: 2 });

/** A spec every rule accepts; tests change one thing at a time. */
export function validSpec(overrides: Partial<ContainerSpecInput> = {}): ContainerSpecInput {
  return {
    image: PINNED_IMAGE_ID,
    labels: { ...sandboxContainerLabels('sb-test', 'moto') },
    limits: { memoryBytes: 64 * MIB, pidsLimit: 64, nanoCpus: 500_000_000, ...TEST_LOG_LIMITS },
    ports: [{ containerPort: 8080 }],
    ...overrides,
  };
}

/** A sandbox id unique to this test run, so parallel runs never see each other's containers. */
export function uniqueSandboxId(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

/** dockerode for the engine the tests use: DOCKER_HOST, or the default socket. */
export function engineDocker(): Docker {
  const endpoint = parseDockerHost(process.env.DOCKER_HOST);
  return endpoint.kind === 'tcp'
    ? new Docker({ host: endpoint.host, port: endpoint.port, protocol: 'http', socketPath: undefined })
    : new Docker({ socketPath: endpoint.socketPath, host: undefined, port: undefined });
}

/** Fails with what to run when the engine or the image is missing. */
export async function requireEngineAndImage(docker: Docker): Promise<string> {
  try {
    await docker.ping();
  } catch (err) {
    throw new Error(`No Docker engine at ${process.env.DOCKER_HOST ?? 'the default socket'} (${String(err)}): run \`export "$(bash scripts/docker-engine.sh | tail -n 1)"\``);
  }
  try {
    const image = (await docker.getImage(TEST_IMAGE).inspect()) as { Id: string };
    return image.Id;
  } catch {
    throw new Error(`Test image ${TEST_IMAGE} is missing: run \`bash scripts/build-test-image.sh\``);
  }
}

/** Removes every managed container of `sandboxId`, and then its networks, whatever happened in the test. */
export async function removeSandboxContainers(docker: Docker, sandboxId: string): Promise<void> {
  const label = [`${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`, `${SANDBOX_ID_LABEL}=${sandboxId}`];
  const containers = await docker.listContainers({ all: true, filters: { label } });
  await Promise.all(containers.map((container) => docker.getContainer(container.Id).remove({ force: true, v: true })));
  await removeSandboxNetworks(docker, sandboxId);
}

/** The managed networks labelled for `sandboxId` (DESIGN §12: one per sandbox). */
export async function sandboxNetworks(docker: Docker, sandboxId: string): Promise<Array<{ Id: string; Name: string }>> {
  const label = [`${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`, `${SANDBOX_ID_LABEL}=${sandboxId}`];
  return (await docker.listNetworks({ filters: { label } })) as Array<{ Id: string; Name: string }>;
}

/** Removes the managed networks labelled for `sandboxId`. */
export async function removeSandboxNetworks(docker: Docker, sandboxId: string): Promise<void> {
  await Promise.all(
    (await sandboxNetworks(docker, sandboxId)).map((network) =>
      docker
        .getNetwork(network.Id)
        .remove()
        .catch(() => undefined),
    ),
  );
}

export interface EngineSpy {
  readonly docker: Docker;
  /** Every dockerode method called, on the client or on anything it returned. */
  readonly calls: string[];
}

/** Wraps dockerode in a Proxy that records every method call, including on containers it hands out. */
export function spyOnDocker(target: Docker): EngineSpy {
  const calls: string[] = [];
  const wrap = <T extends object>(object: T, prefix: string): T =>
    new Proxy(object, {
      get(inner, property, receiver) {
        const value: unknown = Reflect.get(inner, property, receiver);
        if (typeof value !== 'function' || typeof property !== 'string') return value;
        return (...args: unknown[]) => {
          calls.push(`${prefix}${property}`);
          const result: unknown = (value as (...a: unknown[]) => unknown).apply(inner, args);
          return typeof result === 'object' && result !== null && !(result instanceof Promise) ? wrap(result, `${prefix}${property}().`) : result;
        };
      },
    });
  return { docker: wrap(target, ''), calls };
}

/** GET through the published port, retrying while the server inside is still starting. */
export async function httpGet(url: string, timeoutMs = 10_000): Promise<{ status: number; body: string }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      return { status: response.status, body: await response.text() };
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}
