import { formatBytes } from '../domain/byte-size';
import { hostMemorySchema, limitCapacity, memoryShortfall, type HostMemory, type HostRegistration, type Placement } from '../domain/hosts';
import { TERMINAL_STATES } from '../domain/sandbox-states';
import { pooledSlots, warmPoolTargetsSchema, type WarmPoolTargets } from '../domain/warm-pool';
import type { SqliteDatabase } from './database';

/** A registered docker host with the sandboxes that hold its capacity. */
export interface StoredHost extends HostRegistration {
  readonly warmPool: WarmPoolTargets;
  readonly memory: HostMemory | null;
  readonly registeredAt: string;
  readonly updatedAt: string;
  readonly liveSandboxes: number;
  /** Its live sandboxes by adapter: what their memory limits are added up from. */
  readonly liveByAdapter: Readonly<Record<string, number>>;
}

interface HostRow {
  host_id: string;
  task_queue: string;
  adapters: string;
  capacity: number;
  warm_pool: string;
  engine_id: string | null;
  identity: string;
  registered_at: string;
  updated_at: string;
  memory: string | null;
  live: number;
  live_by_adapter: string | null;
}

/** Ended sandboxes free their host's capacity; a DESTROY_FAILED one may still hold a container, so it keeps its place. */
const RELEASED = [...TERMINAL_STATES].filter((state) => state !== 'DESTROY_FAILED');
const HOLDS_CAPACITY = `state NOT IN (${RELEASED.map(() => '?').join(', ')})`;

/** Why no host took a sandbox, for the workflow's wait and its refusal. */
export interface PlacementRefusal {
  readonly refused: string;
  /**
   * Whether room is on its way: a live host that runs the adapter is still starting or
   * tearing down sandboxes (PROVISIONING or DESTROYING placed there). The workflow's wait
   * starts again while it is, so a burst queues rather than being refused (DESIGN §10).
   */
  readonly roomComing?: boolean;
}

/** Sandboxes a host is busy with: a start may fail and an ending one frees its place. */
const SETTLING = "state IN ('PROVISIONING', 'DESTROYING')";

/**
 * The host registry and the placements made from it. Placement reads the load and
 * writes the choice in one write transaction: the store role is the single writer, so
 * two sandboxes can never both take a host's last slot.
 */
export class HostRepository {
  constructor(private readonly db: SqliteDatabase) {}

  register(host: HostRegistration, now: Date = new Date()): void {
    const at = now.toISOString();
    this.db
      .prepare(
        `INSERT INTO hosts (host_id, task_queue, adapters, capacity, warm_pool, engine_id, identity, memory, registered_at, updated_at)
         VALUES (@hostId, @taskQueue, @adapters, @capacity, @warmPool, @engineId, @identity, @memory, @at, @at)
         ON CONFLICT (host_id) DO UPDATE SET task_queue = excluded.task_queue, adapters = excluded.adapters,
           capacity = excluded.capacity, warm_pool = excluded.warm_pool, engine_id = excluded.engine_id,
           identity = excluded.identity, memory = excluded.memory, updated_at = excluded.updated_at`,
      )
      .run({
        ...host,
        adapters: JSON.stringify(host.adapters),
        warmPool: JSON.stringify(host.warmPool ?? {}),
        memory: host.memory === undefined || host.memory === null ? null : JSON.stringify(hostMemorySchema.parse(host.memory)),
        at,
      });
  }

  list(): StoredHost[] {
    const rows = this.db
      .prepare(
        `SELECT h.*, (SELECT count(*) FROM sandboxes s WHERE s.host = h.host_id AND s.${HOLDS_CAPACITY}) AS live,
           (SELECT json_group_object(adapter, n) FROM
             (SELECT s.adapter AS adapter, count(*) AS n FROM sandboxes s WHERE s.host = h.host_id AND s.${HOLDS_CAPACITY} GROUP BY s.adapter)) AS live_by_adapter
         FROM hosts h ORDER BY h.host_id`,
      )
      .all(...RELEASED, ...RELEASED) as HostRow[];
    return rows.map((row) => ({
      hostId: row.host_id,
      taskQueue: row.task_queue,
      adapters: JSON.parse(row.adapters) as HostRegistration['adapters'],
      capacity: row.capacity,
      warmPool: warmPoolTargetsSchema.parse(JSON.parse(row.warm_pool)),
      engineId: row.engine_id,
      identity: row.identity,
      memory: row.memory === null ? null : hostMemorySchema.parse(JSON.parse(row.memory)),
      registeredAt: row.registered_at,
      updatedAt: row.updated_at,
      liveSandboxes: row.live,
      liveByAdapter: Object.freeze(JSON.parse(row.live_by_adapter ?? '{}') as Record<string, number>),
    }));
  }

  /** Deletes a host's row; `false` when there was none. */
  remove(hostId: string): boolean {
    return this.db.prepare('DELETE FROM hosts WHERE host_id = ?').run(hostId).changes === 1;
  }

  /** The host a sandbox was placed on, if any. */
  placementOf(sandboxId: string): Placement | undefined {
    const row = this.db.prepare('SELECT s.host AS hostId, h.task_queue AS taskQueue FROM sandboxes s JOIN hosts h ON h.host_id = s.host WHERE s.id = ?').get(sandboxId) as
      Placement | undefined;
    return row;
  }

  /**
   * Places a sandbox on the least-loaded host among `liveHostIds` that runs `adapter`
   * and has a free slot (ties go to the host id that sorts first). A retry gets the
   * first placement back (`fresh: false`). Call inside the transaction that also
   * records the placement's audit row.
   */
  place(
    input: { sandboxId: string; adapter: string; liveHostIds: ReadonlySet<string>; maxSandboxes?: number },
    now: Date = new Date(),
  ): { placement: Placement; fresh: boolean } | PlacementRefusal {
    const earlier = this.placementOf(input.sandboxId);
    if (earlier !== undefined) return { placement: earlier, fresh: false };
    const hosts = this.list();
    const serving = hosts.filter((host) => (host.adapters as readonly string[]).includes(input.adapter));
    const overCap = input.maxSandboxes === undefined ? undefined : this.overPlaneCap(hosts, input.maxSandboxes);
    if (overCap !== undefined) return { ...overCap, roomComing: this.settling(serving, input.liveHostIds) };
    const chosen = serving
      .filter((host) => input.liveHostIds.has(host.hostId) && load(host) < host.capacity && memoryFits(host, input.adapter))
      .sort((a, b) => usedShare(a) - usedShare(b) || a.hostId.localeCompare(b.hostId))[0];
    if (chosen === undefined) return { refused: describeNoRoom(input.adapter, serving, input.liveHostIds), roomComing: this.settling(serving, input.liveHostIds) };
    this.db.prepare('UPDATE sandboxes SET host = ?, updated_at = ? WHERE id = ?').run(chosen.hostId, now.toISOString(), input.sandboxId);
    return { placement: { hostId: chosen.hostId, taskQueue: chosen.taskQueue }, fresh: true };
  }

  /** Whether any of `serving` that is live is starting or tearing down a sandbox placed there. */
  private settling(serving: readonly StoredHost[], liveHostIds: ReadonlySet<string>): boolean {
    const live = serving.filter((host) => liveHostIds.has(host.hostId)).map((host) => host.hostId);
    if (live.length === 0) return false;
    const row = this.db.prepare(`SELECT 1 FROM sandboxes WHERE host IN (${live.map(() => '?').join(', ')}) AND ${SETTLING} LIMIT 1`).get(...live);
    return row !== undefined;
  }

  /**
   * The plane-wide cap (DESIGN §12): every placed sandbox that is not over, on any host,
   * and every host's warm pool containers are live containers.
   */
  private overPlaneCap(hosts: readonly StoredHost[], maxSandboxes: number): PlacementRefusal | undefined {
    const placed = (this.db.prepare(`SELECT count(*) AS n FROM sandboxes WHERE host IS NOT NULL AND ${HOLDS_CAPACITY}`).get(...RELEASED) as { n: number }).n;
    const pooled = hosts.reduce((sum, host) => sum + pooledSlots(host.warmPool), 0);
    if (placed + pooled < maxSandboxes) return undefined;
    return {
      refused: `the plane's cap of ${maxSandboxes} live sandboxes is reached (${placed} placed${pooled > 0 ? `, ${pooled} kept warm` : ''}; SANDBOXPLANE_MAX_SANDBOXES)`,
    };
  }
}

/** The slots a host has given away: its sandboxes not yet ended, and its warm pools' idle containers (DESIGN §13). */
function load(host: StoredHost): number {
  return host.liveSandboxes + pooledSlots(host.warmPool);
}

/** What one more sandbox of `adapter` would hold on the host: its limit and its request (0 when its worker did not measure). */
function memoryNeeded(host: StoredHost, adapter: string): { limit: number; request: number } {
  const key = adapter as keyof HostMemory['perSandboxBytes'];
  const limit = host.memory?.perSandboxBytes[key] ?? 0;
  // A row of an earlier build has no requests: its limits were what it reserved.
  return { limit, request: host.memory?.perSandboxRequestBytes?.[key] ?? limit };
}

/** The memory a host's live sandboxes and warm pool containers hold: their limits and their requests (DESIGN §12). */
export function memoryHeld(host: StoredHost): { limits: number; requests: number } {
  const counts = new Map<string, number>(Object.entries(host.liveByAdapter));
  for (const [adapter, target] of Object.entries(host.warmPool)) counts.set(adapter, (counts.get(adapter) ?? 0) + (target ?? 0));
  let limits = 0;
  let requests = 0;
  for (const [adapter, count] of counts) {
    const each = memoryNeeded(host, adapter);
    limits += count * each.limit;
    requests += count * each.request;
  }
  return { limits, requests };
}

/** The memory limits a host's live sandboxes and warm pool containers hold. */
export function memoryUsed(host: StoredHost): number {
  return memoryHeld(host).limits;
}

function memoryFits(host: StoredHost, adapter: string): boolean {
  return memoryShortfall(memoryHeld(host), memoryNeeded(host, adapter), host.memory) === undefined;
}

/** How full a host is: of its slots, its requests or its limits' bound, whichever is fuller. */
function usedShare(host: StoredHost): number {
  const slots = load(host) / host.capacity;
  if (host.memory === null) return slots;
  const held = memoryHeld(host);
  return Math.max(slots, held.requests / host.memory.capacityBytes, held.limits / limitCapacity(host.memory));
}

function describeNoRoom(adapter: string, serving: readonly StoredHost[], liveHostIds: ReadonlySet<string>): string {
  if (serving.length === 0) return `no registered docker host runs the ${adapter} adapter`;
  const usage = (host: StoredHost) => {
    const pooled = pooledSlots(host.warmPool);
    const slots = `${load(host)}/${host.capacity}${pooled > 0 ? ` with ${pooled} kept warm` : ''}`;
    const held = memoryHeld(host);
    const needed = memoryNeeded(host, adapter);
    const short = memoryShortfall(held, needed, host.memory);
    if (short === undefined || host.memory === null) return slots;
    if (short === 'requests') {
      return `${slots}, memory requests ${formatBytes(held.requests)} of ${formatBytes(host.memory.capacityBytes)} held and a ${adapter} sandbox requests ${formatBytes(needed.request)}`;
    }
    const overcommit = host.memory.overcommit ?? 1;
    return `${slots}, memory limits ${formatBytes(held.limits)} of ${formatBytes(limitCapacity(host.memory))} (${overcommit}× overcommit) held and a ${adapter} sandbox is limited to ${formatBytes(needed.limit)}`;
  };
  const each = serving.map((host) => `${host.hostId} ${liveHostIds.has(host.hostId) ? usage(host) : 'not live'}`);
  return `no live docker host has room for a ${adapter} sandbox (${each.join(', ')})`;
}
