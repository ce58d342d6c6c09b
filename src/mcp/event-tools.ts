import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { SandboxClient } from '../client/sandbox-client';
import { DEFAULT_EVENT_LIMIT, eventCursorSchema, eventLimitSchema, eventWaitSchema, MAX_EVENT_LIMIT, MAX_EVENT_WAIT_SECONDS } from '../domain/event-query';
import { EVENT_KINDS, EVENT_REASONS } from '../domain/events';
import { sandboxIdSchema } from '../domain/sandbox-request';
import { ERRORS, registerTool, structured } from './sandbox-tools';

/** sandbox_events, and the gateway's `GET /v1/events` query (its numbers come as text there). */
export const sandboxEventsInput = z
  .object({
    sandboxId: sandboxIdSchema.optional().describe("Only this sandbox's events (yours only: another's is NOT_FOUND, as one that never was)."),
    since: z.string().max(40).optional().describe('From this ISO 8601 time (2026-12-06T17:00:00Z), or this long ago: 90s, 10m, 2h, 1d. Default: all.'),
    after: eventCursorSchema.optional().describe('The `next` of an earlier answer: only what came after it (read on, page by page, or follow).'),
    limit: eventLimitSchema.optional().describe(`At most this many events, oldest first (default ${DEFAULT_EVENT_LIMIT}, at most ${MAX_EVENT_LIMIT}).`),
    waitSeconds: eventWaitSchema
      .optional()
      .describe(`With nothing to return yet, wait up to this many seconds (at most ${MAX_EVENT_WAIT_SECONDS}) for the next event, then answer (with none if none came).`),
  })
  .strict();

const DESCRIPTION = [
  'What changed in your sandboxes, IaC runs, snapshots and approvals, and why: events oldest first, as {"events": [...], "next": cursor}.',
  `Each event is {eventId, time, kind, sandboxId, runId, principal, actor, reason, from, to, detail}; kinds ${EVENT_KINDS.join(', ')}; reasons ${EVENT_REASONS.join(', ')} (ttl: its time ran out; agent: you).`,
  'Pass `next` back as `after` (with waitSeconds) to wait for what happens next, e.g. whether a sandbox was destroyed by its TTL.',
  ERRORS,
].join(' ');

/** Registers sandbox_events (DESIGN §19): the server's principal's events only. */
export function registerEventTools(server: McpServer, options: { readonly sandboxes: () => Promise<SandboxClient> }): void {
  const { sandboxes } = options;
  registerTool(
    server,
    'sandbox_events',
    { title: 'What happened to your sandboxes', description: DESCRIPTION, annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } },
    sandboxEventsInput,
    (args) => args.sandboxId ?? 'events',
    async (query) => structured({ ...(await (await sandboxes()).events(query)) }),
  );
}
