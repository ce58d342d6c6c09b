import type { Command } from 'commander';
import { z } from 'zod';
import { loadConfig } from '../../config/config';
import type { SweepReport } from '../../domain/leaks';
import type { LeakRecord } from '../../domain/store-commands';
import { durationSchema, parseCliOptions } from '../cli-options';
import { action, jsonOption } from '../command-action';
import { formatTable } from '../format/table';
import { printResult } from '../output';
import { withOperatorClient, withStoreClient } from '../temporal-clients';

const sweepOptionsSchema = z.object({
  wait: z.boolean().default(false),
  timeout: durationSchema.optional(),
  json: z.boolean().default(false),
});

function leakRows(leaks: readonly { kind: string; subject: string; sandboxId: string | null; detail: string }[]): string[][] {
  return leaks.map((leak) => [leak.kind, leak.subject.slice(0, 24), leak.sandboxId ?? '-', leak.detail]);
}

function formatReport(workflowId: string, report: SweepReport | undefined): string {
  if (report === undefined) return `sweep started: workflow ${workflowId} (add --wait for its report)`;
  const { counts } = report;
  const lines = [
    `sweep ${report.workflowId} at ${report.sweptAt}`,
    `  containers ${counts.containers}, orphans ${counts.orphans}, removed ${counts.removed}, stranded ${counts.stranded} (reconciled ${counts.reconciled}), live mismatches ${counts.liveMismatches}, outstanding ${counts.outstanding}` +
      (counts.snapshotsDeleted ? `, snapshots past their age deleted ${counts.snapshotsDeleted}` : ''),
  ];
  if (report.removed.length > 0) lines.push('', 'removed:', formatTable(['KIND', 'SUBJECT', 'SANDBOX', 'WHY'], leakRows(report.removed)));
  if (report.remaining.length > 0) lines.push('', 'remaining (see docs/operations.md):', formatTable(['KIND', 'SUBJECT', 'SANDBOX', 'DETAIL'], leakRows(report.remaining)));
  return lines.join('\n');
}

function formatLeaks(leaks: readonly LeakRecord[]): string {
  if (leaks.length === 0) return 'no outstanding leaks';
  return formatTable(
    ['KIND', 'SUBJECT', 'SANDBOX', 'FIRST SEEN', 'LAST SEEN', 'DETAIL'],
    leaks.map((leak) => [leak.kind, leak.subject.slice(0, 24), leak.sandboxId ?? '-', leak.firstSeen, leak.lastSeen, leak.detail]),
  );
}

/** `sweep` and `leaks`: the cleanup schedule on demand, and what it could not fix. */
export function registerCleanupCommands(program: Command): void {
  program
    .command('sweep')
    .description('run the cleanup schedule (sandboxplane-cleanup) now; --wait prints the sweep report')
    .option('--wait', 'wait for the sweep and print its report')
    .option('--timeout <duration>', 'how long --wait waits (default 2m)')
    .addOption(jsonOption())
    .action(
      action(async (raw) => {
        const options = parseCliOptions(sweepOptionsSchema, raw);
        const config = loadConfig();
        const { triggerSweep } = await import('../../client/cleanup-schedule.js');
        const outcome = await withOperatorClient(config, 'sweep', (client) =>
          triggerSweep(client, { wait: options.wait, ...(options.timeout !== undefined ? { timeoutMs: options.timeout * 1000 } : {}) }),
        );
        printResult({ json: options.json }, outcome.report ?? { workflowId: outcome.workflowId }, formatReport(outcome.workflowId, outcome.report));
      }),
    );

  program
    .command('leaks')
    .description('outstanding leaks the cleanup sweep found and would not (or could not) remove')
    .addOption(jsonOption())
    .action(
      action(async (raw) => {
        const leaks = await withStoreClient(loadConfig(), (store) => store.leaks());
        printResult({ json: raw.json === true }, { leaks }, formatLeaks(leaks));
      }),
    );
}
