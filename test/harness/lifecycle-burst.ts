import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { SandboxClient } from '../../src/client/sandbox-client';
import type { SandboxState } from '../../src/domain/sandbox-states';

/** How one create → READY → destroy went. */
export interface LifecycleOutcome {
  readonly id: string;
  /** What `destroy` answered; `undefined` when a step threw. */
  readonly finalState: SandboxState | undefined;
  /** `create: …` or `destroy: …` when that step threw. */
  readonly error: string | undefined;
  /** create → READY as this agent saw it, ms; `undefined` when the create threw. */
  readonly readyMs?: number;
}

export interface LifecycleBurst {
  readonly outcomes: readonly LifecycleOutcome[];
  readonly elapsedMs: number;
  /** The outcomes that threw or did not end DESTROYED. */
  readonly failures: readonly LifecycleOutcome[];
}

async function oneLifecycle(sandboxes: SandboxClient, id: string, principal: string): Promise<LifecycleOutcome> {
  const started = performance.now();
  try {
    await sandboxes.create({ id, principal, services: ['s3'] }, { wait: 'ready' });
  } catch (err) {
    return { id, finalState: undefined, error: `create: ${(err as Error).message}` };
  }
  const readyMs = performance.now() - started;
  try {
    const status = await sandboxes.destroy(id);
    return { id, finalState: status.state, error: undefined, readyMs };
  } catch (err) {
    return { id, finalState: undefined, error: `destroy: ${(err as Error).message}`, readyMs };
  }
}

/**
 * `count` full lifecycles of memory sandboxes through the SDK, all started at once, as
 * many agents would. Never throws for a lifecycle that fails: the caller judges the outcomes.
 */
export async function concurrentLifecycles(sandboxes: SandboxClient, count: number, principal: string): Promise<LifecycleBurst> {
  // A run-unique prefix: a repeated run on the same server must not join finished lifecycles.
  const prefix = `${principal}-${randomBytes(4).toString('hex')}`;
  const started = performance.now();
  const outcomes = await Promise.all(Array.from({ length: count }, (_, index) => oneLifecycle(sandboxes, `${prefix}-${index}`, principal)));
  const elapsedMs = performance.now() - started;
  return { outcomes, elapsedMs, failures: outcomes.filter((outcome) => outcome.error !== undefined || outcome.finalState !== 'DESTROYED') };
}

/** One line per distinct failure, most frequent first: `12× create: query timed out …`. */
export function describeFailures(failures: readonly LifecycleOutcome[]): string[] {
  const counts = new Map<string, number>();
  for (const failure of failures) {
    const reason = failure.error ?? `ended ${failure.finalState ?? 'nowhere'}`;
    counts.set(reason, (counts.get(reason) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1]).map(([reason, count]) => `${count}× ${reason}`);
}
