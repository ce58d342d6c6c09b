import { MAX_EVENT_WAIT_SECONDS, type EventPage, type EventsQuery } from '../domain/event-query';
import type { PlaneEvent } from '../domain/events';

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
    const page = await read({ ...rest, ...(cursor !== undefined ? { after: cursor } : {}), ...(from !== undefined ? { since: from } : {}), waitSeconds: MAX_EVENT_WAIT_SECONDS });
    for (const event of page.events) yield event;
    cursor = page.next;
    // From here the cursor says where the reader is; a since would only hide events stamped by a late clock.
    from = undefined;
  }
}
