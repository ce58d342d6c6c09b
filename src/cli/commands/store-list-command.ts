import type { Command } from 'commander';
import type { StoreClient } from '../../client/store-client';
import { loadConfig } from '../../config/config';
import { action, jsonOption } from '../command-action';
import { printResult } from '../output';
import { withStoreClient } from '../temporal-clients';

/** `<group> list`: every row of one kind the store keeps, as a table, or with --json as `{ <key>: [...] }`. */
export function registerStoreList<T>(group: Command, description: string, key: string, read: (store: StoreClient) => Promise<T[]>, format: (list: T[]) => string): void {
  group
    .command('list')
    .description(description)
    .addOption(jsonOption())
    .action(
      action(async (raw) => {
        const list = await withStoreClient(loadConfig(), read);
        printResult({ json: raw.json === true }, { [key]: list }, format(list));
      }),
    );
}
