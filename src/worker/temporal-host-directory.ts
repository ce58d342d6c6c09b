import type { WorkflowService } from '@temporalio/client';
import { SandboxPlaneError } from '../domain/errors';
import type { HostRegistration, HostView } from '../domain/hosts';
import type { Store } from '../store';
import type { HostDirectory } from '../store/host-directory';
import type { StoredHost } from '../store/host-repository';
import { lastPoll, POLLER_SILENCE_LIMIT_MS, queuePollers } from '../client/queue-pollers';

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

  /**
   * Retires a host: refused while a worker serves it (it would register again) or while
   * sandboxes are placed there (they wait for it to tear them down).
   */
  async remove(hostId: string): Promise<HostView> {
    const host = (await this.list()).find((candidate) => candidate.hostId === hostId);
    if (host === undefined) {
      throw new SandboxPlaneError('NOT_FOUND', `no docker host ${hostId} is registered`, { hint: '`sandboxctl hosts` lists the registered hosts.', details: { hostId } });
    }
    if (host.live) {
      throw new SandboxPlaneError('HOST_IN_USE', `docker host ${hostId} is live (a worker polled ${host.taskQueue} at ${host.lastSeenAt ?? 'registration'})`, {
        hint: 'Stop its docker worker first, and wait until `sandboxctl hosts` shows it not live (90 s after its last poll).',
        details: { hostId },
      });
    }
    if (host.liveSandboxes > 0) {
      throw new SandboxPlaneError('HOST_IN_USE', `${host.liveSandboxes} sandbox(es) placed on docker host ${hostId} have not ended`, {
        hint: 'Start its docker worker again so their teardown runs (`sandboxctl worker --role docker --host-id ' + hostId + '`), then destroy them.',
        details: { hostId, liveSandboxes: host.liveSandboxes },
      });
    }
    this.store.hosts.remove(hostId);
    return host;
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
      warmPool: host.warmPool,
      live: live || justRegistered,
      adapters: host.adapters,
      lastSeenAt: lastSeenAt?.toISOString() ?? null,
      liveSandboxes: host.liveSandboxes,
      engineId: host.engineId,
      registeredAt: host.registeredAt,
    };
  }
}
