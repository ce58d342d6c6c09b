import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { SandboxPlaneError } from '../domain/errors';
import { SEALED_PARAMETER_PREFIX, sealedParts } from '../domain/iac/sealed-parameters';

/** Whose value it is: a sealed value opens only for the same principal's parameter of the same name. */
export interface SealOwner {
  readonly principal: string;
  readonly parameter: string;
}

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
 * oracle for guessing a weak secret. Bound to the principal and the parameter's name: a
 * value copied into another principal's run, or moved to another parameter, does not
 * open (and its MAC says nothing of another principal's equal value).
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

  private static mac(keys: SealKeys, owner: SealOwner, value: string): Buffer {
    return createHmac('sha256', keys.mac).update(`${owner.principal}\u0000${owner.parameter}\u0000${value}`).digest();
  }

  private static boundTo(owner: SealOwner): Buffer {
    return Buffer.from(`${owner.principal}\u0000${owner.parameter}`);
  }

  /** `value` of `owner`'s parameter, sealed with the current key. */
  seal(owner: SealOwner, value: string): string {
    const { id, keys } = this.current;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', keys.encrypt, iv);
    cipher.setAAD(ParameterSeal.boundTo(owner));
    const ciphertext = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
    return `${SEALED_PARAMETER_PREFIX}${id}:${base64url(ParameterSeal.mac(keys, owner, value))}:${base64url(iv)}:${base64url(cipher.getAuthTag())}:${base64url(ciphertext)}`;
  }

  /** The value `sealed` holds for `owner`'s parameter; INVALID_INPUT when it does not open here (another plane's keys, another principal's, or moved). */
  open(owner: SealOwner, sealed: string): string {
    const parts = sealedParts(sealed);
    const keys = parts === undefined ? undefined : this.byId.get(parts.keyId);
    if (parts === undefined || keys === undefined) throw unopenable(owner.parameter, parts === undefined ? 'it is not sealed text' : `no key ${parts.keyId} here`);
    try {
      const decipher = createDecipheriv('aes-256-gcm', keys.encrypt, Buffer.from(parts.iv, 'base64url'));
      decipher.setAAD(ParameterSeal.boundTo(owner));
      decipher.setAuthTag(Buffer.from(parts.tag, 'base64url'));
      const value = Buffer.concat([decipher.update(Buffer.from(parts.ciphertext, 'base64url')), decipher.final()]).toString('utf8');
      if (!timingSafeEqual(ParameterSeal.mac(keys, owner, value), Buffer.from(parts.mac, 'base64url'))) throw new Error('its MAC does not match');
      return value;
    } catch (err) {
      throw unopenable(owner.parameter, `it was not sealed for this principal and parameter (${(err as Error).message})`);
    }
  }

  /** A value's keyed digest form (what {@link parametersForDigest} keeps of a sealed one), with the current key. */
  digestForm(owner: SealOwner, value: string): string {
    return `${SEALED_PARAMETER_PREFIX}${this.current.id}:${base64url(ParameterSeal.mac(this.current.keys, owner, value))}`;
  }
}

function unopenable(name: string, why: string): SandboxPlaneError {
  return new SandboxPlaneError('INVALID_INPUT', `the sealed value of NoEcho parameter ${name} does not open: ${why}`, {
    hint: 'Send NoEcho values through sandboxctl or the SDK of this plane, which seal them with its payload codec keys.',
  });
}
