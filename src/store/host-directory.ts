import { SandboxPlaneError } from '../domain/errors';
import type { HostRegistration, HostView } from '../domain/hosts';
import { limitCapacity } from '../domain/hosts';
import { memoryHeld, type StoredHost } from './host-repository';
import type { Store } from './store';

/** The host registry as callers see it: the store's rows, with liveness from Temporal. */
export interface HostDirectory {
  list(): Promise<HostView[]>;
  register(registration: HostRegistration): Promise<HostView>;
  /** Retires a host no worker serves and no sandbox holds; returns it as it was. */
  remove(hostId: string): Promise<HostView>;
}

/** Whether a worker serves a host now, and when one last did; the worker layer asks Temporal. */
export type HostLiveness = (host: StoredHost) => Promise<{ lastSeenAt: Date | null; live: boolean }>;

/** The store's host rows, each with its liveness as `liveness` tells it. */
export class StoreHostDirectory implements HostDirectory {
  constructor(
    private readonly store: Store,
    private readonly liveness: HostLiveness,
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
    const { lastSeenAt, live } = await this.liveness(host);
    const held = memoryHeld(host);
    return {
      hostId: host.hostId,
      taskQueue: host.taskQueue,
      capacity: host.capacity,
      warmPool: host.warmPool,
      live,
      adapters: host.adapters,
      lastSeenAt: lastSeenAt?.toISOString() ?? null,
      liveSandboxes: host.liveSandboxes,
      engineMemoryBytes: host.memory?.engineBytes ?? null,
      memoryCapacityBytes: host.memory?.capacityBytes ?? null,
      memoryUsedBytes: held.limits,
      memoryRequestedBytes: held.requests,
      memoryLimitCapacityBytes: host.memory === null ? null : limitCapacity(host.memory),
      engineId: host.engineId,
      registeredAt: host.registeredAt,
    };
  }
}
