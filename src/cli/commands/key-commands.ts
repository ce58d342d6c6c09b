import type { Command } from 'commander';
import { z } from 'zod';
import { loadConfig } from '../../config/config';
import { apiKeyIdSchema, DEFAULT_MAX_IN_FLIGHT, DEFAULT_RATE_PER_MINUTE, type ApiKeyRecord } from '../../domain/api-keys';
import { principalSchema } from '../../domain/sandbox-request';
import { parseCliArgument, parseCliOptions, wholeNumberSchema } from '../cli-options';
import { action, jsonOption } from '../command-action';
import { formatTable } from '../format/table';
import { printResult } from '../output';
import { withStoreClient } from '../temporal-clients';
import { registerStoreList } from './store-list-command';

const addOptionsSchema = z
  .object({
    ratePerMinute: wholeNumberSchema(1).pipe(z.number().max(60_000, 'must be at most 60000')).optional(),
    maxInFlight: wholeNumberSchema(1).pipe(z.number().max(1_000, 'must be at most 1000')).optional(),
    json: z.boolean().optional(),
  })
  .strict();

function formatKeys(keys: readonly ApiKeyRecord[]): string {
  if (keys.length === 0) return 'No API keys: `sandboxctl keys add PRINCIPAL` makes one.';
  return formatTable(
    ['KEY ID', 'PRINCIPAL', 'RATE/MIN', 'IN FLIGHT', 'CREATED', 'REVOKED'],
    keys.map((key) => [key.keyId, key.principal, String(key.ratePerMinute), String(key.maxInFlight), key.createdAt, key.revokedAt ?? '-']),
  );
}

/** keys add, list, revoke: the gateway's bearer keys, one principal each (DESIGN §18). */
export function registerKeyCommands(program: Command): void {
  const keys = program.command('keys').description("the gateway's API keys: each acts as one principal (`sandboxctl gateway`); operators only");

  keys
    .command('add')
    .description('make an API key for PRINCIPAL: printed once, stored only as a slow hash')
    .argument('<principal>', 'the principal every request with this key acts as')
    .option('--rate-per-minute <n>', `requests per minute this key may make through the gateway (default ${DEFAULT_RATE_PER_MINUTE})`)
    .option('--max-in-flight <n>', `requests this key may have in flight at once, waits included; more get 429 RATE_LIMITED (default ${DEFAULT_MAX_IN_FLIGHT})`)
    .addOption(jsonOption())
    .action(
      action(async (raw, args) => {
        const principal = parseCliArgument(principalSchema, args[0], 'PRINCIPAL');
        const options = parseCliOptions(addOptionsSchema, raw);
        const limits = {
          ...(options.ratePerMinute !== undefined ? { ratePerMinute: options.ratePerMinute } : {}),
          ...(options.maxInFlight !== undefined ? { maxInFlight: options.maxInFlight } : {}),
        };
        const added = await withStoreClient(loadConfig(), (store) => store.addKey(principal, limits));
        const human = [
          `API key ${added.keyId} for ${added.principal} (shown once, never stored in clear):`,
          '',
          added.key,
          '',
          'Give it to the agent with the gateway\'s address: curl -H "Authorization: Bearer $KEY" http://GATEWAY/v1/sandboxes (`sandboxctl gateway` listens on 127.0.0.1:8787 by default)',
          `Revoke it with: sandboxctl keys revoke ${added.keyId}`,
        ].join('\n');
        printResult(
          { json: raw.json === true },
          { principal: added.principal, keyId: added.keyId, key: added.key, ratePerMinute: added.ratePerMinute, maxInFlight: added.maxInFlight, createdAt: added.createdAt },
          human,
        );
      }),
    );

  registerStoreList(keys, 'every API key: id, principal, rate, when made and revoked (never the key)', 'keys', (store) => store.keys(), formatKeys);

  keys
    .command('revoke')
    .description('revoke a key: the gateway refuses it (401) from its next request')
    .argument('<key-id>', 'the id `keys list` shows')
    .addOption(jsonOption())
    .action(
      action(async (raw, args) => {
        const keyId = parseCliArgument(apiKeyIdSchema, args[0], 'KEY_ID');
        const revoked = await withStoreClient(loadConfig(), (store) => store.revokeKey(keyId));
        printResult({ json: raw.json === true }, revoked, `API key ${revoked.keyId} of ${revoked.principal} is revoked (since ${revoked.revokedAt}).`);
      }),
    );
}
