import crypto from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { SandboxPlaneError } from '../domain/errors';
import { ParameterSeal } from '../crypto/parameter-seal';
import { SnapshotSeal } from '../crypto/snapshot-seal';
import type { CodecKey } from './codec-keys';
import { readPayload, writePayload } from './payload-wire';
import { ProtobufWireError, ProtobufWriter } from './protobuf-wire';

/** The encoding marker of an encrypted payload; a payload without it is passed through as it is. */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** Metadata key naming the key a payload was encrypted with, so keys can rotate. */
export const KEY_ID_METADATA = 'encryption-key-id';

const IV_BYTES = 12;
const TAG_BYTES = 16;
const text = new TextEncoder();
const untext = new TextDecoder();

function metadataText(payload: Payload, key: string): string | undefined {
  const value = payload.metadata?.[key];
  return value === undefined || value === null ? undefined : untext.decode(value);
}

/** The key id and encoding are authenticated with the ciphertext: relabelling a payload breaks it. */
function associatedData(keyId: string): Buffer {
  return Buffer.from(text.encode(`${ENCRYPTED_ENCODING}\n${keyId}`));
}

/**
 * AES-256-GCM payload codec. Each payload (its metadata and data, serialized) is
 * encrypted with the current key (the first) under a fresh 96-bit IV; the result is
 * `{encoding: binary/encrypted, encryption-key-id: <id>}` with data `iv ‖ ciphertext ‖ tag`.
 * Decoding accepts every configured key; payloads written before the codec (no marker)
 * pass through, so old histories still replay.
 *
 * @example
 * const payloadCodec = new AesGcmPayloadCodec(readCodecKeysFile('.data/codec-keys'));
 * const sandboxes = await SandboxClient.connect({ address, namespace, taskQueue, payloadCodec });
 */
export class AesGcmPayloadCodec implements PayloadCodec {
  private readonly current: CodecKey;
  private readonly byId: ReadonlyMap<string, CodecKey>;

  constructor(keys: readonly CodecKey[]) {
    const first = keys[0];
    if (first === undefined) throw new SandboxPlaneError('CONFIG_INVALID', 'the payload codec needs at least one key');
    this.current = first;
    this.byId = new Map(keys.map((key) => [key.id, key]));
  }

  /** Seals NoEcho parameter values with keys derived from this codec's (DESIGN §14): whoever encodes payloads for the plane can seal them. */
  parameterSeal(): ParameterSeal {
    return new ParameterSeal([this.current, ...[...this.byId.values()].filter((key) => key.id !== this.current.id)]);
  }

  /** Seals snapshot content at rest with keys derived from this codec's (DESIGN §15): every role of the plane opens what another sealed. */
  snapshotSeal(): SnapshotSeal {
    return new SnapshotSeal([this.current, ...[...this.byId.values()].filter((key) => key.id !== this.current.id)]);
  }

  /** The id of the key new payloads are encrypted with. */
  get currentKeyId(): string {
    return this.current.id;
  }

  /** Every key id this codec decrypts. */
  get keyIds(): readonly string[] {
    return [...this.byId.keys()];
  }

  // async: a payload that cannot be decrypted rejects the promise rather than throwing.
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.encrypt(payload));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => (metadataText(payload, 'encoding') === ENCRYPTED_ENCODING ? this.decrypt(payload) : payload));
  }

  private encrypt(payload: Payload): Payload {
    const iv = crypto.randomBytes(IV_BYTES);
    const cipher = crypto.createCipheriv('aes-256-gcm', this.current.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(associatedData(this.current.id));
    const inner = new ProtobufWriter();
    try {
      writePayload(inner, payload);
    } catch (err) {
      if (!(err instanceof ProtobufWireError)) throw err;
      throw new SandboxPlaneError('INVALID_INPUT', `a payload cannot be encrypted: ${err.message}`, { cause: err });
    }
    const plain = inner.finish();
    const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    return {
      metadata: { encoding: text.encode(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: text.encode(this.current.id) },
      data: new Uint8Array(sealed),
    };
  }

  private decrypt(payload: Payload): Payload {
    const keyId = metadataText(payload, KEY_ID_METADATA);
    const key = keyId === undefined ? undefined : this.byId.get(keyId);
    if (keyId === undefined || key === undefined) {
      throw new SandboxPlaneError(
        'PAYLOAD_UNDECRYPTABLE',
        keyId === undefined
          ? `an encrypted payload names no key id (metadata ${KEY_ID_METADATA})`
          : `a payload is encrypted with key id ${keyId}, which is not among this process's keys (${this.keyIds.join(', ')})`,
        { details: { keyId: keyId ?? null, knownKeyIds: this.keyIds } },
      );
    }
    const data = payload.data ?? new Uint8Array();
    if (data.length < IV_BYTES + TAG_BYTES) {
      throw new SandboxPlaneError('PAYLOAD_UNDECRYPTABLE', `a payload encrypted with key id ${keyId} is truncated (${data.length} bytes)`, {
        details: { keyId },
      });
    }
    const iv = data.subarray(0, IV_BYTES);
    const tag = data.subarray(data.length - TAG_BYTES);
    const decipher = crypto.createDecipheriv('aes-256-gcm', key.key, iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(associatedData(keyId));
    decipher.setAuthTag(tag);
    let plain: Buffer;
    try {
      plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
    } catch (err) {
      throw new SandboxPlaneError(
        'PAYLOAD_UNDECRYPTABLE',
        `a payload encrypted with key id ${keyId} failed authentication: it was altered, or the key with that id is not the one it was encrypted with`,
        {
          details: { keyId },
          cause: err,
        },
      );
    }
    try {
      return readPayload(plain).payload;
    } catch (err) {
      if (!(err instanceof ProtobufWireError)) throw err;
      throw new SandboxPlaneError('PAYLOAD_UNDECRYPTABLE', `a payload encrypted with key id ${keyId} decrypts to no Payload message: ${err.message}`, {
        details: { keyId },
        cause: err,
      });
    }
  }
}
