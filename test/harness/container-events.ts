import Docker from 'dockerode';
import { SANDBOX_ID_LABEL } from '../../src/domain/docker-labels';
import { parseDockerHost } from '../../src/docker/docker-host';

/** One engine event about a container, as `docker events` reports it. */
export interface ContainerEvent {
  readonly action: string;
  readonly containerId: string;
  readonly attributes: Readonly<Record<string, string>>;
}

/** A subscription to engine events, open before the test causes what it waits for. */
export interface ContainerEventWatch {
  /** The first matching event. */
  readonly next: Promise<ContainerEvent>;
  /** The first matching event, or a failure naming what did not happen within `ms`. */
  within(ms: number): Promise<ContainerEvent>;
  close(): void;
}

/** A dockerode client for a DOCKER_HOST value (unix sockets and tcp, as the broker takes them). */
export function dockerClient(dockerHost: string | undefined): Docker {
  const endpoint = parseDockerHost(dockerHost);
  return endpoint.kind === 'tcp' ? new Docker({ host: endpoint.host, port: endpoint.port, protocol: 'http' }) : new Docker({ socketPath: endpoint.socketPath });
}

/**
 * Watches the engine for `action` (`create`, `start`, `kill`, `die`, `destroy`, …) on a
 * container of sandbox `sandboxId`: a hook observed from outside the worker, so a test
 * can time a fault to the moment the engine sees a step, not to a sleep. Resolves once
 * the engine has accepted the subscription.
 */
export async function watchContainerEvent(dockerHost: string | undefined, sandboxId: string, action: string): Promise<ContainerEventWatch> {
  const stream = (await dockerClient(dockerHost).getEvents({
    filters: { type: ['container'], event: [action], label: [`${SANDBOX_ID_LABEL}=${sandboxId}`] },
  })) as NodeJS.ReadableStream & { destroy(): void };
  const next = new Promise<ContainerEvent>((resolve, reject) => {
    let partial = '';
    stream.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (line.trim() === '') continue;
        const event = JSON.parse(line) as { Action?: string; Actor?: { ID?: string; Attributes?: Record<string, string> } };
        resolve({ action: event.Action ?? action, containerId: event.Actor?.ID ?? '', attributes: event.Actor?.Attributes ?? {} });
      }
    });
    stream.once('error', reject);
    stream.once('end', () => reject(new Error(`the engine closed the event stream before ${action} on sandbox ${sandboxId}`)));
  });
  // Closing the watch ends the stream; nobody waits on `next` then.
  next.catch(() => undefined);
  const within = async (ms: number) => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no ${action} of a container of sandbox ${sandboxId} within ${ms} ms`)), ms);
    });
    try {
      return await Promise.race([next, late]);
    } finally {
      clearTimeout(timer);
    }
  };
  return { next, within, close: () => stream.destroy() };
}
