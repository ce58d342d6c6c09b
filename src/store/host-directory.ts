import type { HostRegistration, HostView } from '../domain/hosts';

/** The host registry as callers see it: the store's rows, with liveness from Temporal. */
export interface HostDirectory {
  list(): Promise<HostView[]>;
  register(registration: HostRegistration): Promise<HostView>;
  /** Retires a host no worker serves and no sandbox holds; returns it as it was. */
  remove(hostId: string): Promise<HostView>;
}
