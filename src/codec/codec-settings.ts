import fs from 'node:fs';
import { z } from 'zod';
import { DEFAULT_CODEC_KEYS_PATH } from '../config/paths';
import { SandboxPlaneError } from '../domain/errors';
import { AesGcmPayloadCodec } from './aes-gcm-codec';
import { ensureCodecKeysFile, parseCodecKeys, readCodecKeysFile, type CodecKey } from './codec-keys';

/** Where the payload codec's keys come from, validated once at start. */
export interface CodecSettings {
  /** The keys, current first; `undefined` while the default file does not exist (it is created on first use). */
  readonly keys: readonly CodecKey[] | undefined;
  /** The file the keys are read from (or will be created in); `undefined` when SANDBOXPLANE_CODEC_KEYS holds them. */
  readonly keysFile: string | undefined;
}

export const CODEC_KEYS_ENV = 'SANDBOXPLANE_CODEC_KEYS';
export const CODEC_KEYS_FILE_ENV = 'SANDBOXPLANE_CODEC_KEYS_FILE';

/** The two variables, as zod fields of the configuration's schema (src/config/config.ts). */
export const codecEnvShape = {
  [CODEC_KEYS_ENV]: z
    .string()
    .transform((value, ctx) => {
      try {
        return parseCodecKeys(value, CODEC_KEYS_ENV);
      } catch (err) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: (err as Error).message.replace(`${CODEC_KEYS_ENV} `, '') });
        return z.NEVER;
      }
    })
    .optional(),
  [CODEC_KEYS_FILE_ENV]: z.string().trim().min(1, 'must not be empty when set').optional(),
} as const;

type CodecEnvValues = {
  readonly [CODEC_KEYS_ENV]?: readonly CodecKey[];
  readonly [CODEC_KEYS_FILE_ENV]?: string;
};

/**
 * The settings from already-parsed values: the keys of SANDBOXPLANE_CODEC_KEYS, or of
 * SANDBOXPLANE_CODEC_KEYS_FILE (which must exist), or of the default file when it exists.
 * Returns the issues (variable, message) instead of throwing, for one report of every bad key.
 */
export function resolveCodecSettings(values: CodecEnvValues): { settings?: CodecSettings; issues: { key: string; message: string }[] } {
  const inline = values[CODEC_KEYS_ENV];
  const file = values[CODEC_KEYS_FILE_ENV];
  if (inline !== undefined && file !== undefined) {
    return { issues: [{ key: CODEC_KEYS_ENV, message: `set either ${CODEC_KEYS_ENV} or ${CODEC_KEYS_FILE_ENV}, not both` }] };
  }
  if (inline !== undefined) return { settings: Object.freeze({ keys: inline, keysFile: undefined }), issues: [] };
  const keysFile = file ?? DEFAULT_CODEC_KEYS_PATH;
  if (file === undefined && !fs.existsSync(keysFile)) return { settings: Object.freeze({ keys: undefined, keysFile }), issues: [] };
  try {
    return { settings: Object.freeze({ keys: readCodecKeysFile(keysFile), keysFile }), issues: [] };
  } catch (err) {
    return { issues: [{ key: CODEC_KEYS_FILE_ENV, message: (err as Error).message }] };
  }
}

/** Only the codec's variables from `env`: what the SDK reads when it is given no codec. */
export function loadCodecSettings(env: Readonly<Record<string, string | undefined>> = process.env): CodecSettings {
  const present = Object.fromEntries(Object.keys(codecEnvShape).flatMap((key) => (env[key] ? [[key, env[key]]] : [])));
  const parsed = z.object(codecEnvShape).safeParse(present);
  const resolved = parsed.success ? resolveCodecSettings(parsed.data) : { issues: parsed.error.issues.map((issue) => ({ key: issue.path.join('.'), message: issue.message })) };
  if (resolved.settings === undefined || resolved.issues.length > 0) {
    throw new SandboxPlaneError('CONFIG_INVALID', `Invalid payload codec configuration:\n${resolved.issues.map((issue) => `  ${issue.key}: ${issue.message}`).join('\n')}`, {
      details: { keys: resolved.issues.map((issue) => issue.key) },
    });
  }
  return resolved.settings;
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
