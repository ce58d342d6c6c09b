import type { Command } from 'commander';
import { z } from 'zod';
import { loadConfig } from '../../config/config';
import { principalSchema } from '../../domain/sandbox-request';
import { sinceDay, type UsageRow } from '../../domain/usage';
import { parseCliOptions } from '../cli-options';
import { action, jsonOption } from '../command-action';
import { formatTable } from '../format/table';
import { printResult } from '../output';
import { withSandboxClient } from '../temporal-clients';

const usageOptionsSchema = z.object({
  principal: principalSchema.optional(),
  since: z
    .string()
    .transform((text, ctx) => {
      const day = sinceDay(text, Date.now());
      if (day === undefined) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'must be a UTC day (2025-01-31), an ISO time, or a duration back from now (7d, 12h)' });
        return z.NEVER;
      }
      return day;
    })
    .optional(),
  json: z.boolean().default(false),
});

function formatBytes(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${(bytes / (1024 * 1024)).toFixed(1)} MiB` : `${bytes} B`;
}

function formatUsage(rows: readonly UsageRow[]): string {
  if (rows.length === 0) return 'No usage: no sandbox became READY in that time.';
  return formatTable(
    ['DAY', 'PRINCIPAL', 'SANDBOXES', 'SANDBOX-SECONDS', 'CPU-SECONDS', 'PEAK-MEMORY', 'REQUESTS'],
    rows.map((row) => [row.day, row.principal, String(row.sandboxes), String(row.sandboxSeconds), row.cpuSeconds.toFixed(3), formatBytes(row.peakMemoryBytes), String(row.requests)]),
  );
}

/** usage (DESIGN §11, §19): what sandboxes accrued, by principal and UTC day. */
export function registerUsageCommands(program: Command): void {
  program
    .command('usage')
    .description(
      "usage by principal and UTC day, newest first: sandboxes that became READY that day, their READY seconds (live ones up to now; paused time not counted), CPU seconds, the highest peak memory of one, and requests served to agents (moto counts them; floci and memory add 0). Your principal's (SANDBOXPLANE_PRINCIPAL), or everyone's for an operator",
    )
    .option('--principal <name>', "only this principal's (an operator's filter; a principal-bound caller sees its own only)")
    .option('--since <day>', 'from this UTC day on: 2025-01-31, an ISO time, or a duration back from now (7d) (default: every day kept)')
    .addOption(jsonOption())
    .action(
      action(async (raw) => {
        const options = parseCliOptions(usageOptionsSchema, raw);
        const rows = await withSandboxClient(loadConfig(), (sandboxes) =>
          sandboxes.usage({ ...(options.principal !== undefined ? { principal: options.principal } : {}), ...(options.since !== undefined ? { since: options.since } : {}) }),
        );
        printResult({ json: options.json }, { rows }, formatUsage(rows));
      }),
    );
}
