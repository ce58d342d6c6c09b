import type { Command } from 'commander';
import { z } from 'zod';
import { loadConfig } from '../../config/config';
import { packageVersion } from '../../config/paths';
import { AUDIT_EXPORT_FORMATS, describeBadRow, parseSince, type AuditVerification } from '../../domain/audit-evidence';
import { SandboxPlaneError } from '../../domain/errors';
import { toOcsfApiActivity } from '../../domain/ocsf-api-activity';
import { oneOf, parseCliOptions } from '../cli-options';
import { action, jsonOption } from '../command-action';
import { printResult, reportError } from '../output';
import { withStoreClient } from '../temporal-clients';

const verifyOptionsSchema = z.object({ json: z.boolean().default(false) });

const exportOptionsSchema = z.object({
  since: z
    .string()
    .transform((text, ctx) => {
      try {
        return parseSince(text);
      } catch {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'must be an ISO 8601 time (2025-01-31T12:00:00Z) or a duration back from now (90s, 30m, 2h, 7d)' });
        return z.NEVER;
      }
    })
    .optional(),
  format: oneOf(AUDIT_EXPORT_FORMATS).default('jsonl'),
  json: z.boolean().optional(),
});

function formatVerification(result: AuditVerification): string {
  const streams = result.streams.map((head) => `  ${head.stream}: ${head.rows} rows${head.lastSeq !== null ? `, last ${head.lastSeq} (hash ${head.head ?? 'none'})` : ''}`);
  return [result.ok ? `audit trail verifies: ${result.rows} rows, every one chained to the one before it` : `audit trail does NOT verify (${result.rows} rows)`, ...streams].join('\n');
}

/** AUDIT_TAMPERED (exit 3), naming the first bad row. */
function tampered(result: AuditVerification): SandboxPlaneError {
  const bad = result.firstBad;
  return new SandboxPlaneError('AUDIT_TAMPERED', bad === null ? 'the audit trail does not verify' : `the audit trail does not verify: ${describeBadRow(bad)}`, {
    details: { firstBad: bad },
  });
}

/** Writes one line, waiting when stdout is full: an export of any length streams through a pipe. */
async function writeLine(line: string): Promise<void> {
  if (!process.stdout.write(`${line}\n`)) await new Promise<void>((resolve) => process.stdout.once('drain', () => resolve()));
}

/**
 * `audit verify` and `audit export` (DESIGN §11, §19), under `audit ID`: the tamper-evident
 * trail, checked and exported by the store role (the chain key never leaves it). Operator commands.
 */
export function registerAuditCommands(program: Command): void {
  const audit = program.commands.find((command) => command.name() === 'audit');
  if (audit === undefined) throw new Error('register `audit ID` before its subcommands');

  audit
    .command('verify')
    .description(
      "check the whole audit trail's hash chains (keyed with the store's key, outside the SQLite file): exit 0 when every row is as written, 3 (AUDIT_TAMPERED) naming the first row edited, removed, reordered or written past the store",
    )
    .addOption(jsonOption())
    .action(
      action(async (raw) => {
        const options = parseCliOptions(verifyOptionsSchema, raw);
        const result = await withStoreClient(loadConfig(), (store) => store.verifyAudit());
        printResult({ json: options.json }, result, formatVerification(result));
        return result.ok ? 0 : reportError({ json: options.json }, tampered(result));
      }),
    );

  audit
    .command('export')
    .description('write every audit row to stdout for a SIEM, one JSON object a line: the row with its chain hashes (jsonl), or an OCSF API Activity event (class 6003)')
    .option('--since <time>', 'only rows at or after this ISO 8601 time, or this long ago (90s, 30m, 2h, 7d)')
    .option('--format <format>', `${AUDIT_EXPORT_FORMATS.join('|')}`, 'jsonl')
    .addOption(jsonOption())
    .action(
      action(async (raw) => {
        const options = parseCliOptions(exportOptionsSchema, raw);
        const product = { version: packageVersion() };
        await withStoreClient(loadConfig(), async (store) => {
          for await (const record of store.exportAudit(options.since !== undefined ? { since: options.since } : {})) {
            await writeLine(JSON.stringify(options.format === 'ocsf' ? toOcsfApiActivity(record, product) : record));
          }
        });
      }),
    );
}
