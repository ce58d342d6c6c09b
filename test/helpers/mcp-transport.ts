import path from 'node:path';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { REPO_ROOT } from '../harness/cli';

/**
 * `sandboxctl mcp --principal PRINCIPAL` from the sources, spoken to over stdio exactly
 * as an agent's host would; its stderr is piped.
 */
export function mcpServerTransport(env: Record<string, string>, principal: string, logLevel = 'info'): StdioClientTransport {
  return new StdioClientTransport({
    command: process.execPath,
    args: ['--import', 'tsx', path.join(REPO_ROOT, 'src', 'cli', 'main.ts'), 'mcp', '--principal', principal],
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', SANDBOXPLANE_LOG_LEVEL: logLevel, ...env },
    stderr: 'pipe',
  });
}
