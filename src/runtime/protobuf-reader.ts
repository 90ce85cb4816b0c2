// Reading protobuf's wire format, as much of it as the ONNX readers here need (model-properties.ts
// for a model's metadata_props, onnx-initializers.ts for its weights): varints, length-delimited
// fields, and StringStringEntryProto (key 1, value 2).

export interface Field {
  readonly field: number;
  readonly wire: number;
  /** Varint value (wire 0); for wire 2, the payload's bounds. */
  readonly value: number;
  readonly start: number;
  readonly end: number;
}

export function varint(bytes: Uint8Array, at: number): { value: number; next: number } {
  let value = 0;
  for (let i = at, scale = 1; i < bytes.length; i++, scale *= 128) {
    value += (bytes[i]! & 0x7f) * scale;
    if (bytes[i]! < 0x80) return { value, next: i + 1 };
  }
  throw new Error('truncated varint');
}

export function* fields(bytes: Uint8Array, start: number, end: number): Generator<Field> {
  for (let at = start; at < end; ) {
    const tag = varint(bytes, at);
    const [field, wire] = [Math.floor(tag.value / 8), tag.value % 8];
    at = tag.next;
    if (wire === 0) {
      const { value, next } = varint(bytes, at);
      yield { field, wire, value, start: at, end: next };
      at = next;
    } else if (wire === 2) {
      const length = varint(bytes, at);
      yield { field, wire, value: length.value, start: length.next, end: length.next + length.value };
      at = length.next + length.value;
    } else if (wire === 1 || wire === 5) {
      at += wire === 1 ? 8 : 4;
    } else throw new Error(`protobuf wire type ${wire}`);
  }
}

export function packedVarints(bytes: Uint8Array, f: Field): number[] {
  const values: number[] = [];
  for (let at = f.start; at < f.end; ) {
    const { value, next } = varint(bytes, at);
    values.push(value);
    at = next;
  }
  return values;
}

export const text = (bytes: Uint8Array, f: Field): string => Buffer.from(bytes.buffer, bytes.byteOffset + f.start, f.end - f.start).toString('utf8');

/** A StringStringEntryProto (key 1, value 2) in bytes[start, end). */
export function stringEntry(bytes: Uint8Array, start = 0, end = bytes.length): { key?: string; value?: string } {
  const entry: { key?: string; value?: string } = {};
  for (const f of fields(bytes, start, end)) {
    if (f.field === 1 && f.wire === 2) entry.key = text(bytes, f);
    else if (f.field === 2 && f.wire === 2) entry.value = text(bytes, f);
  }
  return entry;
}
