import { performance } from 'node:perf_hooks';
import type { BrokerLogger } from '../src/docker';

/** One Engine API call the broker made, as its own log line reports it. */
export interface EngineCall {
  readonly operation: string;
  readonly ms: number;
  /** performance.now() when the answer came. */
  readonly endedAt: number;
}

/**
 * The broker logs every engine call before and after (`docker create done`, `docker stop
 * answered 304`, …): as its logger, this keeps the "after" lines, so a bench can say how
 * many calls a create took and when each ended, without touching the broker.
 */
export class EngineCallLog implements BrokerLogger {
  private calls: EngineCall[] = [];

  info(obj: object, msg: string): void {
    this.record(obj, msg);
  }

  warn(obj: object, msg: string): void {
    this.record(obj, msg);
  }

  debug(obj: object, msg: string): void {
    this.record(obj, msg);
  }

  /** The calls since the last take, oldest first; the log starts empty again. */
  take(): EngineCall[] {
    const calls = this.calls;
    this.calls = [];
    return calls;
  }

  private record(obj: object, msg: string): void {
    const answered = /^docker (.+?) (done|answered \d+|failed)$/.exec(msg);
    if (answered?.[1] === undefined) return;
    const ms = (obj as { ms?: unknown }).ms;
    this.calls.push({ operation: answered[1], ms: typeof ms === 'number' ? ms : 0, endedAt: performance.now() });
  }
}

/** `{ create: 1, start: 1, inspect: 2 }`: how many calls of each operation. */
export function countByOperation(calls: readonly EngineCall[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const call of calls) counts[call.operation] = (counts[call.operation] ?? 0) + 1;
  return counts;
}

/** `{ create: 12.5, start: 180 }`: the engine's time per operation, its calls' durations summed. */
export function msByOperation(calls: readonly EngineCall[]): Record<string, number> {
  const ms: Record<string, number> = {};
  for (const call of calls) ms[call.operation] = (ms[call.operation] ?? 0) + call.ms;
  return ms;
}
