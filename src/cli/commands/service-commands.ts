import type { Command } from 'commander';
import { z } from 'zod';
import { loadConfig, type Config } from '../../config/config';
import { principalSchema } from '../../domain/sandbox-request';
import { SandboxPlaneError } from '../../domain/errors';
import type { Logger } from '../../logging/logger';
import { fileSchema, parseCliOptions, portSchema } from '../cli-options';
import { action, asTracedService, jsonOption } from '../command-action';
import { printResult } from '../output';
import { workerConfig, workerOptionsSchema } from '../worker-options';

/** dev, worker and mcp run until stopped: each is a service in traces, not one span. */
const LONG_RUNNING = { longRunning: true } as const;

const mcpOptionsSchema = z.object({ principal: principalSchema.optional() });

const devOptionsSchema = z.object({
  port: portSchema.optional(),
  uiPort: portSchema.default(8233),
  db: fileSchema.optional(),
  codecPort: portSchema.default(8234),
});

/** pino is loaded by the long-running commands only: the others log nothing. */
async function loggerFor(config: Config): Promise<Logger> {
  const { createLogger } = await import('../../logging/logger.js');
  return createLogger(config.logLevel);
}

/** `host:port`, e.g. 127.0.0.1:8787 (port 0: the system chooses). */
const gatewayOptionsSchema = z
  .object({
    listen: z
      .string()
      .regex(/^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, 'must be host:port, e.g. 127.0.0.1:8787')
      .refine((listen) => Number(listen.slice(listen.lastIndexOf(':') + 1)) <= 65535, 'the port must be at most 65535'),
    tlsCert: z.string().min(1).optional(),
    tlsKey: z.string().min(1).optional(),
    json: z.boolean().optional(),
  })
  .strict()
  .refine((options) => (options.tlsCert === undefined) === (options.tlsKey === undefined), { message: 'give both --tls-cert and --tls-key, or neither', path: ['tlsCert'] });

/** dev, worker, doctor, mcp and gateway: what runs the plane and checks it, rather than asking it for something. */
export function registerServiceCommands(program: Command): void {
  program
    .command('dev')
    .description('run a Temporal dev server (with its Web UI), the worker and a round trip, in the foreground')
    .option('--port <n>', 'Temporal frontend port (default: the port of TEMPORAL_ADDRESS, 7233)')
    .option('--ui-port <n>', 'Temporal Web UI port', '8233')
    .option('--db <file>', 'SQLite file of the dev server (default: .data/temporal.sqlite)')
    .option('--codec-port <n>', 'port of the codec server the Web UI decrypts payloads through', '8234')
    .addOption(jsonOption())
    .action(
      action(async (raw) => {
        const options = parseCliOptions(devOptionsSchema, raw);
        const config = loadConfig();
        const { runDevLauncher } = await import('../dev-launcher.js');
        const logger = await loggerFor(config);
        await asTracedService(config.telemetry.traces, 'sandboxplane-worker', () =>
          runDevLauncher(config, { port: options.port, uiPort: options.uiPort, dbFile: options.db, codecPort: options.codecPort }, logger),
        );
      }, LONG_RUNNING),
    );

  program
    .command('worker')
    .description('run the worker only, against TEMPORAL_ADDRESS, until SIGINT or SIGTERM (all roles unless --role says which)')
    .option('--role <roles>', 'all, or a comma list of lifecycle, store, docker, targets (env SANDBOXPLANE_WORKER_ROLES; default all)')
    .option('--host-id <name>', "the docker role's host id; its queue is <task queue>-docker-<name> (env SANDBOXPLANE_HOST_ID; default local)")
    .option('--capacity <n>', "how many sandboxes the docker role's host takes at once (env SANDBOXPLANE_HOST_CAPACITY; default 100)")
    .option('--build-id <id>', "the lifecycle role's build id in the deployment (env SANDBOXPLANE_BUILD_ID; default derived from the workflow code)")
    .addOption(jsonOption())
    .action(
      action(async (raw) => {
        const config = workerConfig(parseCliOptions(workerOptionsSchema, raw));
        const { runWorkerCommand } = await import('../worker-command.js');
        const logger = await loggerFor(config);
        await asTracedService(config.telemetry.traces, 'sandboxplane-worker', () => runWorkerCommand(config, logger));
      }, LONG_RUNNING),
    );

  program
    .command('doctor')
    .description('check every dependency and say what to fix; exit 0 only when all required checks pass')
    .option('--quick', 'prove the worker by its poll on the task queue instead of a round-trip workflow (for healthchecks)')
    .addOption(jsonOption())
    .action(
      action(async (options) => {
        const config = loadConfig();
        const { doctorPassed, runDoctorChecks } = await import('../doctor-checks.js');
        const { formatDoctorReport } = await import('../doctor-report.js');
        const checks = await runDoctorChecks(config, { roundTrip: options.quick !== true });
        const ok = doctorPassed(checks);
        printResult({ json: options.json === true }, { ok, checks }, formatDoctorReport(checks, ok));
        return ok ? 0 : 1;
      }),
    );

  program
    .command('mcp')
    .description(
      'serve create_sandbox, get_sandbox, list_sandboxes, extend_sandbox, destroy_sandbox, plan_iac, apply_iac, iac_status, snapshot_sandbox, fork_sandbox, delete_snapshot and sandbox_events to an MCP client over stdio, until stdin closes, acting as one principal',
    )
    .option('--principal <name>', 'the principal every tool call acts as, and whose sandboxes alone it sees (env SANDBOXPLANE_PRINCIPAL; required)')
    // Accepted like everywhere; MCP answers are JSON frames already, so it changes nothing.
    .addOption(jsonOption())
    .action(
      action(async (raw) => {
        const { principal } = parseCliOptions(mcpOptionsSchema, raw);
        const config = { ...loadConfig(), ...(principal !== undefined ? { principal } : {}) };
        if (config.principal === undefined) {
          throw new SandboxPlaneError('INVALID_INPUT', '--principal: required: an MCP server acts for one principal (DESIGN §12)', {
            hint: "Start it as `sandboxctl mcp --principal agent-7` (or set SANDBOXPLANE_PRINCIPAL) in the agent's MCP client configuration.",
          });
        }
        const { serveMcpOverStdio } = await import('../../mcp/mcp-server.js');
        const logger = await loggerFor(config);
        await asTracedService(config.telemetry.traces, 'sandboxplane-client', () => serveMcpOverStdio(config, logger));
      }, LONG_RUNNING),
    );

  program
    .command('gateway')
    .description(
      'serve the plane to agents over HTTP (JSON API, OpenAPI at /v1/openapi.json) and MCP over Streamable HTTP at /mcp, each request as the principal of its API key (`sandboxctl keys add`), until SIGINT or SIGTERM; runs beside the store worker (it reads the key table of SANDBOXPLANE_DB)',
    )
    .option('--listen <host:port>', 'where to listen', '127.0.0.1:8787')
    .option('--tls-cert <file>', 'serve HTTPS with this PEM certificate (its chain after it); with --tls-key')
    .option('--tls-key <file>', "the certificate's PEM private key")
    .addOption(jsonOption())
    .action(
      action(async (raw) => {
        const { listen, tlsCert, tlsKey } = parseCliOptions(gatewayOptionsSchema, raw);
        const config = loadConfig();
        const { startGateway } = await import('../../gateway/gateway-server.js');
        const { watchStopSignals } = await import('../stop-signals.js');
        const logger = await loggerFor(config);
        await asTracedService(config.telemetry.traces, 'sandboxplane-gateway', async () => {
          const stop = watchStopSignals(() => undefined);
          const tls = tlsCert !== undefined && tlsKey !== undefined ? { tls: { certFile: tlsCert, keyFile: tlsKey } } : {};
          const gateway = await startGateway(config, { listen, ...tls }, logger);
          printResult(
            { json: raw.json === true },
            { url: gateway.url, openapi: `${gateway.url}/v1/openapi.json`, mcp: `${gateway.url}/mcp` },
            [
              `gateway: listening on ${gateway.url} for agents with an API key (sandboxctl keys add PRINCIPAL)`,
              `gateway: OpenAPI ${gateway.url}/v1/openapi.json, MCP (Streamable HTTP) ${gateway.url}/mcp. Ctrl-C stops it.`,
            ].join('\n'),
          );
          logger.info({ url: gateway.url, temporalAddress: config.temporalAddress, store: config.storePath }, 'gateway ready');
          const signal = await stop.requested;
          logger.info({ signal }, 'gateway stopping');
          await gateway.close();
          stop.dispose();
        });
      }, LONG_RUNNING),
    );
}
