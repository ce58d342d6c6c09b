import type { Payload } from '@temporalio/common';
import { lengthDelimited, MAP_ENTRY_KEY, MAP_ENTRY_VALUE, protobufFields, ProtobufWireError, type ProtobufWriter, varintValue } from './protobuf-wire';

// temporal.api.common.v1.Payload: map<string, bytes> metadata = 1; bytes data = 2; repeated ExternalPayloadDetails external_payloads = 3.
const PAYLOAD_METADATA = 1;
const PAYLOAD_DATA = 2;
const PAYLOAD_EXTERNAL_PAYLOADS = 3;
// Payload.ExternalPayloadDetails: int64 size_bytes = 1.
const EXTERNAL_SIZE_BYTES = 1;

type ExternalPayloadDetails = NonNullable<Payload['externalPayloads']>[number];

/** A payload as read off the wire, and whether it points at external storage (which this plane does not configure). */
export interface WirePayload {
  readonly payload: Payload;
  readonly external: boolean;
}

/** A detail's size as a number: protobufjs gives a Long (or takes a number or a decimal string). */
function sizeOf(details: ExternalPayloadDetails): number {
  const size: unknown = details.sizeBytes;
  if (size === null || size === undefined) return 0;
  if (typeof size === 'object' && typeof (size as { toNumber?: unknown }).toNumber === 'function') return (size as { toNumber(): number }).toNumber();
  return Number(size);
}

/**
 * Writes `payload`'s fields into `writer`, byte for byte as `temporal.api.common.v1.Payload.encode`
 * does, external payload details included (a size that is not a non-negative safe integer is a
 * ProtobufWireError).
 */
export function writePayload(writer: ProtobufWriter, payload: Payload): void {
  for (const [key, value] of Object.entries(payload.metadata ?? {})) {
    if (value === null || value === undefined) continue;
    writer.mapEntry(PAYLOAD_METADATA, key, value);
  }
  if (payload.data !== null && payload.data !== undefined) writer.bytes(PAYLOAD_DATA, payload.data);
  for (const details of payload.externalPayloads ?? []) writer.message(PAYLOAD_EXTERNAL_PAYLOADS, (inner) => inner.uint(EXTERNAL_SIZE_BYTES, sizeOf(details)));
}

/**
 * Reads one `temporal.api.common.v1.Payload` as `Payload.decode` reads it: absent data reads as
 * empty; each external payload's `sizeBytes` reads as a number (exact up to 2^53 - 1), which the
 * SDK's external-storage helpers take as they take a Long (`readSizeBytes`).
 */
export function readPayload(message: Uint8Array): WirePayload {
  const metadata: Record<string, Uint8Array> = {};
  let data: Uint8Array = Buffer.alloc(0);
  const externalPayloads: ExternalPayloadDetails[] = [];
  for (const field of protobufFields(message)) {
    if (field.field === PAYLOAD_METADATA) {
      let key = '';
      let value: Uint8Array = Buffer.alloc(0);
      for (const part of protobufFields(lengthDelimited(field))) {
        if (part.field === MAP_ENTRY_KEY) key = lengthDelimited(part).toString('utf8');
        else if (part.field === MAP_ENTRY_VALUE) value = lengthDelimited(part);
      }
      metadata[key] = value;
    } else if (field.field === PAYLOAD_DATA) {
      data = lengthDelimited(field);
    } else if (field.field === PAYLOAD_EXTERNAL_PAYLOADS) {
      let sizeBytes = 0;
      for (const part of protobufFields(lengthDelimited(field))) if (part.field === EXTERNAL_SIZE_BYTES) sizeBytes = varintValue(part);
      if (!Number.isSafeInteger(sizeBytes)) throw new ProtobufWireError(`an external payload's size_bytes is past 2^53 - 1`);
      externalPayloads.push({ sizeBytes: sizeBytes as unknown as ExternalPayloadDetails['sizeBytes'] });
    }
  }
  const payload: Payload = externalPayloads.length > 0 ? { metadata, data, externalPayloads } : { metadata, data };
  return { payload, external: externalPayloads.length > 0 };
}
