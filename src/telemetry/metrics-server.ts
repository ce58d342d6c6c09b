import http from 'node:http';
import { SandboxPlaneError } from '../domain/errors';
import { meterProcess, planeMetricsText, PROMETHEUS_CONTENT_TYPE } from './plane-metrics';

/** The worker's Prometheus endpoint (SANDBOXPLANE_METRICS_ADDRESS): the plane's metrics and the Temporal SDK's in one page. */
export interface MetricsServer {
  /** `http://host:port/metrics` */
  readonly url: string;
  close(): Promise<void>;
}

let serving: { readonly address: string; readonly server: Promise<MetricsServer> } | undefined;

/**
 * The Temporal SDK serves its own metrics (its Rust core's Prometheus exporter) on a
 * loopback port only this process knows; each scrape reads them there and adds them
 * after the plane's, so a scraper needs one target per worker.
 */
async function sdkMetricsText(url: string | undefined): Promise<string> {
  if (url === undefined) return '';
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    if (!response.ok) return `# the Temporal SDK's metrics answered HTTP ${response.status}\n`;
    return await response.text();
  } catch (err) {
    return `# the Temporal SDK's metrics could not be read: ${(err as Error).message}\n`;
  }
}

function listen(address: string, sdkMetricsUrl: string | undefined): Promise<MetricsServer> {
  const colon = address.lastIndexOf(':');
  const host = address.slice(0, colon).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(colon + 1));
  const server = http.createServer((request, response) => {
    if (request.method !== 'GET' || (request.url ?? '/').split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('the metrics are at /metrics\n');
      return;
    }
    Promise.all([planeMetricsText(), sdkMetricsText(sdkMetricsUrl)])
      .then(([plane, sdk]) => response.writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE }).end(`${plane}\n${sdk}`))
      .catch((err: unknown) => response.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${(err as Error).message}\n`));
  });
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new SandboxPlaneError('CONFIG_INVALID', `SANDBOXPLANE_METRICS_ADDRESS ${address}: cannot listen (${err.code ?? err.message})`, {
          hint: 'Choose a free port, e.g. SANDBOXPLANE_METRICS_ADDRESS=127.0.0.1:9464; each worker on a machine needs its own.',
        }),
      ),
    );
    server.listen(port, host, () => {
      // It serves while the process runs; it does not keep a process alive that is done.
      server.unref();
      const bound = server.address();
      const shown = typeof bound === 'object' && bound !== null ? `${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}` : address;
      resolve({
        url: `http://${shown}/metrics`,
        close: () => new Promise<void>((done) => server.close(() => done())),
      });
    });
  });
}

/**
 * Serves /metrics on `address` for as long as the process runs (one server per process,
 * however many workers it holds); `sdkMetricsUrl` is where the Temporal SDK's own are.
 */
export function serveMetrics(address: string, sdkMetricsUrl: string | undefined): Promise<MetricsServer> {
  if (serving !== undefined) {
    if (serving.address !== address) throw new SandboxPlaneError('CONFIG_INVALID', `this process already serves metrics on ${serving.address}, not ${address}`);
    return serving.server;
  }
  meterProcess();
  const server = listen(address, sdkMetricsUrl);
  serving = { address, server };
  server.catch(() => {
    serving = undefined;
  });
  return server;
}
