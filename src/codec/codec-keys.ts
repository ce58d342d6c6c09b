import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { SandboxPlaneError } from '../domain/errors';

/** One AES-256 key and the id written beside every payload it encrypts. */
export interface CodecKey {
  readonly id: string;
  /** 32 bytes. */
  readonly key: Uint8Array;
}

export const CODEC_KEY_BYTES = 32;
export const CODEC_KEY_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

function invalid(message: string): SandboxPlaneError {
  return new SandboxPlaneError('CONFIG_INVALID', message, {
    hint: 'Each key is keyId:base64key, the key 32 random bytes: `echo "k2:$(openssl rand -base64 32)"` (docs/security.md#payload-encryption).',
  });
}

/** Parses one `keyId:base64key` entry; an error says what is wrong without echoing the key. */
export function parseCodecKey(entry: string, where: string): CodecKey {
  const colon = entry.indexOf(':');
  if (colon < 0) throw invalid(`${where} is not keyId:base64key (no ':')`);
  const id = entry.slice(0, colon).trim();
  const encoded = entry.slice(colon + 1).trim();
  if (!CODEC_KEY_ID_PATTERN.test(id)) {
    throw invalid(`${where}: the key id must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit`);
  }
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) throw invalid(`${where} (key id ${id}): the key is not base64`);
  const key = Buffer.from(encoded, 'base64');
  if (key.length !== CODEC_KEY_BYTES) {
    throw invalid(`${where} (key id ${id}): the key must be ${CODEC_KEY_BYTES} bytes (AES-256), got ${key.length}`);
  }
  return Object.freeze({ id, key: new Uint8Array(key) });
}

/**
 * Parses a list of keys, one per line or comma-separated; blank lines and lines starting
 * with `#` are skipped. The first key is the current one (it encrypts); all of them decrypt.
 */
export function parseCodecKeys(text: string, source: string): readonly CodecKey[] {
  const multiline = text.includes('\n');
  const entries = text.split('\n').flatMap((line, index) =>
    line.trim().startsWith('#')
      ? []
      : line
          .split(',')
          .map((entry, column) => ({ entry: entry.trim(), where: multiline ? `line ${index + 1}` : `entry ${column + 1}` }))
          .filter(({ entry }) => entry !== ''),
  );
  const keys = entries.map(({ entry, where }) => parseCodecKey(entry, `${source} ${where}`));
  if (keys.length === 0) throw invalid(`${source} holds no key`);
  const seen = new Set<string>();
  for (const { id } of keys) {
    if (seen.has(id)) throw invalid(`${source} names key id ${id} twice`);
    seen.add(id);
  }
  return Object.freeze(keys);
}

/** Reads a keys file (see {@link parseCodecKeys}); an unreadable or malformed file is CONFIG_INVALID naming it. */
export function readCodecKeysFile(file: string): readonly CodecKey[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw invalid(`cannot read the codec keys file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return parseCodecKeys(text, file);
}

/** A fresh random key with an id naming the day it was made (`k20261203-1a2b3c`). */
export function generateCodecKey(now = new Date()): CodecKey {
  const day = now.toISOString().slice(0, 10).replace(/-/g, '');
  return Object.freeze({ id: `k${day}-${crypto.randomBytes(3).toString('hex')}`, key: new Uint8Array(crypto.randomBytes(CODEC_KEY_BYTES)) });
}

/** The `keyId:base64key` line of a key, as a keys file and SANDBOXPLANE_CODEC_KEYS hold it. */
export function formatCodecKey(key: CodecKey): string {
  return `${key.id}:${Buffer.from(key.key).toString('base64')}`;
}

/**
 * The keys in `file`, which is written first with one fresh key when it does not exist
 * (mode 0600). Written aside and linked into place, so processes starting at the same
 * moment all end up with the one key that won, never a half-written file.
 */
export function ensureCodecKeysFile(file: string): { keys: readonly CodecKey[]; created: boolean } {
  if (!fs.existsSync(file)) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const aside = `${file}.${process.pid}.${crypto.randomBytes(4).toString('hex')}`;
    const text = `# Payload codec keys (docs/security.md#payload-encryption): keyId:base64key, the first encrypts.\n${formatCodecKey(generateCodecKey())}\n`;
    fs.writeFileSync(aside, text, { mode: 0o600 });
    try {
      fs.linkSync(aside, file);
      return { keys: readCodecKeysFile(file), created: true };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      fs.rmSync(aside, { force: true });
    }
  }
  return { keys: readCodecKeysFile(file), created: false };
}
