import fs from 'node:fs';
import { SandboxPlaneError } from '../domain/errors';
import { AesGcmPayloadCodec } from './aes-gcm-codec';
import { ensureCodecKeysFile, readCodecKeysFile, type CodecKey } from './codec-keys';

/** Where the payload codec's keys come from, validated once at start (by src/config: `loadConfig`, `loadCodecSettings`). */
export interface CodecSettings {
  /** The keys, current first; `undefined` while the default file does not exist (the plane's first start makes it). */
  readonly keys: readonly CodecKey[] | undefined;
  /** The file the keys are read from (or will be made in); `undefined` when SANDBOXPLANE_CODEC_KEYS holds them. */
  readonly keysFile: string | undefined;
}

/** No payload codec keys where the settings point: a client never makes them, the plane's first start does. */
export class CodecKeysMissingError extends SandboxPlaneError {
  override readonly name = 'CodecKeysMissingError';

  constructor(readonly keysFile: string) {
    super('CONFIG_INVALID', `no payload codec keys: ${keysFile} does not exist`, {
      hint: "Start the plane once to make them (`npm start`, `sandboxctl dev` or `sandboxctl worker`), or set SANDBOXPLANE_CODEC_KEYS_FILE or SANDBOXPLANE_CODEC_KEYS to the workers' keys (docs/security.md#payload-encryption).",
      details: { keysFile },
    });
  }
}

/** The keys of `settings`, read and never made: a missing default file is {@link CodecKeysMissingError}. */
export function codecKeysFor(settings: CodecSettings): readonly CodecKey[] {
  if (settings.keys !== undefined) return settings.keys;
  if (settings.keysFile === undefined) throw new SandboxPlaneError('CONFIG_INVALID', 'no payload codec keys configured');
  if (!fs.existsSync(settings.keysFile)) throw new CodecKeysMissingError(settings.keysFile);
  return readCodecKeysFile(settings.keysFile);
}

/**
 * The settings with their keys, the default file made with one fresh key first when it
 * does not exist: only for what starts the plane (the dev launcher, a worker), never a client.
 */
export function ensureCodecKeys(settings: CodecSettings): CodecSettings {
  if (settings.keys !== undefined || settings.keysFile === undefined) return settings;
  return Object.freeze({ ...settings, keys: ensureCodecKeysFile(settings.keysFile).keys });
}

/** The codec every client and worker of this plane uses, from validated settings. */
export function payloadCodecFor(settings: CodecSettings): AesGcmPayloadCodec {
  return new AesGcmPayloadCodec(codecKeysFor(settings));
}
