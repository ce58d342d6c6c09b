import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { runSandboxctl } from '../test/harness/worker-process';

/** A receiver in the bench process that takes every delivery (204) and counts them. */
export async function webhookSink(): Promise<{ url: (path: string) => string; received: () => number; close: () => Promise<void> }> {
  let received = 0;
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      received += 1;
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    received: () => received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Registers `count` webhooks for `principal`'s events (all kinds) with the plane `env` reaches. */
export async function registerWebhooks(env: Record<string, string>, urls: readonly string[], principal: string): Promise<void> {
  for (const url of urls) {
    const added = await runSandboxctl(['webhooks', 'add', url, '--principal', principal, '--json'], env);
    if (added.code !== 0) throw new Error(`sandboxctl webhooks add exited ${added.code}: ${added.stderr}`);
  }
}
