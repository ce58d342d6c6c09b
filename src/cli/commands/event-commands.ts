import { type Command, Option } from 'commander';
import { z } from 'zod';
import { loadConfig } from '../../config/config';
import { MAX_EVENT_LIMIT, sinceSchema } from '../../domain/event-query';
import type { PlaneEvent } from '../../domain/events';
import { sandboxIdSchema } from '../../domain/sandbox-request';
import { parseCliOptions } from '../cli-options';
import { action } from '../command-action';
import { formatEventLine } from '../format/event-format';
import { withSandboxClient } from '../temporal-clients';

const eventsOptionsSchema = z
  .object({
    sandbox: sandboxIdSchema.optional(),
    since: sinceSchema.optional(),
    follow: z.boolean().default(false),
    json: z.boolean().default(false),
  })
  .strict();

/** `sandboxctl events` (DESIGN §11 "Events", §19): what changed, why and by whom, oldest first; with --follow, as it happens. */
export function registerEventCommands(program: Command): void {
  program
    .command('events')
    .description(
      "what changed, why and by whom (sandboxes, IaC runs, snapshots, approvals), oldest first: your principal's (SANDBOXPLANE_PRINCIPAL), or everyone's for an operator; --follow prints each new one as it happens until Ctrl-C",
    )
    .option('--sandbox <id>', "only this sandbox's events")
    .option('--since <time>', 'from this ISO 8601 time, or this long ago (10m, 2h, 1d); default: all, or from now on with --follow')
    .option('--follow', 'after those, wait for new events and print each as it comes (each read waits in the plane: nothing polls)')
    .addOption(new Option('--json', 'print each event as one JSON line on stdout (errors as JSON on stderr)'))
    .action(
      action(async (raw) => {
        const options = parseCliOptions(eventsOptionsSchema, raw);
        const print = (event: PlaneEvent) => process.stdout.write(`${options.json ? JSON.stringify(event) : formatEventLine(event)}\n`);
        const filter = { ...(options.sandbox !== undefined ? { sandboxId: options.sandbox } : {}) };
        await withSandboxClient(loadConfig(), async (sandboxes) => {
          if (options.follow) {
            for await (const event of sandboxes.followEvents({ ...filter, ...(options.since !== undefined ? { since: options.since } : {}) })) print(event);
            return;
          }
          let shown = 0;
          let after: string | undefined;
          for (;;) {
            const page = await sandboxes.events({ ...filter, limit: MAX_EVENT_LIMIT, ...(after !== undefined ? { after } : options.since !== undefined ? { since: options.since } : {}) });
            page.events.forEach(print);
            shown += page.events.length;
            if (page.events.length < MAX_EVENT_LIMIT) break;
            after = page.next;
          }
          if (shown === 0 && !options.json) process.stdout.write('No events.\n');
        });
      }),
    );
}
