import { z } from 'zod';

/** A message sealed to one short-lived recipient (src/crypto/sealed-box.ts), all parts base64. */
export const sealedTextSchema = z.object({
  ephemeralPublicKey: z.string().min(1),
  iv: z.string().min(1),
  ciphertext: z.string(),
  tag: z.string().min(1),
});
export type SealedText = z.infer<typeof sealedTextSchema>;

/** A recipient's X25519 public key as a store command carries it: base64 of its SPKI DER (44 bytes). */
export const recipientPublicKeySchema = z.string().regex(/^[A-Za-z0-9+/]{59}[A-Za-z0-9+/=]$/, 'must be a base64 X25519 public key (SPKI DER)');
