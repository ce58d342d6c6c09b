/**
 * Reading events (DESIGN §11 "Events", §19): where a reader starts (`since` a time or a
 * duration ago, or `after` a cursor a read returned) and what one read answers. Shared
 * by the store command, the CLI, the gateway, MCP and the SDK, so all read alike.
 */
import { z } from 'zod';
import { parseDuration } from './duration';
import type { PlaneEvent, StoredEvent } from './events';
import { sandboxIdSchema } from './sandbox-request';

/** Events one read returns when the caller names no limit. */
export const DEFAULT_EVENT_LIMIT = 100;
/** At most this many events a read: a page stays small in the store command's history. */
export const MAX_EVENT_LIMIT = 500;
/** How long one read may wait for an event to come (the store command's activity waits, never a caller's timer). */
export const MAX_EVENT_WAIT_SECONDS = 20;

const SINCE_MESSAGE = 'must be an ISO 8601 time (2026-12-06T17:00:00Z) or a duration ago (90s, 10m, 2h, 1d)';
const ISO_TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** `text` (an ISO time, or a duration before `now`) as the store writes times (`toISOString`); `undefined` when it is neither. */
export function sinceIso(text: string, now: Date = new Date()): string | undefined {
  const trimmed = text.trim();
  const seconds = parseDuration(trimmed);
  if (seconds !== undefined) return new Date(now.getTime() - seconds * 1000).toISOString();
  if (!ISO_TIME.test(trimmed)) return undefined;
  const time = Date.parse(trimmed);
  return Number.isNaN(time) ? undefined : new Date(time).toISOString();
}

/** `--since`, `?since=`, `since`: an ISO time or a duration ago, as an ISO time. */
export const sinceSchema = z.string().transform((text, ctx) => {
  const iso = sinceIso(text);
  if (iso === undefined) {
    ctx.addIssue({ code: z.ZodIssueCode.custom, message: SINCE_MESSAGE });
    return z.NEVER;
  }
  return iso;
});

/** A time as the store writes it, for the store command (the caller has resolved any duration). */
export const isoTimeSchema = z
  .string()
  .max(40)
  .refine((text) => ISO_TIME.test(text) && !Number.isNaN(Date.parse(text)), { message: 'must be an ISO 8601 time' });

const CURSOR_PREFIX = 'evc_';
const CURSOR = /^evc_[0-9a-z]{1,11}$/;

/** The cursor after the event at `seq`: opaque to callers, who only hand it back. */
export function eventCursor(seq: number): string {
  return `${CURSOR_PREFIX}${seq.toString(36)}`;
}

/** The place in the order a cursor stands for. */
export function seqOfCursor(cursor: string): number {
  return parseInt(cursor.slice(CURSOR_PREFIX.length), 36);
}

export const eventCursorSchema = z.string().regex(CURSOR, 'must be a cursor an earlier read returned (its `next`), e.g. evc_1a');

export const eventLimitSchema = z.number().int('must be a whole number').min(1, 'must be at least 1').max(MAX_EVENT_LIMIT, `must be at most ${MAX_EVENT_LIMIT}`);

export const eventWaitSchema = z.number().int('must be whole seconds').min(0, 'must be at least 0').max(MAX_EVENT_WAIT_SECONDS, `must be at most ${MAX_EVENT_WAIT_SECONDS}`);

/** One read of events: oldest first, and where the next read starts. */
export interface EventPage {
  readonly events: PlaneEvent[];
  /** Hand it back as `after` to read what comes next (follow): it moves past every event this read saw, shown or not. */
  readonly next: string;
}

/** An event as callers see it: its place in the order is the store's, carried by cursors only. */
export function publicEvent({ seq: _seq, ...event }: StoredEvent): PlaneEvent {
  return event;
}

/** What a reader of events asks for (the SDK, MCP, the gateway's query). */
export interface EventsQuery {
  /** Only this sandbox's events (NOT_FOUND for another principal's). */
  readonly sandboxId?: string;
  /** From this time on: an ISO 8601 time, a duration ago (`10m`, `2h`, `1d`), or a `Date`. */
  readonly since?: string | Date;
  /** After this cursor: the `next` of an earlier read. */
  readonly after?: string;
  /** At most this many events (default 100, at most 500). */
  readonly limit?: number;
  /** With nothing to return yet, wait up to this many seconds (at most 20) for an event to come. */
  readonly waitSeconds?: number;
}

/** {@link EventsQuery} checked: `since` becomes `sinceIso`. */
export const eventsQuerySchema = z
  .object({
    sandboxId: sandboxIdSchema.optional(),
    since: sinceSchema.optional(),
    after: eventCursorSchema.optional(),
    limit: eventLimitSchema.optional(),
    waitSeconds: eventWaitSchema.optional(),
  })
  .strict()
  .transform(({ since, ...rest }) => ({ ...rest, ...(since !== undefined ? { sinceIso: since } : {}) }));
