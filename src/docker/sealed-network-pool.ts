import { randomBytes } from 'node:crypto';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, PLANE_LABEL, SANDBOX_ID_LABEL, sandboxNetworkName } from '../domain/docker-labels';
import { NETWORK_POOL_LABEL, networkPoolId } from '../domain/network-pool';
import type { BrokerLogger } from './broker-logger';
import type { NetworkRemoveOutcome } from './container-broker';

/** What the pool needs of the broker: making a sealed network, and removing one. */
export interface SealedNetworkMaker {
  /** Makes a sealed network (the same options as a sandbox's own) and answers its id. */
  createSealedNetwork(name: string, labels: Readonly<Record<string, string>>): Promise<string>;
  removeNetwork(nameOrId: string): Promise<NetworkRemoveOutcome>;
}

export interface PooledNetwork {
  readonly id: string;
  readonly name: string;
}

/** What the broker takes networks from, and the sweep asks about. */
export interface NetworkPoolSource {
  /** The plane whose sandboxes may take these networks (they carry its label). */
  readonly plane: string;
  /** One idle network, handed out now and never again; `undefined` when none is ready. */
  take(): PooledNetwork | undefined;
  /** Whether this pool holds the network (idle, or handed out a moment ago and not yet attached). */
  holds(networkId: string): boolean;
}

export interface SealedNetworkPoolOptions {
  readonly hostId: string;
  readonly plane: string;
  /** Idle networks to keep; 0 keeps none. */
  readonly target: number;
  readonly maker: SealedNetworkMaker;
  readonly logger: BrokerLogger;
  /** How long after a take its replacement is made (default 1 s). */
  readonly refillDelayMs?: number;
}

/**
 * A network handed out stays "held" this long, so a sweep that listed containers before
 * its container was made does not take it as unused (a create attaches it within ms).
 */
const HELD_AFTER_TAKE_MS = 60_000;

/**
 * Why the refill waits: a network create is engine work (a bridge, its rules) that the
 * sandbox that just took one, starting its container and emulator, would share on a small host.
 */
const DEFAULT_REFILL_DELAY_MS = 1_000;

/**
 * One docker host's pre-made sealed networks (DESIGN §12, §13). Keeps `target` empty
 * sealed networks; `take` hands each to exactly one sandbox — the pool forgets it as it
 * hands it out, and only this process hands out what this process made (nothing is
 * adopted from an earlier run: networks carry no claim a second process could race for).
 * What a killed process left is the sweep's, past {@link NETWORK_POOL_GRACE_MS}; `stop`
 * removes the idle ones, so a stopped worker leaves none.
 */
export class SealedNetworkPool implements NetworkPoolSource {
  private idle: PooledNetwork[] = [];
  private readonly taken = new Map<string, number>();
  private readonly makes = new Set<Promise<void>>();
  private making = 0;
  private refill: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly options: SealedNetworkPoolOptions) {}

  get plane(): string {
    return this.options.plane;
  }

  /** Makes the first networks; returns once they are made (or failed: the next take tries again). */
  async start(): Promise<void> {
    this.topUp();
    await Promise.allSettled([...this.makes]);
  }

  take(): PooledNetwork | undefined {
    const network = this.idle.shift();
    if (network !== undefined) {
      const now = Date.now();
      for (const [id, at] of this.taken) if (now - at > HELD_AFTER_TAKE_MS) this.taken.delete(id);
      this.taken.set(network.id, now);
    }
    this.topUpSoon();
    return network;
  }

  holds(networkId: string): boolean {
    const at = this.taken.get(networkId);
    return this.idle.some((network) => network.id === networkId) || (at !== undefined && Date.now() - at <= HELD_AFTER_TAKE_MS);
  }

  /** The pool as this process knows it. */
  depth(): { target: number; ready: number; starting: number } {
    return { target: this.options.target, ready: this.idle.length, starting: this.making };
  }

  /** Stops refilling, waits for makes under way, and removes every idle network. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.refill);
    await Promise.allSettled([...this.makes]);
    const idle = this.idle;
    this.idle = [];
    for (const network of idle) {
      await this.options.maker.removeNetwork(network.id).catch((err: unknown) => {
        this.options.logger.warn({ networkId: network.id, err: String(err) }, 'pooled network could not be removed; the sweep will find it');
      });
    }
  }

  private topUpSoon(): void {
    if (this.refill !== undefined || this.stopped) return;
    this.refill = setTimeout(() => {
      this.refill = undefined;
      this.topUp();
    }, this.options.refillDelayMs ?? DEFAULT_REFILL_DELAY_MS);
    this.refill.unref();
  }

  private topUp(): void {
    if (this.stopped) return;
    for (let lacking = this.options.target - this.idle.length - this.making; lacking > 0; lacking -= 1) {
      const make = this.makeOne().finally(() => this.makes.delete(make));
      this.makes.add(make);
    }
  }

  private async makeOne(): Promise<void> {
    const { hostId, plane, maker, logger } = this.options;
    const owner = networkPoolId(randomBytes(6).toString('hex'));
    const name = sandboxNetworkName(plane, owner);
    this.making += 1;
    try {
      const id = await maker.createSealedNetwork(name, { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [PLANE_LABEL]: plane, [SANDBOX_ID_LABEL]: owner, [NETWORK_POOL_LABEL]: hostId });
      this.idle.push({ id, name });
    } catch (err) {
      logger.warn({ err: String(err), network: name, hostId }, 'pooled network could not be made; the next take tries again');
    } finally {
      this.making -= 1;
    }
  }
}
