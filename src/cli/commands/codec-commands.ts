import type { Command } from 'commander';
import { z } from 'zod';
import { loadConfig } from '../../config/config';
import { parseCliOptions, portSchema } from '../cli-options';
import { action, jsonOption } from '../command-action';
import { printResult } from '../output';
import { watchStopSignals } from '../stop-signals';

/** An origin as a browser sends it: scheme, host and port, nothing after. */
const originSchema = z.string().refine((text) => {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === text;
  } catch {
    return false;
  }
}, 'must be an origin such as http://127.0.0.1:8233 (scheme, host and port; no path, no trailing slash)');

function collect(value: string, previous: string[] = []): string[] {
  return [
    ...previous,
    ...value
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item !== ''),
  ];
}

export function registerCodecCommands(program: Command): void {
  program
    .command('codec-server')
    .description("serve Temporal's codec server HTTP API (POST /encode, /decode) on 127.0.0.1, so the Temporal UI shows decrypted payloads, until SIGINT or SIGTERM")
    .option('--port <n>', 'port on 127.0.0.1', '8234')
    .option('--origin <url>', 'a Temporal UI origin allowed to call it (repeatable; default the dev UI, http://127.0.0.1:8233 and http://localhost:8233)', collect)
    .addOption(jsonOption())
    .action(
      action(
        async (raw) => {
          const { port, origin } = parseCliOptions(z.object({ port: portSchema, origin: z.array(originSchema).optional() }), raw);
          const config = loadConfig();
          const { payloadCodecFor } = await import('../../codec/codec-settings.js');
          const { devUiOrigins, startCodecServer } = await import('../../codec/codec-server.js');
          const { createLogger } = await import('../../logging/logger.js');
          const codec = payloadCodecFor(config.codec);
          const origins = origin ?? devUiOrigins(8233);
          const stop = watchStopSignals(() => undefined);
          const server = await startCodecServer({ codec, port, origins, logger: createLogger(config.logLevel) });
          printResult(
            { json: raw.json === true },
            { url: server.url, origins, currentKeyId: codec.currentKeyId, keyIds: codec.keyIds },
            [
              `codec-server: listening on ${server.url} (POST /encode, /decode) for ${origins.join(', ')}`,
              `codec-server: keys ${codec.keyIds.join(', ')} (encrypting with ${codec.currentKeyId}) from ${config.codec.keysFile ?? 'SANDBOXPLANE_CODEC_KEYS'}`,
              `codec-server: in the Temporal UI, set it as the codec endpoint (or start the UI with --ui-codec-endpoint ${server.url}). Ctrl-C stops it.`,
            ].join('\n'),
          );
          await stop.requested;
          await server.close();
          stop.dispose();
        },
        { longRunning: true },
      ),
    );
}
