import { inClientSpan } from '../telemetry/spans';
import { SandboxPlaneError } from '../domain/errors';
import type { AdapterContext, HealthReport } from './cloud-emulator-adapter';
import type { OperatorAccess } from './operator-endpoint';

/** One look at the emulator; `healthy: false` with a detail when it is not ready yet. */
export type HealthProbe = (access: OperatorAccess, signal: AbortSignal) => Promise<HealthReport>;

export interface HealthGateOptions {
  /** Give up after this long in total. */
  readonly timeoutMs: number;
  /** One probe may take this long before it counts as a miss (a slow answer is not health). */
  readonly attemptTimeoutMs?: number;
  /** The pause between looks while the emulator is expected to come up (default 25 ms). */
  readonly initialDelayMs?: number;
  /** How long looks stay that close together before they back off (default 3 s). */
  readonly fastPollMs?: number;
  readonly maxDelayMs?: number;
}

function pause(ms: number, cancelled: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const wake = () => {
      clearTimeout(timer);
      cancelled?.removeEventListener('abort', wake);
      resolve();
    };
    const timer = setTimeout(wake, ms);
    cancelled?.addEventListener('abort', wake, { once: true });
  });
}

/**
 * Polls `probe` with exponential backoff until the emulator reports healthy,
 * heartbeating each attempt. Throws EMULATOR_UNHEALTHY with the last thing it saw.
 */
export function waitUntilHealthy(probe: HealthProbe, access: OperatorAccess, context: AdapterContext, options: HealthGateOptions): Promise<HealthReport> {
  return inClientSpan('emulator health', {}, (span) => pollUntilHealthy(probe, access, context, options, (attempts) => span.setAttribute('emulator.health.attempts', attempts)));
}

async function pollUntilHealthy(probe: HealthProbe, access: OperatorAccess, context: AdapterContext, options: HealthGateOptions, counted: (attempts: number) => void): Promise<HealthReport> {
  const deadline = Date.now() + options.timeoutMs;
  const attemptTimeoutMs = options.attemptTimeoutMs ?? 2_000;
  // An emulator on loopback starts in well under a second: a refused connect costs next to
  // nothing, so looking every 25 ms while it comes up keeps a create within a few ms of the
  // emulator's own start; one that is slower than that is looked at less and less often.
  let delay = options.initialDelayMs ?? 25;
  const backOffFrom = Date.now() + (options.fastPollMs ?? 3_000);
  let attempts = 0;
  let last = 'no answer yet';
  let answered = false;
  for (;;) {
    attempts += 1;
    counted(attempts);
    const cutAt = Date.now() + attemptTimeoutMs;
    try {
      const report = await probe(access, AbortSignal.timeout(Math.min(attemptTimeoutMs, Math.max(1, deadline - Date.now()))));
      if (report.healthy) return report;
      last = report.detail;
      answered = true;
    } catch (err) {
      // A look the overall deadline cut short (not its own timeout) says nothing new: the emulator's last answer is the better reason.
      const cutByDeadline = err instanceof Error && err.name === 'TimeoutError' && Date.now() < cutAt && Date.now() >= deadline;
      if (!(answered && cutByDeadline)) last = err instanceof Error ? err.message : String(err);
    }
    context.heartbeat({ waitingFor: 'emulator health', attempts, last });
    if (context.cancelled?.aborted) break;
    if (Date.now() + delay >= deadline) break;
    await pause(delay, context.cancelled);
    if (Date.now() >= backOffFrom) delay = Math.min(delay * 1.5, options.maxDelayMs ?? 250);
  }
  const shown = access.endpoint;
  throw new SandboxPlaneError('EMULATOR_UNHEALTHY', `the emulator at ${shown} was not healthy after ${attempts} checks in ${Math.round(options.timeoutMs / 1000)} s; last: ${last}`, {
    details: { endpoint: shown, attempts, last },
  });
}

/** GETs `url` (with `headers`) and parses a JSON body; anything else (HTML from a proxy, a 500) is a reason, not health. */
export async function fetchJson(url: string, signal: AbortSignal, headers: Readonly<Record<string, string>> = {}): Promise<{ ok: true; body: unknown } | { ok: false; reason: string }> {
  const response = await fetch(url, { signal, headers: { accept: 'application/json', ...headers } });
  const text = await response.text();
  if (response.status !== 200) return { ok: false, reason: `${url} answered HTTP ${response.status}` };
  try {
    return { ok: true, body: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, reason: `${url} answered 200 but not JSON (${JSON.stringify(text.slice(0, 60))})` };
  }
}
