import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { SandboxPlaneError } from '../domain/errors';
import { SEALED_PARAMETER_PREFIX, sealedParts } from '../domain/iac/sealed-parameters';

/** One key of the payload codec, as the seal derives its own from it. */
export interface SealKeySource {
  readonly id: string;
  readonly key: Uint8Array;
}

interface SealKeys {
  readonly encrypt: Buffer;
  readonly mac: Buffer;
}

const derive = (key: Uint8Array, purpose: string) => Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), `cloud-sandbox-plane noecho parameter ${purpose} v1`, 32));
const base64url = (bytes: Buffer) => bytes.toString('base64url');

/**
 * Seals NoEcho parameter values (DESIGN §14) with keys derived from the payload codec's
 * (HKDF, one purpose each): whoever holds the codec keys (the plane's clients and
 * workers) seals and opens; the codec server, which shows decoded payloads to people in
 * the UI, shows only the sealed text. The MAC is keyed, so a digest over it is no
 * oracle for guessing a weak secret. Bound to the parameter's name: a value moved to
 * another parameter does not open.
 */
export class ParameterSeal {
  private readonly current: { readonly id: string; readonly keys: SealKeys };
  private readonly byId: ReadonlyMap<string, SealKeys>;

  constructor(keys: readonly SealKeySource[]) {
    const derived = keys.map((source) => ({ id: source.id, keys: { encrypt: derive(source.key, 'encryption'), mac: derive(source.key, 'mac') } }));
    const first = derived[0];
    if (first === undefined) throw new SandboxPlaneError('CONFIG_INVALID', 'sealing parameters needs at least one payload codec key');
    this.current = first;
    this.byId = new Map(derived.map((entry) => [entry.id, entry.keys]));
  }

  private static mac(keys: SealKeys, name: string, value: string): Buffer {
    return createHmac('sha256', keys.mac).update(`${name}\u0000${value}`).digest();
  }

  /** `value` of parameter `name`, sealed with the current key. */
  seal(name: string, value: string): string {
    const { id, keys } = this.current;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', keys.encrypt, iv);
    cipher.setAAD(Buffer.from(name));
    const ciphertext = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
    return `${SEALED_PARAMETER_PREFIX}${id}:${base64url(ParameterSeal.mac(keys, name, value))}:${base64url(iv)}:${base64url(cipher.getAuthTag())}:${base64url(ciphertext)}`;
  }

  /** The value `sealed` holds for parameter `name`; INVALID_INPUT when it does not open here (another plane's keys, or moved). */
  open(name: string, sealed: string): string {
    const parts = sealedParts(sealed);
    const keys = parts === undefined ? undefined : this.byId.get(parts.keyId);
    if (parts === undefined || keys === undefined) throw unopenable(name, parts === undefined ? 'it is not sealed text' : `no key ${parts.keyId} here`);
    try {
      const decipher = createDecipheriv('aes-256-gcm', keys.encrypt, Buffer.from(parts.iv, 'base64url'));
      decipher.setAAD(Buffer.from(name));
      decipher.setAuthTag(Buffer.from(parts.tag, 'base64url'));
      const value = Buffer.concat([decipher.update(Buffer.from(parts.ciphertext, 'base64url')), decipher.final()]).toString('utf8');
      if (!timingSafeEqual(ParameterSeal.mac(keys, name, value), Buffer.from(parts.mac, 'base64url'))) throw new Error('its MAC does not match');
      return value;
    } catch (err) {
      throw unopenable(name, (err as Error).message);
    }
  }

  /** A value's keyed digest form (what {@link parametersForDigest} keeps of a sealed one), with the current key. */
  digestForm(name: string, value: string): string {
    return `${SEALED_PARAMETER_PREFIX}${this.current.id}:${base64url(ParameterSeal.mac(this.current.keys, name, value))}`;
  }
}

function unopenable(name: string, why: string): SandboxPlaneError {
  return new SandboxPlaneError('INVALID_INPUT', `the sealed value of NoEcho parameter ${name} does not open: ${why}`, {
    hint: 'Send NoEcho values through sandboxctl or the SDK of this plane, which seal them with its payload codec keys.',
  });
}
