import { performance } from 'node:perf_hooks';
import type Docker from 'dockerode';
import { MOTO_PORT } from '../src/adapters/moto-guard';
import { BENCH_RUN_LABEL, removeContainers } from './bench-containers';
import { sleep } from './measure';
import { cpuSeconds } from './proc-stats';

/** How often the raw baseline looks at moto's health URL: as often as a sandbox's health gate does while moto comes up (health-gate.ts). */
const POLL_MS = 25;
const HEALTH_TIMEOUT_MS = 60_000;

/** One raw start of the moto image, in phases (ms from the first engine call). */
export interface RawMotoRun {
  readonly totalMs: number;
  readonly createMs: number;
  readonly startMs: number;
  readonly inspectMs: number;
  /** From the published port being known until moto answered 200 with JSON. */
  readonly healthMs: number;
  readonly healthPolls: number;
  /** CPU moto's process had spent by the time it answered (it boots Python and moto). */
  readonly motoCpuMs: number | null;
}

async function healthy(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2_000), headers: { accept: 'application/json' } });
    const text = await response.text();
    if (response.status !== 200) return false;
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * The baseline of P2: what anyone gets from the engine alone — `docker run -d -p
 * 127.0.0.1::5000` of the same image, then `GET /moto-api/data.json` every 25 ms until
 * HTTP 200 with JSON. The container carries the run's label and is removed (untimed)
 * before this returns.
 */
export async function rawMotoRun(
  docker: Docker,
  image: string,
  runId: string,
  /** P6: the sandbox's `--memory` cap, and a network of the bench's with room for a burst. */
  options: { memoryBytes?: number; network?: string } = {},
): Promise<RawMotoRun> {
  const port = `${MOTO_PORT}/tcp`;
  const started = performance.now();
  const container = await docker.createContainer({
    Image: image,
    Labels: { [BENCH_RUN_LABEL]: runId },
    ExposedPorts: { [port]: {} },
    HostConfig: {
      PortBindings: { [port]: [{ HostIp: '127.0.0.1', HostPort: '' }] },
      ...(options.memoryBytes !== undefined ? { Memory: options.memoryBytes, MemorySwap: options.memoryBytes } : {}),
      ...(options.network !== undefined ? { NetworkMode: options.network } : {}),
    },
  });
  try {
    const created = performance.now();
    await container.start();
    const startedAt = performance.now();
    const info = await container.inspect();
    const hostPort = info.NetworkSettings.Ports[port]?.[0]?.HostPort;
    if (hostPort === undefined) throw new Error(`raw moto container ${container.id} publishes no port for ${port}`);
    const inspected = performance.now();
    const url = `http://127.0.0.1:${hostPort}/moto-api/data.json`;
    let polls = 0;
    for (;;) {
      polls += 1;
      if (await healthy(url)) break;
      if (performance.now() - inspected > HEALTH_TIMEOUT_MS) throw new Error(`raw moto at ${url} not healthy within ${HEALTH_TIMEOUT_MS} ms`);
      await sleep(POLL_MS);
    }
    const done = performance.now();
    let motoCpuMs: number | null = null;
    try {
      motoCpuMs = cpuSeconds(info.State.Pid) * 1000;
    } catch {
      // An engine on another machine (or another pid namespace): its CPU is not ours to read.
    }
    return {
      totalMs: done - started,
      createMs: created - started,
      startMs: startedAt - created,
      inspectMs: inspected - startedAt,
      healthMs: done - inspected,
      healthPolls: polls,
      motoCpuMs,
    };
  } finally {
    await removeContainers(docker, [container.id]);
  }
}
