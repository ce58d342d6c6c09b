/**
 * The docker role's watch on its engine (DESIGN §2, issue 30): when one of its plane's
 * containers dies, is OOM-killed or paused (DESIGN §18), the engine says so and the sandbox's workflow is told
 * at once (`checkHealth`: it looks and restarts or ends the sandbox), instead of every
 * READY sandbox polling on a short timer. The lifecycle's own timer stays as a slow
 * safety net, and the sweep reconciles whatever both miss.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { ContainerBroker } from '../docker';
import { followContainerEvents, type ContainerEvent, type EventSource } from '../docker/engine-events';
import { workflowIdFor } from '../domain/contract-names';
import { PLANE_LABEL } from '../domain/docker-labels';
import { containerOwner } from '../domain/warm-pool';
import type { Logger } from '../logging/logger';
import { checkHealthSignal } from '../workflows/sandbox-messages';

/** What the engine says when a container stops serving: it exited (or was killed), ran out of memory, or was frozen (`docker pause`). */
const DEATHS = ['die', 'oom', 'pause'] as const;
/** An `oom` and its `die`, or one event seen again after a reconnect: one signal. */
const SAME_DEATH_MS = 10_000;

export interface DeathWatchOptions {
  readonly source: EventSource;
  readonly broker: ContainerBroker;
  readonly planeId: string;
  readonly client: Client;
  readonly logger: Logger;
  /** Whether this process itself stopped or removed the container (a teardown, a replacement): no death to tell. */
  readonly endedHere?: (containerId: string) => boolean;
}

/** Follows the engine's deaths of this plane's containers until `stop()`; at the start and after every break it also tells the owners of containers found dead (they died while nobody watched). */
export function watchContainerDeaths(options: DeathWatchOptions): { stop(): void } {
  const { client, logger } = options;
  const told = new Map<string, number>();
  const tell = (sandboxId: string, why: string) => {
    void client.workflow
      .getHandle(workflowIdFor(sandboxId))
      .signal(checkHealthSignal)
      .then(
        () => logger.info({ sandboxId, why }, 'container died: the sandbox looks now'),
        (err: unknown) => {
          // A sandbox already ended, or a container of no sandbox: nobody to tell.
          if (!(err instanceof WorkflowNotFoundError)) logger.warn({ sandboxId, err }, 'could not tell a sandbox its container died; its health watch or the sweep will see it');
        },
      );
  };
  const onDeath = (container: { id: string; name: string; labels: Readonly<Record<string, string>> }, why: string) => {
    const now = Date.now();
    for (const [id, at] of told) if (now - at > SAME_DEATH_MS) told.delete(id);
    if (told.has(container.id) || options.endedHere?.(container.id) === true) return;
    told.set(container.id, now);
    const owner = containerOwner(container);
    if ('sandboxId' in owner) tell(owner.sandboxId, why);
  };

  const planeLabel = `${PLANE_LABEL}=${options.planeId}`;
  const follower = followContainerEvents({
    source: options.source,
    labels: [planeLabel],
    actions: DEATHS,
    onEvent: (event: ContainerEvent) => {
      const { name = '', ...labels } = event.attributes;
      onDeath({ id: event.containerId, name, labels }, `${event.action} (exit code ${event.attributes.exitCode ?? '?'})`);
    },
    onError: (err, retryInMs) => logger.warn({ err, retryInMs }, "the engine's event stream broke; following it again"),
    // At the start, and after every break (an engine restart forgets what it did not tell):
    // containers that died while nobody watched are found exited.
    onConnected: () =>
      void options.broker
        .list({ [PLANE_LABEL]: options.planeId })
        .then((containers) => {
          for (const container of containers)
            if (container.state === 'exited' || container.state === 'dead' || container.state === 'paused')
              onDeath(container, `found ${container.state} when the event stream (re)connected`);
        })
        .catch((err: unknown) => logger.warn({ err }, "could not list this plane's containers; the health watch and the sweep will see dead ones")),
  });
  return follower;
}
