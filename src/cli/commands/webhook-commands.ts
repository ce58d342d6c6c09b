import type { Command } from 'commander';
import { z } from 'zod';
import { loadConfig } from '../../config/config';
import { principalSchema } from '../../domain/sandbox-request';
import { webhookIdSchema, webhookUrlSchema, type WebhookDelivery, type WebhookRecord } from '../../domain/webhooks';
import { eventFilterSchema } from '../../domain/events';
import { parseCliArgument, parseCliOptions, wholeNumberSchema } from '../cli-options';
import { action, jsonOption } from '../command-action';
import { formatTable } from '../format/table';
import { printResult } from '../output';
import { withStoreClient } from '../temporal-clients';
import { registerStoreList } from './store-list-command';

const addOptionsSchema = z
  .object({
    events: z
      .string()
      .transform((text) =>
        text
          .split(',')
          .map((kind) => kind.trim())
          .filter((kind) => kind !== ''),
      )
      .pipe(z.array(eventFilterSchema).max(40))
      .optional(),
    principal: principalSchema.optional(),
    json: z.boolean().optional(),
  })
  .strict();

const deliveriesOptionsSchema = z.object({ limit: wholeNumberSchema(1).pipe(z.number().max(1000, 'must be at most 1000')).optional(), json: z.boolean().optional() }).strict();

function formatWebhooks(webhooks: readonly WebhookRecord[]): string {
  if (webhooks.length === 0) return 'No webhooks: `sandboxctl webhooks add URL` registers one.';
  return formatTable(
    ['WEBHOOK ID', 'URL', 'EVENTS', 'PRINCIPAL', 'CREATED'],
    webhooks.map((webhook) => [webhook.webhookId, webhook.url, webhook.events.length === 0 ? 'all' : webhook.events.join(','), webhook.principal ?? 'all', webhook.createdAt]),
  );
}

function formatDeliveries(webhookId: string, deliveries: readonly WebhookDelivery[]): string {
  if (deliveries.length === 0) return `No deliveries to ${webhookId} yet.`;
  return formatTable(
    ['AT', 'EVENT ID', 'ATTEMPT', 'OUTCOME', 'STATUS', 'MS', 'ERROR'],
    deliveries.map((delivery) => [
      delivery.at,
      delivery.eventId,
      String(delivery.attempt),
      delivery.outcome,
      delivery.status === null ? '-' : String(delivery.status),
      String(delivery.durationMs),
      delivery.error ?? '',
    ]),
  );
}

/** webhooks add, list, remove, deliveries: operators' endpoints that receive events (DESIGN §19). */
export function registerWebhookCommands(program: Command): void {
  const webhooks = program.command('webhooks').description('endpoints that receive events as signed Standard Webhooks deliveries; operators only');

  webhooks
    .command('add')
    .description('register URL to receive events (https://, or http:// to loopback); prints its signing secret once')
    .argument('<url>', 'where each event is POSTed')
    .option('--events <kinds>', 'comma-separated kinds or families to send, e.g. sandbox.destroyed,iac.* (default: all)')
    .option('--principal <p>', "only this principal's events (default: everyone's)")
    .addOption(jsonOption())
    .action(
      action(async (raw, args) => {
        const url = parseCliArgument(webhookUrlSchema, args[0], 'URL');
        const options = parseCliOptions(addOptionsSchema, raw);
        const added = await withStoreClient(loadConfig(), (store) =>
          store.addWebhook({ url, kinds: options.events ?? [], ...(options.principal !== undefined ? { principal: options.principal } : {}) }),
        );
        const human = [
          `Webhook ${added.webhookId} → ${added.url} (events: ${added.events.length === 0 ? 'all' : added.events.join(', ')}).`,
          'Its signing secret (shown once; verify each delivery with a Standard Webhooks library):',
          '',
          added.secret,
          '',
          `See deliveries with: sandboxctl webhooks deliveries ${added.webhookId}`,
        ].join('\n');
        printResult(
          { json: raw.json === true },
          { webhookId: added.webhookId, secret: added.secret, url: added.url, events: added.events, principal: added.principal, createdAt: added.createdAt },
          human,
        );
      }),
    );

  registerStoreList(webhooks, 'every live endpoint: id, URL, events, principal (never the secret)', 'webhooks', (store) => store.webhooks(), formatWebhooks);

  webhooks
    .command('remove')
    .description('stop deliveries to an endpoint (its delivery log stays)')
    .argument('<webhook-id>', 'the id `webhooks list` shows')
    .addOption(jsonOption())
    .action(
      action(async (raw, args) => {
        const webhookId = parseCliArgument(webhookIdSchema, args[0], 'WEBHOOK_ID');
        const removed = await withStoreClient(loadConfig(), (store) => store.removeWebhook(webhookId));
        printResult({ json: raw.json === true }, removed, `Webhook ${removed.webhookId} (${removed.url}) removed: nothing more is delivered to it.`);
      }),
    );

  webhooks
    .command('deliveries')
    .description("an endpoint's newest delivery attempts: event, attempt, outcome, the receiver's status")
    .argument('<webhook-id>', 'the id `webhooks list` shows')
    .option('--limit <n>', 'how many of the newest attempts (default 50, at most 1000)')
    .addOption(jsonOption())
    .action(
      action(async (raw, args) => {
        const webhookId = parseCliArgument(webhookIdSchema, args[0], 'WEBHOOK_ID');
        const options = parseCliOptions(deliveriesOptionsSchema, raw);
        const deliveries = await withStoreClient(loadConfig(), (store) => store.webhookDeliveries(webhookId, options.limit));
        printResult({ json: raw.json === true }, { webhookId, deliveries }, formatDeliveries(webhookId, deliveries));
      }),
    );
}
