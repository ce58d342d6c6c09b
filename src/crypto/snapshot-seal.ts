import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { SandboxPlaneError } from '../domain/errors';
import type { SealKeySource } from './parameter-seal';

const MAGIC = 'sandboxplane-snapshot v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

const derive = (key: Uint8Array) => Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'cloud-sandbox-plane snapshot content v1', 32));

/**
 * Seals snapshot content at rest (DESIGN §15) with a key derived from the payload codec's
 * (HKDF, a purpose of its own): every role of one plane holds the codec keys, so the docker
 * host that captures a state seals it and the one that restores it opens it, with no key
 * passed around. A moto state holds the seed its sandbox's key was drawn from, so it is
 * never kept in clear. Bound to the content's digest: one content cannot pass for another.
 *
 * Sealed form: `sandboxplane-snapshot v1\n<key id>\n` then IV, ciphertext and tag.
 */
export class SnapshotSeal {
  private readonly current: { readonly id: string; readonly key: Buffer };
  private readonly byId: ReadonlyMap<string, Buffer>;

  constructor(keys: readonly SealKeySource[]) {
    const derived = keys.map((source) => ({ id: source.id, key: derive(source.key) }));
    const first = derived[0];
    if (first === undefined) throw new SandboxPlaneError('CONFIG_INVALID', 'sealing snapshots needs at least one payload codec key');
    this.current = first;
    this.byId = new Map(derived.map((entry) => [entry.id, entry.key]));
  }

  seal(content: Buffer, digest: string): Buffer {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.current.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(boundTo(digest));
    const ciphertext = Buffer.concat([cipher.update(content), cipher.final()]);
    return Buffer.concat([Buffer.from(`${MAGIC}\n${this.current.id}\n`), iv, ciphertext, cipher.getAuthTag()]);
  }

  /** Whether `head` (a sealed file's first bytes) was sealed under a key this plane holds. */
  opensHere(head: Buffer): boolean {
    const [magic, keyId] = head.subarray(0, 200).toString('latin1').split('\n', 2);
    return magic === MAGIC && keyId !== undefined && this.byId.has(keyId);
  }

  /** What `sealed` holds; SNAPSHOT_CORRUPT when it is not sealed content of `digest` under a key of this plane. */
  open(sealed: Buffer, digest: string): Buffer {
    const header = sealed.subarray(0, 200).toString('latin1').split('\n', 2);
    const key = header[0] === MAGIC && header[1] !== undefined ? this.byId.get(header[1]) : undefined;
    if (key === undefined) throw corrupt(digest, header[0] === MAGIC ? `it was sealed with key ${header[1]}, which this plane does not hold` : 'it is not sealed snapshot content');
    const start = `${MAGIC}\n${header[1]}\n`.length;
    if (sealed.length < start + IV_BYTES + TAG_BYTES) throw corrupt(digest, 'it is cut short');
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(start, start + IV_BYTES), { authTagLength: TAG_BYTES });
      decipher.setAAD(boundTo(digest));
      decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
      return Buffer.concat([decipher.update(sealed.subarray(start + IV_BYTES, sealed.length - TAG_BYTES)), decipher.final()]);
    } catch (err) {
      throw corrupt(digest, `it does not open (${(err as Error).message})`);
    }
  }
}

function boundTo(digest: string): Buffer {
  return Buffer.from(`snapshot:${digest}`);
}

function corrupt(digest: string, why: string): SandboxPlaneError {
  return new SandboxPlaneError('SNAPSHOT_CORRUPT', `snapshot content ${digest} cannot be read: ${why}`, {
    hint: 'Take the snapshot again; the plane keeps content only under its own payload codec keys (SANDBOXPLANE_CODEC_KEYS).',
  });
}
