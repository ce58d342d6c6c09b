import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { SandboxClient } from '../client/sandbox-client';
import { sandboxIdSchema, sandboxRequestSchema } from '../domain/sandbox-request';
import { snapshotIdSchema } from '../domain/snapshots';
import { DEFAULT_WAIT_SECONDS, ERRORS, registerTool, structured } from './sandbox-tools';

export const snapshotSandboxInput = z.object({ id: sandboxIdSchema.describe('The READY sandbox to snapshot (its `id`).') }).strict();

export const deleteSnapshotInput = z.object({ snapshotId: snapshotIdSchema.describe('The snapshot to delete (yours only).') }).strict();

const request = sandboxRequestSchema.shape;

export const forkSandboxInput = z
  .object({
    snapshotId: snapshotIdSchema.describe('The snapshot to start from: the `snapshotId` snapshot_sandbox returned (yours only).'),
    id: request.id.describe('Optional id of the new sandbox, also the idempotency key. Omit it for a fresh sbx-… id (and always with count).'),
    count: z
      .number()
      .int()
      .min(1)
      .max(100)
      .optional()
      .describe(
        "Optional: fork into this many sandboxes at once (at most the plane's SANDBOXPLANE_FORK_MAX, 20 by default) to try approaches side by side; returns {sandboxes: [...]}, each READY or its own error.",
      ),
    services: request.services.optional().describe("The new sandbox's services (default: the snapshot's sandbox's); it must have every service the snapshot holds state of."),
    ttlSeconds: request.ttlSeconds.describe('How long the fork lives once READY, in seconds (default: the worker default; capped by policy).'),
    purpose: request.purpose.describe('Why you need it, for the reviewer and the audit trail.'),
    wait: z.enum(['accepted', 'ready']).default('ready').describe("'ready' (default): return once READY, with endpoint and clientConfig. 'accepted': return once screened."),
    timeoutSeconds: z.number().int().positive().max(3600).optional().describe(`Stop waiting after this many seconds (default ${DEFAULT_WAIT_SECONDS}) with WAIT_TIMEOUT; the fork goes on.`),
  })
  .strict();

const DESCRIPTIONS = {
  snapshot: [
    "Keep a READY sandbox's state now (buckets and their objects, queues, tables: everything made in its emulator) as a snapshot that only you can use.",
    'Returns {snapshotId, sandboxId, adapter, bytes, createdAt}. Fork it with fork_sandbox to try something risky on a copy, or keep it before a change.',
    "A moto sandbox can be snapshotted; Floci is SNAPSHOT_UNSUPPORTED, and a state over the plane's cap (32 MiB compressed by default) is SNAPSHOT_TOO_LARGE.",
    'Your snapshots have a quota (count and bytes): past it QUOTA_EXCEEDED; delete_snapshot frees room.',
    ERRORS,
  ].join(' '),
  fork: [
    'Start a new sandbox from a snapshot: its own emulator and its own credentials (those of the snapshot’s sandbox do not work there), with the same resources.',
    'Returns the new sandbox status; pass its clientConfig to an AWS SDK v3 client. Destroy it with destroy_sandbox when done.',
    'With count, that many sandboxes at once, each with its own credentials: {sandboxes: [status or {id, error}, ...]}. Each status names its parent (the snapshot’s sandbox) and root; a fork never outlives its root.',
    ERRORS,
  ].join(' '),
  delete: [
    'Delete one of your snapshots: it can no longer be forked or restored, and its room in your quota is free again.',
    'Returns what it was {snapshotId, sandboxId, adapter, bytes, createdAt}. The snapshot a PAUSED sandbox resumes from is INVALID_STATE.',
    ERRORS,
  ].join(' '),
} as const;

/** Registers snapshot_sandbox, fork_sandbox and delete_snapshot (DESIGN §15), as the server's principal. */
export function registerSnapshotTools(server: McpServer, options: { readonly sandboxes: () => Promise<SandboxClient>; readonly actor: () => string }): void {
  const { sandboxes, actor } = options;

  registerTool(
    server,
    'snapshot_sandbox',
    { title: 'Snapshot a sandbox', description: DESCRIPTIONS.snapshot, annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false } },
    snapshotSandboxInput,
    (args) => args.id,
    async ({ id }) => structured({ ...(await (await sandboxes()).snapshot(id, { actor: actor() })) }),
  );

  registerTool(
    server,
    'fork_sandbox',
    { title: 'Fork a snapshot into a new sandbox', description: DESCRIPTIONS.fork, annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false } },
    forkSandboxInput,
    (args) => args.id ?? args.snapshotId,
    async ({ snapshotId, wait, timeoutSeconds, count, ...rest }) => {
      const waiting = { wait, timeoutMs: (timeoutSeconds ?? DEFAULT_WAIT_SECONDS) * 1000 };
      const client = await sandboxes();
      if (count !== undefined) return structured({ ...(await client.fork(snapshotId, { ...rest, count }, waiting)) });
      return structured({ ...(await client.fork(snapshotId, rest, waiting)) });
    },
  );

  registerTool(
    server,
    'delete_snapshot',
    { title: 'Delete a snapshot', description: DESCRIPTIONS.delete, annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false } },
    deleteSnapshotInput,
    (args) => args.snapshotId,
    async ({ snapshotId }) => structured({ ...(await (await sandboxes()).deleteSnapshot(snapshotId, { actor: actor() })) }),
  );
}
