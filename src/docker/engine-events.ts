/**
 * The engine's event stream (`GET /events`), followed for as long as a worker runs: the
 * engine says when a container dies, so nothing has to poll for it (DESIGN §2, the
 * health watch). The stream is reconnected after it breaks (an engine restart) and asks
 * for what it missed with `since`.
 */
import { z } from 'zod';

/** One container event, as the plane reads it. */
export interface ContainerEvent {
  readonly action: string;
  readonly containerId: string;
  /** The container's labels and name (the engine puts both in the actor's attributes). */
  readonly attributes: Readonly<Record<string, string>>;
  /** Seconds since the epoch, as the engine counts them. */
  readonly time: number;
}

const eventSchema = z.object({
  Type: z.string(),
  Action: z.string(),
  Actor: z.object({ ID: z.string().min(1), Attributes: z.record(z.string(), z.string()).default({}) }),
  time: z.number().int().nonnegative(),
});

/** What a follower needs of the engine: a stream of newline-separated JSON events since a time. */
export interface EventSource {
  events(options: { since: number; filters: Record<string, string[]> }): Promise<NodeJS.ReadableStream>;
}

export interface FollowOptions {
  readonly source: EventSource;
  /** Only containers carrying these labels (`key=value`), and only these actions. */
  readonly labels: readonly string[];
  readonly actions: readonly string[];
  readonly onEvent: (event: ContainerEvent) => void;
  readonly onError: (err: unknown, retryInMs: number) => void;
  /**
   * Called each time the stream is (re)connected, before its first event: an engine that
   * was restarted does not replay what happened while it was away (a container that died
   * meanwhile is found exited, with no `die`), so this is where to look at the engine itself.
   */
  readonly onConnected?: () => void;
  /** The first connection's `since`, in seconds; now by default. */
  readonly since?: number;
  readonly now?: () => number;
}

/** Reads one stream to its end: each complete line is an event; a line the schema refuses is skipped. */
async function readEvents(stream: NodeJS.ReadableStream, onEvent: (event: ContainerEvent) => void, stopped: () => boolean): Promise<void> {
  let pending = '';
  for await (const chunk of stream as AsyncIterable<Buffer | string>) {
    if (stopped()) return;
    pending += chunk.toString();
    let newline = pending.indexOf('\n');
    while (newline >= 0) {
      const line = pending.slice(0, newline).trim();
      pending = pending.slice(newline + 1);
      newline = pending.indexOf('\n');
      if (line === '') continue;
      let json: unknown;
      try {
        json = JSON.parse(line);
      } catch {
        continue;
      }
      const parsed = eventSchema.safeParse(json);
      if (!parsed.success || parsed.data.Type !== 'container') continue;
      onEvent({ action: parsed.data.Action, containerId: parsed.data.Actor.ID, attributes: parsed.data.Actor.Attributes, time: parsed.data.time });
    }
  }
}

/**
 * Follows the engine's container events until `stop()`. After a break it connects again
 * (1 s, doubling to 30 s) with `since` the last event's second, so an event the engine
 * still holds is seen at least once; the same second's events may come twice, which a
 * handler must bear. What an engine restart lost is for `onConnected` to find.
 */
export function followContainerEvents(options: FollowOptions): { stop(): void } {
  const now = options.now ?? (() => Math.floor(Date.now() / 1000));
  let since = options.since ?? now();
  let stopped = false;
  let current: NodeJS.ReadableStream | undefined;
  let wake: (() => void) | undefined;
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      timer.unref();
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  void (async () => {
    let backoffMs = 1_000;
    while (!stopped) {
      try {
        current = await options.source.events({ since, filters: { type: ['container'], event: [...options.actions], label: [...options.labels] } });
        if (stopped) break;
        backoffMs = 1_000;
        options.onConnected?.();
        await readEvents(
          current,
          (event) => {
            since = Math.max(since, event.time);
            options.onEvent(event);
          },
          () => stopped,
        );
        if (stopped) break;
        throw new Error('the engine closed its event stream');
      } catch (err) {
        if (stopped) break;
        options.onError(err, backoffMs);
        await sleep(backoffMs);
        backoffMs = Math.min(30_000, backoffMs * 2);
      }
    }
  })();
  return {
    stop() {
      stopped = true;
      (current as { destroy?: () => void } | undefined)?.destroy?.();
      wake?.();
    },
  };
}
