import { Context } from '@temporalio/activity';
import { SandboxPlaneError } from '../domain/errors';
import { eventCursor, publicEvent, seqOfCursor, type EventPage } from '../domain/event-query';
import type { StoreCommand } from '../domain/store-commands';
import type { Store } from '../store';
import type { EventQuery } from '../store/event-repository';

type EventsCommand = Extract<StoreCommand, { kind: 'events' }>;

/**
 * Reads that may wait at once. A waiting read holds one of the store worker's activity
 * slots (100): past this many, a read answers at once with what it has, so followers can
 * never take the slots screening and the audit trail need (agents reach this through the
 * gateway's long polls); their clients then wait a little before they read again.
 */
export const MAX_WAITING_READS = 32;
let waitingReads = 0;

/**
 * Events for a store command (DESIGN §19), oldest first. With nothing to return yet and
 * `waitSeconds`, it waits here, in the store role's activity, until the audit tap says a
 * row was written that gives the reader an event, or the wait is over: a follower's next
 * read is one call that answers when something happens, never a poll of the file.
 */
export async function readEvents(store: Store, command: EventsCommand, signal?: AbortSignal): Promise<EventPage> {
  const { principal, sandboxId, sinceIso, after, limit, waitSeconds } = command;
  if (sandboxId !== undefined) {
    const owner = store.sandboxes.principalOf(sandboxId);
    // Another principal's sandbox reads exactly like one that never was (DESIGN §18), as `audit` says it.
    if (owner === undefined || (principal !== undefined && owner !== principal)) {
      throw new SandboxPlaneError('NOT_FOUND', `no sandbox ${sandboxId} in the projection`, {
        hint: 'Check the id (`sandboxctl list` shows the sandboxes).',
        details: { sandboxId },
      });
    }
  }
  const query: EventQuery = {
    limit,
    ...(after !== undefined ? { afterSeq: seqOfCursor(after) } : {}),
    ...(sinceIso !== undefined ? { sinceIso: new Date(sinceIso).toISOString() } : {}),
    ...(sandboxId !== undefined ? { sandboxId } : {}),
    ...(principal !== undefined ? { principal } : {}),
  };
  const page = (): EventPage => {
    // Read together (the store's reads are synchronous): no event lands between the page and the newest place.
    const events = store.events.list(query);
    const newest = store.events.lastSeq();
    const last = events.at(-1)?.seq;
    // A full page stops at its last event; a short one has seen everything up to the newest.
    const next = eventCursor(events.length === limit && last !== undefined ? last : Math.max(newest, query.afterSeq ?? 0));
    return { events: events.map(publicEvent), next };
  };
  const first = page();
  if (first.events.length > 0 || waitSeconds === 0 || waitingReads >= MAX_WAITING_READS) return first;
  waitingReads += 1;
  try {
    return await untilEvents(store, page, waitSeconds * 1000, signal);
  } finally {
    waitingReads -= 1;
  }
}

/** Reads again each time an audit row is written, until a read has events or `ms` is over (then one last read). */
function untilEvents(store: Store, page: () => EventPage, ms: number, signal?: AbortSignal): Promise<EventPage> {
  return new Promise((resolve, reject) => {
    let done = false;
    const finish = (answer: () => EventPage) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      stop();
      signal?.removeEventListener('abort', atEnd);
      try {
        resolve(answer());
      } catch (err) {
        // The store closed meanwhile (the worker stops): the caller hears it and reads again.
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    };
    const atEnd = () => finish(page);
    const stop = store.audits.listen(() => {
      const found = page();
      if (found.events.length > 0) finish(() => found);
    });
    const timer = setTimeout(atEnd, ms);
    signal?.addEventListener('abort', atEnd, { once: true });
  });
}

/** The running activity's cancellation (a worker that shuts down cancels it): a waiting read then answers at once. None outside an activity. */
export function activityCancellation(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined;
  }
}
