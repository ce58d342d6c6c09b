import fs from 'node:fs';
import path from 'node:path';
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/** The HKDF purpose of the audit chain's HMAC key (DESIGN §19), derived from the store's key file. */
export const AUDIT_CHAIN_KEY_PURPOSE = 'audit chain';

/**
 * Secrets at rest (AES-256-GCM under a key file only the store worker reads): the store
 * keeps approvers' TOTP secrets this way, never in clear (DESIGN §12). The additional
 * data binds each secret to its row, so a secret moved to another approver's row does
 * not open.
 */
export class SecretBox {
  private constructor(private readonly key: Buffer) {}

  /** The box of `file`; a missing file is created with a fresh key, readable by its owner only. */
  static fromKeyFile(file: string): SecretBox {
    if (!fs.existsSync(file)) {
      fs.mkdirSync(path.dirname(file), { recursive: true });
      try {
        fs.writeFileSync(file, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
      } catch (err) {
        // Another process created it first: use theirs.
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
    }
    const key = Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64');
    if (key.length !== 32) throw new Error(`${file} does not hold a 32-byte key in base64`);
    return new SecretBox(key);
  }

  /**
   * A key of its own for `purpose` (HKDF-SHA256 with the purpose as its info), so one key
   * file serves several uses and no use can stand in for another: the audit chain's HMAC key
   * is `deriveKey('audit chain')`.
   */
  deriveKey(purpose: string): Buffer {
    return Buffer.from(hkdfSync('sha256', this.key, Buffer.alloc(0), `cloud-sandbox-plane ${purpose} v1`, 32));
  }

  seal(secret: Buffer, boundTo: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(boundTo));
    const ciphertext = Buffer.concat([cipher.update(secret), cipher.final()]);
    return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), ciphertext.toString('base64')].join(':');
  }

  open(sealed: string, boundTo: string): Buffer {
    const [version, iv, tag, ciphertext] = sealed.split(':');
    if (version !== 'v1' || iv === undefined || tag === undefined || ciphertext === undefined) throw new Error('not a sealed secret');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'));
    decipher.setAAD(Buffer.from(boundTo));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64')), decipher.final()]);
  }
}
