import type { PlaneEvent } from '../../domain/events';

/** `READY→DESTROYED`, `READY` (no change of state), or `-`. */
function transition(event: PlaneEvent): string {
  if (event.from === null && event.to === null) return '-';
  if (event.from === event.to) return event.to ?? '-';
  return `${event.from ?? '-'}→${event.to ?? '-'}`;
}

/** One event as a line for people: `2026-12-06T17:01:02Z  sandbox.destroyed  sbx-1  READY→DESTROYED  ttl  (timer)`. */
export function formatEventLine(event: PlaneEvent): string {
  const time = event.time.replace(/\.\d+Z$/, 'Z');
  return [time, event.kind, event.sandboxId ?? event.runId ?? '-', transition(event), event.reason, `(${event.actor})`].join('  ');
}
