import { Context } from '@temporalio/activity';
import { SandboxPlaneError } from '../domain/errors';
import { asActivityFailure } from './activity-failure';
import {
  ContainerState,
  type ContainerBroker,
  type ContainerInfo,
  type ContainerSpecInput,
  type ContainerSummary,
  type RemoveOptions,
  type RemoveOutcome,
  type StopOptions,
  type StopOutcome,
} from '../docker';

export interface DockerActivityDeps {
  readonly broker: ContainerBroker;
  /** Reports liveness to Temporal; defaults to the current activity's heartbeat. */
  readonly heartbeat?: (details?: unknown) => void;
  /** Cancellation-aware sleep; defaults to the current activity's. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** How often to heartbeat while an engine call or a wait is in progress. Default 1000 ms. */
  readonly heartbeatIntervalMs?: number;
  /** How often to re-inspect while waiting for a state. Default 250 ms. */
  readonly pollIntervalMs?: number;
}

export interface RunContainerOptions {
  /** How long to wait for the container to be running. Default 30 s. */
  readonly readyTimeoutMs?: number;
}

/**
 * The broker's five verbs as activities. Waits (for a container to run, for a stop to
 * finish) heartbeat, so a stuck engine shows up as a heartbeat timeout and a retry.
 */
export function createDockerActivities(deps: DockerActivityDeps) {
  const { broker } = deps;
  const heartbeat = deps.heartbeat ?? ((details?: unknown) => Context.current().heartbeat(details));
  const sleep = deps.sleep ?? ((ms: number) => Context.current().sleep(ms));
  const heartbeatIntervalMs = deps.heartbeatIntervalMs ?? 1000;
  const pollIntervalMs = deps.pollIntervalMs ?? 250;

  async function heartbeating<T>(what: string, work: () => Promise<T>): Promise<T> {
    heartbeat({ waitingFor: what });
    const timer = setInterval(() => heartbeat({ waitingFor: what }), heartbeatIntervalMs);
    try {
      return await work();
    } catch (err) {
      throw asActivityFailure(err);
    } finally {
      clearInterval(timer);
    }
  }

  async function waitUntilRunning(info: ContainerInfo, timeoutMs: number): Promise<ContainerInfo> {
    const deadline = Date.now() + timeoutMs;
    let current = info;
    for (;;) {
      if (current.state === ContainerState.RUNNING) return current;
      if (current.state !== ContainerState.CREATED && current.state !== ContainerState.RESTARTING) {
        throw new SandboxPlaneError(
          'CONTAINER_NOT_RUNNING',
          `Container ${current.id} is ${current.state} (exit code ${current.exitCode ?? 'none'}${current.oomKilled ? ', killed for memory' : ''}) instead of running`,
          { details: { containerId: current.id, state: current.state, exitCode: current.exitCode } },
        );
      }
      if (Date.now() >= deadline) {
        throw new SandboxPlaneError('DOCKER_ENGINE_ERROR', `Container ${current.id} was still ${current.state} after ${timeoutMs} ms`, {
          details: { containerId: current.id, state: current.state },
        });
      }
      heartbeat({ waitingFor: 'running', containerId: current.id, state: current.state });
      await sleep(pollIntervalMs);
      current = await broker.inspect(current.id);
    }
  }

  return {
    /** Validates the spec, starts the container and waits until it runs. */
    async runContainer(spec: ContainerSpecInput, options: RunContainerOptions = {}): Promise<ContainerInfo> {
      return heartbeating('run', async () => waitUntilRunning(await broker.run(spec), options.readyTimeoutMs ?? 30_000));
    },

    async inspectContainer(id: string): Promise<ContainerInfo> {
      return heartbeating('inspect', () => broker.inspect(id));
    },

    /** Every managed container carrying all of `labels`. */
    async listContainers(labels: Readonly<Record<string, string>>): Promise<ContainerSummary[]> {
      return heartbeating('list', () => broker.list(labels));
    },

    /** Stops gracefully; the engine may wait `timeoutSeconds` before killing, so this heartbeats. */
    async stopContainer(id: string, options: StopOptions = {}): Promise<StopOutcome> {
      return heartbeating('stop', () => broker.stop(id, options));
    },

    async removeContainer(id: string, options: RemoveOptions = {}): Promise<RemoveOutcome> {
      return heartbeating('remove', () => broker.remove(id, options));
    },
  };
}

export type DockerActivities = ReturnType<typeof createDockerActivities>;
