import type { Command } from 'commander';
import { z } from 'zod';
import { loadConfig } from '../../config/config';
import { sandboxIdSchema } from '../../domain/sandbox-request';
import { snapshotIdSchema, type SnapshotSummary } from '../../domain/snapshots';
import { parseCliArgument, parseCliOptions } from '../cli-options';
import { action, jsonOption } from '../command-action';
import { formatStatus } from '../format/sandbox-format';
import { formatTable } from '../format/table';
import { printResult } from '../output';
import { withSandboxClient } from '../temporal-clients';
import { actorOption, actorSchema } from './sandbox-commands';
import { sandboxAction } from './status-command';

const snapshotOptionsSchema = z.object({ actor: actorSchema, json: z.boolean().default(false) });
const restoreOptionsSchema = z.object({ snapshot: snapshotIdSchema, actor: actorSchema, json: z.boolean().default(false) });
const listOptionsSchema = z.object({ sandbox: sandboxIdSchema.optional(), json: z.boolean().default(false) });
const deleteOptionsSchema = snapshotOptionsSchema;

function formatSnapshot(snapshot: SnapshotSummary): string {
  return [
    `snapshot ${snapshot.snapshotId} of sandbox ${snapshot.sandboxId} (${snapshot.adapter}), ${snapshot.bytes} bytes, taken ${snapshot.createdAt}`,
    `Fork it:    sandboxctl create --from-snapshot ${snapshot.snapshotId} --wait`,
    `Restore it: sandboxctl restore ${snapshot.sandboxId} --snapshot ${snapshot.snapshotId}`,
  ].join('\n');
}

function formatSnapshotList(snapshots: readonly SnapshotSummary[]): string {
  if (snapshots.length === 0) return 'No snapshots. Take one of a READY sandbox with `sandboxctl snapshot ID`.';
  return formatTable(
    ['SNAPSHOT', 'SANDBOX', 'ADAPTER', 'BYTES', 'CREATED'],
    snapshots.map((s) => [s.snapshotId, s.sandboxId, s.adapter, String(s.bytes), s.createdAt]),
  );
}

/** snapshot, snapshots (and snapshots delete), restore, pause, resume (DESIGN §11, "Snapshots"); forks are `create --from-snapshot`. */
export function registerSnapshotCommands(program: Command): void {
  program
    .command('snapshot')
    .description("keep a READY sandbox's emulator state now (yours only): fork it with `create --from-snapshot`, or put it back with `restore`")
    .argument('<id>', 'sandbox id')
    .addOption(actorOption())
    .addOption(jsonOption())
    .action(
      sandboxAction(snapshotOptionsSchema, async (id, options) => {
        const snapshot = await withSandboxClient(loadConfig(), (sandboxes) => sandboxes.snapshot(id, { actor: options.actor }));
        printResult({ json: options.json }, snapshot, formatSnapshot(snapshot));
      }),
    );

  const snapshots = program
    .command('snapshots')
    .description("snapshots, newest first: your principal's (SANDBOXPLANE_PRINCIPAL), or everyone's for an operator; `snapshots delete ID` deletes one")
    .option('--sandbox <id>', 'only those of this sandbox')
    .addOption(jsonOption())
    .action(
      action(async (raw) => {
        const options = parseCliOptions(listOptionsSchema, raw);
        const snapshots = await withSandboxClient(loadConfig(), (sandboxes) => sandboxes.snapshots(options.sandbox !== undefined ? { sandboxId: options.sandbox } : {}));
        printResult({ json: options.json }, { snapshots }, formatSnapshotList(snapshots));
      }),
    );

  snapshots
    .command('delete')
    .description('delete a snapshot (yours; any, for an operator): it can no longer be forked or restored, and its room in the quota is free. Not the one a PAUSED sandbox resumes from')
    .argument('<snapshot-id>', 'snapshot id (`sandboxctl snapshots` lists them)')
    .addOption(actorOption())
    .addOption(jsonOption())
    .action(
      action(async (raw, args) => {
        const snapshotId = parseCliArgument(snapshotIdSchema, args[0], 'SNAPSHOT_ID');
        const options = parseCliOptions(deleteOptionsSchema, raw);
        const deleted = await withSandboxClient(loadConfig(), (sandboxes) => sandboxes.deleteSnapshot(snapshotId, { actor: options.actor }));
        printResult({ json: options.json }, deleted, `deleted snapshot ${deleted.snapshotId} of sandbox ${deleted.sandboxId} (${deleted.bytes} bytes, taken ${deleted.createdAt})`);
      }),
    );

  program
    .command('restore')
    .description("put a snapshot's state back into a READY sandbox; returns once it is there (a snapshot of another sandbox of yours brings new credentials)")
    .argument('<id>', 'sandbox id')
    .option('--snapshot <id>', 'the snapshot to restore (required): `sandboxctl snapshots` lists yours')
    .addOption(actorOption())
    .addOption(jsonOption())
    .action(
      sandboxAction(restoreOptionsSchema, async (id, options) => {
        const status = await withSandboxClient(loadConfig(), (sandboxes) => sandboxes.restore(id, options.snapshot, { actor: options.actor }));
        printResult({ json: options.json }, status, formatStatus(status));
      }),
    );

  const changes = {
    pause: "snapshot a READY sandbox, then remove its container (its host's capacity is freed); returns once PAUSED. Its TTL keeps running",
    resume: 'put a PAUSED sandbox back into a new container from its snapshot; returns once READY (its endpoint may have moved: read it from the output)',
  } as const;
  for (const [name, description] of Object.entries(changes)) {
    program
      .command(name)
      .description(description)
      .argument('<id>', 'sandbox id')
      .addOption(actorOption())
      .addOption(jsonOption())
      .action(
        sandboxAction(snapshotOptionsSchema, async (id, options) => {
          const change = { actor: options.actor };
          const status = await withSandboxClient(loadConfig(), (sandboxes) => (name === 'pause' ? sandboxes.pause(id, change) : sandboxes.resume(id, change)));
          printResult({ json: options.json }, status, formatStatus(status));
        }),
      );
  }
}
