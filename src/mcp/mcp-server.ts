import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { SandboxClient } from '../client/sandbox-client';
import { payloadCodecFor } from '../codec/codec-settings';
import type { Config } from '../config/config';
import { packageVersion } from '../config/paths';
import type { Logger } from '../logging/logger';
import { registerEventTools } from './event-tools';
import { registerIacTools } from './iac-tools';
import { registerSandboxTools } from './sandbox-tools';
import { registerSnapshotTools } from './snapshot-tools';

export { packageVersion };

export const MCP_SERVER_NAME = 'cloud-sandbox-plane';

const INSTRUCTIONS = [
  'Throw-away, AWS-shaped sandboxes (local emulators) for trying code and infrastructure.',
  'You act as the principal this server was started for: you see and change only your own sandboxes.',
  'Call create_sandbox with the services you need (wait "ready" to get the endpoint at once);',
  "pass the result's clientConfig to an AWS SDK v3 client constructor; call destroy_sandbox when done.",
  'To change a sandbox with infrastructure code, call plan_iac, then apply_iac (a human may need to approve the plan); iac_status follows a run.',
  'sandbox_events says what happened to your sandboxes and why (e.g. destroyed by its TTL).',
  'Every refusal carries an error code and a hint saying what to do.',
].join(' ');

/** The audit trail's name for an MCP caller: `mcp:<client name>` from the initialize handshake. */
function actorFor(server: McpServer): string {
  const name = server.server.getClientVersion()?.name?.trim();
  return `mcp:${name === undefined || name === '' ? 'unknown' : name}`.slice(0, 200);
}

/**
 * One connection to Temporal, made on the first tool call and kept; a failed attempt
 * is forgotten, so a server started before Temporal answers once Temporal is up.
 */
export function lazySandboxClient(config: Config): { get: () => Promise<SandboxClient>; close: () => Promise<void> } {
  let connecting: Promise<SandboxClient> | undefined;
  return {
    get: () => {
      connecting ??= SandboxClient.connect({
        address: config.temporalAddress,
        namespace: config.temporalNamespace,
        taskQueue: config.taskQueue,
        payloadCodec: payloadCodecFor(config.codec),
        tls: config.temporalTls ?? null,
        forkMax: config.snapshots.forkMax,
        ...(config.principal !== undefined ? { principal: config.principal } : {}),
      }).catch((err: unknown) => {
        connecting = undefined;
        throw err;
      });
      return connecting;
    },
    close: async () => {
      const pending = connecting;
      connecting = undefined;
      await (await pending?.catch(() => undefined))?.close();
    },
  };
}

/** How a server is set up for where it runs: `sandboxctl mcp` on the agent's side, or the gateway's. */
export interface McpServerOptions {
  /** Who the audit trail names for extend, destroy and snapshots; by default `mcp:<client name>` from the handshake. */
  readonly actor?: () => string;
}

/** An MCP server with the sandbox tools, not yet connected to a transport. */
export function createSandboxMcpServer(sandboxes: () => Promise<SandboxClient>, options: McpServerOptions = {}): McpServer {
  const server = new McpServer({ name: MCP_SERVER_NAME, version: packageVersion() }, { instructions: INSTRUCTIONS });
  const actor = options.actor ?? (() => actorFor(server));
  registerSandboxTools(server, { sandboxes, actor });
  registerIacTools(server, { sandboxes });
  registerSnapshotTools(server, { sandboxes, actor });
  registerEventTools(server, { sandboxes });
  return server;
}

/**
 * `sandboxctl mcp`: serves the tools over stdio until stdin closes (the client went
 * away) or SIGINT/SIGTERM. stdout carries MCP frames only; logs go to stderr.
 */
export async function serveMcpOverStdio(config: Config, logger: Logger): Promise<void> {
  // A stray console.log from any library would corrupt the protocol stream.
  console.log = console.info = console.debug = (...args: unknown[]) => console.error(...args);

  const client = lazySandboxClient(config);
  const server = createSandboxMcpServer(client.get);
  const transport = new StdioServerTransport();
  const ended = new Promise<string>((resolve) => {
    process.stdin.once('end', () => resolve('stdin closed'));
    process.stdin.once('close', () => resolve('stdin closed'));
    transport.onclose = () => resolve('transport closed');
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => resolve(signal));
  });
  await server.connect(transport);
  logger.info({ temporalAddress: config.temporalAddress, namespace: config.temporalNamespace, taskQueue: config.taskQueue, principal: config.principal }, 'mcp server ready on stdio');
  const reason = await ended;
  logger.info({ reason }, 'mcp server stopping');
  await server.close();
  await client.close();
}
