import { SandboxPlaneError } from '../domain/errors';
import { AesGcmPayloadCodec } from './aes-gcm-codec';
import { ensureCodecKeysFile, type CodecKey } from './codec-keys';

/** Where the payload codec's keys come from, validated once at start (by src/config: `loadConfig`, `loadCodecSettings`). */
export interface CodecSettings {
  /** The keys, current first; `undefined` while the default file does not exist (it is created on first use). */
  readonly keys: readonly CodecKey[] | undefined;
  /** The file the keys are read from (or will be created in); `undefined` when SANDBOXPLANE_CODEC_KEYS holds them. */
  readonly keysFile: string | undefined;
}

/** The keys of `settings`; the default file is created with a fresh key when it does not exist yet. */
export function codecKeysFor(settings: CodecSettings): readonly CodecKey[] {
  if (settings.keys !== undefined) return settings.keys;
  if (settings.keysFile === undefined) throw new SandboxPlaneError('CONFIG_INVALID', 'no payload codec keys configured');
  return ensureCodecKeysFile(settings.keysFile).keys;
}

/** The codec every client and worker of this plane uses, from validated settings. */
export function payloadCodecFor(settings: CodecSettings): AesGcmPayloadCodec {
  return new AesGcmPayloadCodec(codecKeysFor(settings));
}
