import { createCipheriv, createDecipheriv, createPublicKey, diffieHellman, generateKeyPairSync, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import type { SealedText } from '../domain/sealed-text';

/**
 * A message only one short-lived recipient can open (X25519, HKDF-SHA256, AES-256-GCM).
 * An approver's TOTP secret travels to the CLI that enrolled it this way: the store
 * command's result is in workflow history, and the recipient's private key never leaves
 * the CLI's memory, so history holds nothing anyone can open later (DESIGN §12).
 */
const INFO = Buffer.from('cloud-sandbox-plane sealed text v1');

function keyFor(privateKey: KeyObject, publicKey: KeyObject, ephemeralPublicKey: string): Buffer {
  const shared = diffieHellman({ privateKey, publicKey });
  return Buffer.from(hkdfSync('sha256', shared, Buffer.from(ephemeralPublicKey, 'base64'), INFO, 32));
}

function publicKeyFrom(base64Der: string): KeyObject {
  return createPublicKey({ key: Buffer.from(base64Der, 'base64'), format: 'der', type: 'spki' });
}

/** Seals `plaintext` to the holder of `recipientPublicKey` (base64 SPKI DER, from {@link newRecipient}). */
export function sealTo(recipientPublicKey: string, plaintext: string): SealedText {
  const recipient = publicKeyFrom(recipientPublicKey);
  const ephemeral = generateKeyPairSync('x25519');
  const ephemeralPublicKey = ephemeral.publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyFor(ephemeral.privateKey, recipient, ephemeralPublicKey), iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return { ephemeralPublicKey, iv: iv.toString('base64'), ciphertext: ciphertext.toString('base64'), tag: cipher.getAuthTag().toString('base64') };
}

/** A key pair kept in memory for one exchange: hand out `publicKey`, then `open` what comes back. */
export function newRecipient(): { readonly publicKey: string; open(sealed: SealedText): string } {
  const pair = generateKeyPairSync('x25519');
  return {
    publicKey: pair.publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
    open(sealed) {
      const decipher = createDecipheriv('aes-256-gcm', keyFor(pair.privateKey, publicKeyFrom(sealed.ephemeralPublicKey), sealed.ephemeralPublicKey), Buffer.from(sealed.iv, 'base64'));
      decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(sealed.ciphertext, 'base64')), decipher.final()]).toString('utf8');
    },
  };
}

/** Whether `text` is a base64 X25519 public key in SPKI DER (what a store command may carry). */
export function isRecipientPublicKey(text: string): boolean {
  try {
    return publicKeyFrom(text).asymmetricKeyType === 'x25519';
  } catch {
    return false;
  }
}
