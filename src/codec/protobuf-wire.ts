/**
 * The few protobuf wire rules this project writes and reads by hand (varints, strings,
 * bytes, embedded messages), so that a payload or one gRPC call does not need
 * `@temporalio/proto` (protobufjs reflection over the whole Temporal API, ~120 ms to load).
 * Each message on top of it names its field numbers from the Temporal API's .proto files.
 */

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LENGTH_DELIMITED = 2;
const WIRE_FIXED32 = 5;

/** The field numbers of a map entry (`map<K, V>` is `repeated Entry { K key = 1; V value = 2; }` on the wire). */
export const MAP_ENTRY_KEY = 1;
export const MAP_ENTRY_VALUE = 2;

/** A message that does not follow the wire format (truncated, a bad tag or wire type), or a value the wire cannot carry as given. */
export class ProtobufWireError extends Error {
  override readonly name = 'ProtobufWireError';
}

/** Builds one message as protobufjs writes it: fields in the order they are called (by field number), proto3 defaults left out. */
export class ProtobufWriter {
  private readonly chunks: Uint8Array[] = [];
  private length = 0;

  private push(chunk: Uint8Array): void {
    this.chunks.push(chunk);
    this.length += chunk.length;
  }

  private varint(value: number): void {
    // Only what the fields written here hold (lengths, enums, sizes); a negative int32 would need 10 bytes of two's complement.
    if (!Number.isSafeInteger(value) || value < 0) throw new ProtobufWireError(`a varint must be a non-negative safe integer, got ${value}`);
    const bytes: number[] = [];
    let rest = value;
    while (rest > 0x7f) {
      bytes.push((rest & 0x7f) | 0x80);
      rest = Math.floor(rest / 128);
    }
    bytes.push(rest);
    this.push(Uint8Array.from(bytes));
  }

  private tag(field: number, wireType: number): void {
    this.varint(field * 8 + wireType);
  }

  private lengthDelimited(field: number, value: Uint8Array): void {
    this.tag(field, WIRE_LENGTH_DELIMITED);
    this.varint(value.length);
    this.push(value);
  }

  /** A non-negative integer (an enum, a uint32, a size in an int64) up to 2^53 - 1; zero, proto3's default, is not written. */
  uint(field: number, value: number): this {
    if (value === 0) return this;
    this.tag(field, WIRE_VARINT);
    this.varint(value);
    return this;
  }

  /** Bytes; empty, proto3's default, are not written. */
  bytes(field: number, value: Uint8Array): this {
    if (value.length > 0) this.lengthDelimited(field, value);
    return this;
  }

  /** A string; empty, proto3's default, is not written. */
  string(field: number, value: string): this {
    return this.bytes(field, Buffer.from(value, 'utf8'));
  }

  /** One entry of a `map<string, bytes>`: key and value are both written, even when empty, as protobufjs writes them. */
  mapEntry(field: number, key: string, value: Uint8Array): this {
    const entry = new ProtobufWriter();
    entry.lengthDelimited(MAP_ENTRY_KEY, Buffer.from(key, 'utf8'));
    entry.lengthDelimited(MAP_ENTRY_VALUE, value);
    this.lengthDelimited(field, entry.finish());
    return this;
  }

  /** An embedded message (written even when empty, as protobufjs writes a set message field). */
  message(field: number, build: (writer: ProtobufWriter) => void): this {
    const inner = new ProtobufWriter();
    build(inner);
    this.lengthDelimited(field, inner.finish());
    return this;
  }

  finish(): Buffer {
    return Buffer.concat(this.chunks, this.length);
  }
}

/** One field as read: its number and, for the wire types messages here use, its value. */
export type ProtobufField = { readonly field: number; readonly wireType: 0; readonly value: number } | { readonly field: number; readonly wireType: 2; readonly value: Buffer };

/**
 * Reads the fields of one message in order. Fixed32/64 fields are skipped, as unknown fields
 * are; groups (wire types 3 and 4, deprecated, in no message read here) are refused as a wire
 * error. A varint reads as a number: exact up to 2^53 - 1, which covers the enums, codes and
 * sizes read here; a negative int32 or int64 (sent as 10 bytes of two's complement) would read
 * as a large positive number, and no field read here holds one.
 */
export function* protobufFields(message: Uint8Array): Generator<ProtobufField> {
  const bytes = Buffer.isBuffer(message) ? message : Buffer.from(message.buffer, message.byteOffset, message.length);
  let at = 0;
  const varint = (): number => {
    let value = 0;
    let scale = 1;
    for (let read = 0; read < 10; read += 1) {
      if (at >= bytes.length) throw new ProtobufWireError('truncated varint');
      const byte = bytes[at++] as number;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 128;
    }
    throw new ProtobufWireError('varint longer than 10 bytes');
  };
  while (at < bytes.length) {
    const key = varint();
    const field = Math.floor(key / 8);
    const wireType = key % 8;
    if (field === 0) throw new ProtobufWireError('field number 0');
    if (wireType === WIRE_VARINT) {
      yield { field, wireType, value: varint() };
    } else if (wireType === WIRE_LENGTH_DELIMITED) {
      const length = varint();
      if (at + length > bytes.length) throw new ProtobufWireError(`field ${field} runs past the end of the message`);
      yield { field, wireType, value: bytes.subarray(at, at + length) };
      at += length;
    } else if (wireType === WIRE_FIXED64 || wireType === WIRE_FIXED32) {
      at += wireType === WIRE_FIXED64 ? 8 : 4;
      if (at > bytes.length) throw new ProtobufWireError(`field ${field} runs past the end of the message`);
    } else {
      throw new ProtobufWireError(`field ${field} has wire type ${wireType}, which this reader does not take`);
    }
  }
}

/** The bytes of a length-delimited field; a varint where bytes were expected is a wire error. */
export function lengthDelimited(field: ProtobufField): Buffer {
  if (field.wireType !== WIRE_LENGTH_DELIMITED) throw new ProtobufWireError(`field ${field.field} is a varint where bytes were expected`);
  return field.value;
}

/** The value of a varint field; bytes where a varint was expected is a wire error. */
export function varintValue(field: ProtobufField): number {
  if (field.wireType !== WIRE_VARINT) throw new ProtobufWireError(`field ${field.field} is bytes where a varint was expected`);
  return field.value;
}
