import type { WorkflowService } from '@temporalio/client';
import type { HostRegistration, HostView } from '../domain/hosts';
import type { Store } from '../store';
import type { HostDirectory } from '../store/host-directory';
import type { StoredHost } from '../store/host-repository';
import { lastPoll, POLLER_SILENCE_LIMIT_MS, queuePollers } from './queue-pollers';

/** A host's liveness is how recently a worker polled its docker queue, as Temporal records it. */
export class TemporalHostDirectory implements HostDirectory {
  constructor(
    private readonly store: Store,
    private readonly service: WorkflowService,
    private readonly namespace: string,
  ) {}

  async list(): Promise<HostView[]> {
    return Promise.all(this.store.hosts.list().map((host) => this.view(host)));
  }

  async register(registration: HostRegistration): Promise<HostView> {
    this.store.hosts.register(registration);
    const stored = this.store.hosts.list().find((host) => host.hostId === registration.hostId) as StoredHost;
    return this.view(stored);
  }

  /** The ids of the hosts a worker serves now: what placement may choose from. */
  async liveHostIds(): Promise<Set<string>> {
    return new Set((await this.list()).filter((host) => host.live).map((host) => host.hostId));
  }

  private async view(host: StoredHost): Promise<HostView> {
    const { lastSeenAt, live } = lastPoll(await queuePollers(this.service, this.namespace, host.taskQueue));
    // A worker registers just before it polls: a fresh registration counts as live until its first poll shows.
    const justRegistered = Date.now() - Date.parse(host.updatedAt) <= POLLER_SILENCE_LIMIT_MS;
    return {
      hostId: host.hostId,
      taskQueue: host.taskQueue,
      capacity: host.capacity,
      live: live || justRegistered,
      adapters: host.adapters,
      lastSeenAt: lastSeenAt?.toISOString() ?? null,
      liveSandboxes: host.liveSandboxes,
      engineId: host.engineId,
      registeredAt: host.registeredAt,
    };
  }
}
