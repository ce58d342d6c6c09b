import type { Payload } from '@temporalio/common';
import { lengthDelimited, protobufFields, ProtobufWireError, type ProtobufWriter } from './protobuf-wire';

// temporal.api.common.v1.Payload: map<string, bytes> metadata = 1; bytes data = 2; repeated ExternalPayloadDetails external_payloads = 3.
const PAYLOAD_METADATA = 1;
const PAYLOAD_DATA = 2;
const PAYLOAD_EXTERNAL_PAYLOADS = 3;
// A map entry (as ProtobufWriter.mapEntry writes it): key = 1, value = 2.
const ENTRY_KEY = 1;
const ENTRY_VALUE = 2;

/** A payload as read off the wire, and whether it points at external storage (which this plane does not configure). */
export interface WirePayload {
  readonly payload: Payload;
  readonly external: boolean;
}

/** Writes `payload`'s fields into `writer`, byte for byte as `temporal.api.common.v1.Payload.encode` does. */
export function writePayload(writer: ProtobufWriter, payload: Payload): void {
  if ((payload.externalPayloads?.length ?? 0) > 0) throw new ProtobufWireError('a payload with external payloads cannot be written here');
  for (const [key, value] of Object.entries(payload.metadata ?? {})) {
    if (value === null || value === undefined) continue;
    writer.mapEntry(PAYLOAD_METADATA, key, value);
  }
  if (payload.data !== null && payload.data !== undefined) writer.bytes(PAYLOAD_DATA, payload.data);
}

/** Reads one `temporal.api.common.v1.Payload`; absent data reads as empty, as protobufjs reads it. */
export function readPayload(message: Uint8Array): WirePayload {
  const metadata: Record<string, Uint8Array> = {};
  let data: Uint8Array = Buffer.alloc(0);
  let external = false;
  for (const field of protobufFields(message)) {
    if (field.field === PAYLOAD_METADATA) {
      let key = '';
      let value: Uint8Array = Buffer.alloc(0);
      for (const part of protobufFields(lengthDelimited(field))) {
        if (part.field === ENTRY_KEY) key = lengthDelimited(part).toString('utf8');
        else if (part.field === ENTRY_VALUE) value = lengthDelimited(part);
      }
      metadata[key] = value;
    } else if (field.field === PAYLOAD_DATA) {
      data = lengthDelimited(field);
    } else if (field.field === PAYLOAD_EXTERNAL_PAYLOADS) {
      external = true;
    }
  }
  return { payload: { metadata, data }, external };
}
