import { type Command, Option } from 'commander';
import { loadTraceExportSettings, type TraceExportSettings } from '../config/config';
import type { PlaneService } from '../telemetry/tracing';
import { reportError } from './output';

export type ActionOptions = Record<string, unknown> & { json?: boolean };

/** A command's body: its options and positional arguments in, an exit code (or nothing: 0) out. */
export type ActionBody = (options: ActionOptions, args: string[]) => Promise<number | void>;

export interface ActionSettings {
  /**
   * A command that runs until stopped (dev, worker, mcp) starts tracing as the service it
   * is; any other command is one span of `sandboxplane-client` when tracing is on.
   */
  readonly longRunning?: boolean;
}

/** `create`, `hosts remove`: the command's path under `sandboxctl`. */
function commandPath(command: Command): string {
  const names: string[] = [];
  for (let at: Command | null = command; at?.parent != null; at = at.parent) names.unshift(at.name());
  return names.join(' ');
}

/**
 * One command as one trace (DESIGN §17), when OTEL_EXPORTER_OTLP_ENDPOINT is set: a root
 * span `sandboxctl <command>` over every Temporal call it makes, sent before the process
 * exits. Unset, this loads nothing.
 */
async function traced<T>(command: Command, run: () => Promise<T>): Promise<T> {
  const settings = loadTraceExportSettings();
  if (settings === undefined) return run();
  const { startTracing, stopTracing } = await import('../telemetry/tracing.js');
  const { inSpan } = await import('../telemetry/spans.js');
  await startTracing(settings, 'sandboxplane-client');
  try {
    return await inSpan(`sandboxctl ${commandPath(command)}`, { 'sandboxctl.command': commandPath(command) }, run);
  } finally {
    await stopTracing();
  }
}

/** A long-running command's life as `service` in traces (when configured): its spans are sent when it stops. */
export async function asTracedService<T>(settings: TraceExportSettings | undefined, service: PlaneService, run: () => Promise<T>): Promise<T> {
  if (settings === undefined) return run();
  const { startTracing, stopTracing } = await import('../telemetry/tracing.js');
  await startTracing(settings, service);
  try {
    return await run();
  } finally {
    await stopTracing();
  }
}

/**
 * Wraps a command's body: every failure becomes the documented exit code and, with
 * --json, the `{"error": {...}}` document on stderr.
 */
export function action(body: ActionBody, settings: ActionSettings = {}) {
  return async (...received: unknown[]): Promise<void> => {
    const command = received[received.length - 1] as Command;
    // With its parent's options: `hosts remove X --json` hands --json to `hosts`, which takes it too.
    const options = command.optsWithGlobals<ActionOptions>();
    try {
      const run = () => body(options, command.args);
      process.exitCode = (await (settings.longRunning === true ? run() : traced(command, run))) ?? 0;
    } catch (err) {
      process.exitCode = await reportError({ json: options.json === true }, err);
    }
  };
}

export const jsonOption = () => new Option('--json', 'print one JSON document on stdout (errors as JSON on stderr)');
