import { MAX_EVENT_WAIT_SECONDS, type EventPage, type EventsQuery } from '../domain/event-query';
import type { PlaneEvent } from '../domain/events';

/**
 * An empty answer sooner than this came from a store with no room for one more waiting
 * read (its bound); the follower waits {@link BUSY_PAUSE_MS} before it reads again rather than
 * asking again at once.
 */
const EARLY_EMPTY_MS = 1_000;
const BUSY_PAUSE_MS = 2_000;

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** What `followEvents` takes: a query without its wait (each read waits as long as it may), and a signal that ends the follow. */
export type FollowQuery = Omit<EventsQuery, 'waitSeconds'> & { readonly signal?: AbortSignal };

/**
 * Every event from `since` (by default: from now on), or `after` a cursor, as it comes:
 * each read waits in the plane for the next event, so nothing polls. Ends when `signal`
 * aborts, at the latest once the read under way answers (within 20 s).
 */
export async function* followEvents(read: (query: EventsQuery) => Promise<EventPage>, query: FollowQuery): AsyncGenerator<PlaneEvent, void, undefined> {
  const { signal, since, after, ...rest } = query;
  let cursor = after;
  let from: EventsQuery['since'] = cursor === undefined ? (since ?? new Date()) : since;
  while (signal?.aborted !== true) {
    const asked = Date.now();
    const page = await read({ ...rest, ...(cursor !== undefined ? { after: cursor } : {}), ...(from !== undefined ? { since: from } : {}), waitSeconds: MAX_EVENT_WAIT_SECONDS });
    for (const event of page.events) yield event;
    cursor = page.next;
    // From here the cursor says where the reader is; a since would only hide events stamped by a late clock.
    from = undefined;
    if (page.events.length === 0 && Date.now() - asked < EARLY_EMPTY_MS) await pause(BUSY_PAUSE_MS, signal);
  }
}
