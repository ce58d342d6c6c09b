import type { Command } from 'commander';
import { loadConfig } from '../../config/config';
import { formatBytes } from '../../domain/byte-size';
import { hostIdSchema, type HostReport } from '../../domain/hosts';
import type { WarmPoolReport, WarmPoolTargets } from '../../domain/warm-pool';
import { parseOrThrow } from '../../domain/validation';
import { action, jsonOption } from '../command-action';
import { formatTable } from '../format/table';
import { printResult } from '../output';
import { withStoreClient } from '../temporal-clients';

function warmPoolText(targets: WarmPoolTargets): string {
  const pools = Object.entries(targets).filter(([, size]) => (size ?? 0) > 0);
  return pools.length === 0 ? '-' : pools.map(([adapter, size]) => `${adapter}=${size}`).join(',');
}

/**
 * Memory requests held / the allocatable memory, and limits held / what they may add up to
 * (DESIGN §12); `-` for a host whose worker did not measure its engine's memory. In use:
 * what its containers use now, `-` when its worker did not answer.
 */
function memoryText(host: HostReport): { requested: string; limited: string; inUse: string } {
  const inUse = host.memoryInUseBytes === null ? '-' : formatBytes(host.memoryInUseBytes);
  if (host.memoryCapacityBytes === null || host.memoryLimitCapacityBytes === null) return { requested: '-', limited: '-', inUse };
  return {
    requested: `${formatBytes(host.memoryRequestedBytes)}/${formatBytes(host.memoryCapacityBytes)}`,
    limited: `${formatBytes(host.memoryUsedBytes)}/${formatBytes(host.memoryLimitCapacityBytes)}`,
    inUse,
  };
}

function formatHosts(hosts: readonly HostReport[]): string {
  if (hosts.length === 0) return 'No docker hosts registered: start a docker worker (`sandboxctl worker` or `sandboxctl worker --role docker`).';
  return formatTable(
    ['HOST', 'LIVE', 'SANDBOXES', 'REQUESTED', 'LIMITS', 'IN USE', 'WARM POOL', 'ADAPTERS', 'LAST SEEN'],
    hosts.map((host) => [
      host.hostId,
      host.live ? 'yes' : 'no',
      `${host.liveSandboxes}/${host.capacity}`,
      memoryText(host).requested,
      memoryText(host).limited,
      memoryText(host).inUse,
      warmPoolText(host.warmPool),
      host.adapters.join(','),
      host.lastSeenAt ?? 'never',
    ]),
  );
}

function formatPools(report: WarmPoolReport): string {
  const lines =
    report.pools.length === 0
      ? ['No warm pools: a docker worker keeps one when started with SANDBOXPLANE_WARM_POOL (for example moto=2).']
      : [
          formatTable(
            ['HOST', 'ADAPTER', 'TARGET', 'READY', 'STARTING', 'CLAIMED'],
            report.pools.map((pool) => [pool.hostId, pool.adapter, String(pool.target), String(pool.ready), String(pool.starting), String(pool.claimed)]),
          ),
        ];
  if (report.unanswered.length > 0) lines.push(`No answer from the docker worker of ${report.unanswered.join(', ')}.`);
  return lines.join('\n');
}

/** `hosts`: the Docker hosts the store role knows, and whether a worker serves each (DESIGN §10, §11). */
export function registerHostCommands(program: Command): void {
  const hostsCommand = program
    .command('hosts')
    .description(
      'the Docker hosts sandboxes can be placed on: liveness, sandboxes/capacity, memory requested/allocatable, memory limits/their overcommitted bound, memory in use now (asked of each live host), adapters, last poll',
    )
    .addOption(jsonOption())
    .action(
      action(async (raw) => {
        const hosts = await withStoreClient(loadConfig(), (store) => store.hostsWithMemoryInUse());
        printResult({ json: raw.json === true }, { hosts }, formatHosts(hosts));
      }),
    );

  program
    .command('pools')
    .description('the warm pools of every live docker host: idle containers kept, ready now, starting, and claimed by sandboxes')
    .addOption(jsonOption())
    .action(
      action(async (raw) => {
        const report = await withStoreClient(loadConfig(), (store) => store.warmPools());
        printResult({ json: raw.json === true }, report, formatPools(report));
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
