import type { Command } from 'commander';
import { loadConfig } from '../../config/config';
import { hostIdSchema, type HostView } from '../../domain/hosts';
import { parseOrThrow } from '../../domain/validation';
import { action, jsonOption } from '../command-action';
import { formatTable } from '../format/table';
import { printResult } from '../output';
import { withStoreClient } from '../store-client-session';

function formatHosts(hosts: readonly HostView[]): string {
  if (hosts.length === 0) return 'No docker hosts registered: start a docker worker (`sandboxctl worker` or `sandboxctl worker --role docker`).';
  return formatTable(
    ['HOST', 'LIVE', 'SANDBOXES', 'ADAPTERS', 'LAST SEEN'],
    hosts.map((host) => [
      host.hostId,
      host.live ? 'yes' : 'no',
      `${host.liveSandboxes}/${host.capacity}`,
      host.adapters.join(','),
      host.lastSeenAt ?? 'never',
    ]),
  );
}

/** `hosts`: the Docker hosts the store role knows, and whether a worker serves each (DESIGN §10, §11). */
export function registerHostCommands(program: Command): void {
  const hostsCommand = program
    .command('hosts')
    .description('the Docker hosts sandboxes can be placed on: liveness, sandboxes/capacity, adapters, last poll')
    .addOption(jsonOption())
    .action(
      action(async (raw) => {
        const hosts = await withStoreClient(loadConfig(), (store) => store.hosts());
        printResult({ json: raw.json === true }, { hosts }, formatHosts(hosts));
      }),
    );

  hostsCommand
    .command('remove')
    .description('retire a Docker host for good: only once no docker worker serves it and none of its sandboxes is left')
    .argument('<hostId>', 'the host id, as `sandboxctl hosts` lists it')
    .addOption(jsonOption())
    .action(
      action(async (raw, [rawHostId]) => {
        const hostId = parseOrThrow(hostIdSchema, rawHostId, 'host id');
        const removed = await withStoreClient(loadConfig(), (store) => store.removeHost(hostId));
        printResult({ json: raw.json === true }, removed, `Removed docker host ${removed.hostId} (${removed.taskQueue}).`);
      }),
    );
}
