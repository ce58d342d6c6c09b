import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../harness/cli';
import { freePort } from '../harness/free-port';

/** Jaeger and Prometheus as scripts/telemetry.sh runs them, on ports of the test's own. */
export interface TelemetryStack {
  readonly otlpEndpoint: string;
  readonly jaegerUrl: string;
  readonly prometheusUrl: string;
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts scripts/telemetry.sh scraping `scrape` (the workers' metrics addresses) and
 * resolves once it prints TELEMETRY_READY. The test runner has installed Jaeger and
 * Prometheus already (SANDBOXPLANE_JAEGER, SANDBOXPLANE_PROMETHEUS).
 */
export async function startTelemetryStack(scrape: readonly string[]): Promise<TelemetryStack> {
  const [otlp, jaeger, prometheus] = [await freePort(), await freePort(), await freePort()];
  const data = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-telemetry-'));
  const child = spawn(
    'bash',
    [
      path.join(REPO_ROOT, 'scripts', 'telemetry.sh'),
      '--scrape',
      scrape.join(','),
      '--data',
      data,
      '--otlp-port',
      String(otlp),
      '--jaeger-port',
      String(jaeger),
      '--prometheus-port',
      String(prometheus),
    ],
    { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`scripts/telemetry.sh was not ready within 120 s:\n${output}`)), 120_000);
    child.stdout.on('data', () => {
      if (output.includes('TELEMETRY_READY')) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`scripts/telemetry.sh stopped:\n${output}`));
    });
  });
  return {
    otlpEndpoint: `http://127.0.0.1:${otlp}`,
    jaegerUrl: `http://127.0.0.1:${jaeger}`,
    prometheusUrl: `http://127.0.0.1:${prometheus}`,
    output: () => output,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      fs.rmSync(data, { recursive: true, force: true });
    },
  };
}
