import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { isSandboxPlaneError } from '../domain/errors';
import { containerOwner, poolLabels, poolSlotId, type PoolableAdapter, type PoolStatus } from '../domain/warm-pool';
import { stopAndRemove, type BrokerLogger, type ContainerBroker } from '../docker';
import type { ContainerEmulatorAdapter, IdleContainer, PoolSource } from './container-emulator';

/** Engine answers that mean another claim got there first. */
const LOST_RACE: ReadonlySet<string> = new Set(['CONTAINER_NOT_FOUND', 'CONTAINER_CONFLICT', 'DOCKER_REQUEST_REJECTED']);

/**
 * Hands one idle container to a sandbox, as a compare-and-swap on the engine. A rename
 * alone is not one: the engine resolves the old name before it locks the container, so
 * two renames from the slot's name can both succeed, the second renaming the first
 * one's claim. Every claimer therefore first renames to the one name all claims of this
 * slot share (`…-claiming.<slot>`): the engine reserves a name atomically, so exactly
 * one claimer gets it (the others hear that it is taken, or that the container already
 * has it, or that the slot's name is gone). Only that one renames it on to the sandbox.
 */
export async function claimSlot(
  broker: ContainerBroker,
  nameFor: (owner: string) => string,
  candidate: Pick<IdleContainer, 'name' | 'slotId'>,
  claimedName: string,
): Promise<'claimed' | 'lost' | 'name_taken'> {
  const claiming = nameFor(`claiming.${candidate.slotId}`);
  try {
    await broker.rename(candidate.name, claiming);
  } catch (err) {
    if (isSandboxPlaneError(err) && LOST_RACE.has(err.code)) return 'lost';
    throw err;
  }
  try {
    await broker.rename(claiming, claimedName);
    return 'claimed';
  } catch (err) {
    if (!(isSandboxPlaneError(err) && err.code === 'CONTAINER_CONFLICT')) throw err;
    // Give the slot back: it is still idle and healthy.
    await broker.rename(claiming, candidate.name);
    return 'name_taken';
  }
}

export interface WarmPoolOptions {
  readonly hostId: string;
  readonly adapter: ContainerEmulatorAdapter & { readonly name: PoolableAdapter };
  readonly broker: ContainerBroker;
  /** Idle containers to keep. 0 drains what an earlier run left. */
  readonly target: number;
  readonly logger: BrokerLogger;
  /** How often idle containers are looked at (a dead one is replaced) and the pool topped up. */
  readonly checkIntervalMs?: number;
  /** How long after a claim its replacement starts (default 1 s). */
  readonly refillDelayMs?: number;
}

const DEFAULT_CHECK_INTERVAL_MS = 10_000;

/**
 * How long a claim's replacement waits before it starts: an emulator's start is hundreds of
 * ms of CPU, which the sandbox that just claimed (its reset and mint, READY recorded) would
 * otherwise share on a small host.
 */
const DEFAULT_REFILL_DELAY_MS = 1_000;

/**
 * One docker host's warm pool of one adapter (DESIGN §13). Keeps `target` started,
 * healthy, idle containers; hands each to one sandbox (`claim`), then starts a
 * replacement in the background.
 *
 * Everything it knows survives a restart because it lives on the engine: an idle
 * container waits under its slot's name, and a claim renames it to the sandbox's. At
 * start (and every check) the pool adopts the idle containers it finds, replaces dead
 * ones and removes any beyond its target.
 */
export class WarmPool implements PoolSource {
  private idle: IdleContainer[] = [];
  /** Slots being started: running but not yet healthy, so not dead either. */
  private readonly startingSlots = new Set<string>();
  /** Containers this process handed out, so a check that overlapped a claim cannot make them idle again. */
  private readonly handedOut = new Set<string>();
  /** Idle containers being started, so `stop` can wait for them. */
  private readonly starts = new Set<Promise<void>>();
  /** Idle containers whose last probe got no answer: a second miss in a row replaces them (one slow answer is not a death). */
  private readonly missedProbes = new Set<string>();
  private claims: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private refill: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;
  private readonly stopping = new AbortController();

  constructor(private readonly options: WarmPoolOptions) {
    // Every idle container starting (or waiting for a start slot) listens for the stop: a pool of 50 has 50 listeners by design.
    setMaxListeners(0, this.stopping.signal);
  }

  get adapter(): PoolableAdapter {
    return this.options.adapter.name;
  }

  private get labels(): Readonly<Record<string, string>> {
    return poolLabels(this.adapter, this.options.hostId);
  }

  /** Adopts what the engine holds and starts the periodic check; returns once the first check has run. */
  async start(): Promise<void> {
    await this.check();
    // A pool turned off has drained what an earlier run left; there is nothing to keep.
    if (this.options.target === 0) return;
    const every = this.options.checkIntervalMs ?? DEFAULT_CHECK_INTERVAL_MS;
    const loop = () => {
      this.timer = setTimeout(() => void this.check().finally(() => this.stopping.signal.aborted || loop()), every);
      this.timer.unref();
    };
    if (!this.stopping.signal.aborted) loop();
  }

  /** Stops checking and abandons starts under way (their containers are removed); idle containers stay for the next run. */
  async stop(): Promise<void> {
    this.stopping.abort();
    clearTimeout(this.timer);
    clearTimeout(this.refill);
    await this.checking;
    // A start under way ends (healthy: it stays for the next run; not yet: removed) before this returns.
    await Promise.allSettled(this.starts);
  }

  /**
   * Hands one idle container to a sandbox by renaming it to `claimedName`. Claims are
   * serialized here, and the rename addresses the slot's name, so even a second process
   * serving this host cannot take the same container.
   */
  claim(claimedName: string): Promise<IdleContainer | undefined> {
    const claimed = this.claims.then(() => this.claimNext(claimedName));
    this.claims = claimed.catch(() => undefined);
    return claimed;
  }

  private async claimNext(claimedName: string): Promise<IdleContainer | undefined> {
    try {
      for (let candidate = this.idle.shift(); candidate !== undefined; candidate = this.idle.shift()) {
        const outcome = await claimSlot(this.options.broker, (owner) => this.options.adapter.containerName(owner), candidate, claimedName);
        if (outcome === 'lost') continue; // taken or removed elsewhere
        if (outcome === 'name_taken') {
          // The sandbox already has a container of that name (an earlier cold attempt): that one is adopted.
          this.idle.unshift(candidate);
          return undefined;
        }
        this.handedOut.add(candidate.id);
        this.options.logger.info({ containerId: candidate.id, slotId: candidate.slotId, claimedName, hostId: this.options.hostId }, 'warm pool container claimed');
        return { ...candidate, name: claimedName };
      }
      return undefined;
    } finally {
      this.topUpSoon();
    }
  }

  /** Tops up after the refill delay; claims in the meantime share the one top-up. */
  private topUpSoon(): void {
    if (this.refill !== undefined || this.stopping.signal.aborted) return;
    this.refill = setTimeout(() => {
      this.refill = undefined;
      this.topUp();
    }, this.options.refillDelayMs ?? DEFAULT_REFILL_DELAY_MS);
    this.refill.unref();
  }

  /** The pool as this process knows it, without asking the engine (what each metrics scrape reads). */
  depth(): { adapter: PoolableAdapter; target: number; ready: number; starting: number } {
    return { adapter: this.adapter, target: this.options.target, ready: this.idle.length, starting: this.startingSlots.size };
  }

  /** What `sandboxctl pools` shows, with the claimed count read from the engine now. */
  async status(): Promise<PoolStatus> {
    const containers = await this.options.adapter.poolContainers(this.labels);
    const claimed = containers.filter((container) => 'sandboxId' in containerOwner(container)).length;
    return {
      hostId: this.options.hostId,
      adapter: this.adapter,
      target: this.options.target,
      ready: this.idle.length,
      claimed,
      starting: this.startingSlots.size,
    };
  }

  /** One check at a time; a check asked for while one runs shares it. */
  private check(): Promise<void> {
    this.checking ??= this.checkOnce()
      .catch((err: unknown) => this.options.logger.warn({ err: String(err), adapter: this.adapter, hostId: this.options.hostId }, 'warm pool check failed; trying again'))
      .finally(() => {
        this.checking = undefined;
      });
    return this.checking;
  }

  private async checkOnce(): Promise<void> {
    const { adapter, logger } = this.options;
    const listed = await adapter.poolContainers(this.labels);
    const waiting: IdleContainer[] = [];
    /** Listed while still starting: a start that ends during this check adds it to `idle` itself. */
    const starting = new Set<string>();
    for (const container of listed) {
      const owner = containerOwner(container);
      if ('poolSlotId' in owner && this.startingSlots.has(owner.poolSlotId)) starting.add(container.id);
      if (!('poolSlotId' in owner) || this.startingSlots.has(owner.poolSlotId) || this.handedOut.has(container.id)) continue;
      const idle =
        container.state === 'running'
          ? { id: container.id, name: container.name, slotId: owner.poolSlotId, endpoint: adapter.endpointOf(container), operator: adapter.operatorAccessOf(container) }
          : undefined;
      if (idle !== undefined && (await adapter.serves(idle.operator))) {
        this.missedProbes.delete(container.id);
        waiting.push(idle);
        continue;
      }
      if (idle !== undefined && !this.missedProbes.has(container.id)) {
        // Not handed out until it answers again; replaced if it misses the next look too.
        this.missedProbes.add(container.id);
        continue;
      }
      this.missedProbes.delete(container.id);
      logger.warn({ containerId: container.id, slotId: owner.poolSlotId, state: container.state }, 'warm pool container does not serve; replacing it');
      await this.discard(container.id);
    }
    const listedIds = new Set(listed.map((container) => container.id));
    // Started after the list was read, or still starting when it was: idle too. Claimed while this looked: not idle any more.
    const startedSince = this.idle.filter((container) => !listedIds.has(container.id) || starting.has(container.id));
    const kept = [...waiting, ...startedSince].filter((container) => !this.handedOut.has(container.id));
    const excess = kept.splice(this.options.target);
    this.idle = kept;
    for (const id of this.handedOut) if (!listedIds.has(id)) this.handedOut.delete(id);
    for (const id of this.missedProbes) if (!listedIds.has(id)) this.missedProbes.delete(id);
    for (const container of excess) await this.discard(container.id);
    this.topUp();
  }

  /** Starts as many idle containers as the pool lacks, in the background. */
  private topUp(): void {
    if (this.stopping.signal.aborted) return;
    const lacking = this.options.target - this.idle.length - this.startingSlots.size;
    for (let i = 0; i < lacking; i += 1) {
      const start = this.startOne().finally(() => this.starts.delete(start));
      this.starts.add(start);
    }
  }

  private async startOne(): Promise<void> {
    const slotId = poolSlotId(this.adapter, randomBytes(6).toString('hex'));
    this.startingSlots.add(slotId);
    try {
      const idle = await this.options.adapter.startIdle(slotId, this.labels, { heartbeat: () => undefined, cancelled: this.stopping.signal });
      this.idle.push(idle);
    } catch (err) {
      this.options.logger.warn({ err: String(err), slotId, hostId: this.options.hostId }, 'warm pool container did not start; the next check tries again');
    } finally {
      this.startingSlots.delete(slotId);
    }
  }

  private async discard(containerId: string): Promise<void> {
    try {
      await stopAndRemove(this.options.broker, containerId);
    } catch (err) {
      this.options.logger.warn({ err: String(err), containerId }, 'warm pool container could not be removed; the next check tries again');
    }
  }
}
