// Tensor data between the KServe v2 gRPC wire (typed `contents` fields or raw little-endian bytes)
// and Conveyor's typed arrays. Pure functions: no gRPC import, so the rules are unit-tested alone.
// Raw bytes are read in place where alignment allows, because ModelInfer payloads can be large;
// every supported host is little-endian, which is also the wire's byte order.

import { elementSize, integerRange, storageOf, type FixedDataType as FixedType } from '../../contracts/datatypes.js';
import type { DataType, FixedTensorData, Tensor, TensorData } from '../../contracts/tensors.js';
import { invalidArg } from '../../errors.js';
import type { WireLong, WireTensorContents } from './wire-types.js';

/** The `contents` field each datatype travels in; FP16 and BF16 have none (raw only). */
export const CONTENTS_FIELD: Readonly<Record<DataType, keyof WireTensorContents | null>> = {
  BOOL: 'bool_contents',
  INT8: 'int_contents',
  INT16: 'int_contents',
  INT32: 'int_contents',
  INT64: 'int64_contents',
  UINT8: 'uint_contents',
  UINT16: 'uint_contents',
  UINT32: 'uint_contents',
  UINT64: 'uint64_contents',
  FP32: 'fp32_contents',
  FP64: 'fp64_contents',
  BYTES: 'bytes_contents',
  FP16: null,
  BF16: null,
};

const CONTENTS_FIELD_NAMES: ReadonlySet<string> = new Set(Object.values(CONTENTS_FIELD).filter((f) => f !== null));

/** Inclusive value ranges of the types that share a wider (32-bit) `contents` field. */
const NARROW_RANGE: Partial<Record<DataType, readonly [number, number]>> = Object.fromEntries(
  (['INT8', 'INT16', 'UINT8', 'UINT16'] as const).map((type) => [type, integerRange(type)!.map(Number) as [number, number]]),
);

/** Wire shape (int64 decimal strings) → dimensions, each a non-negative safe integer. */
export function parseShape(shape: readonly WireLong[], tensor: string): number[] {
  return shape.map((dim) => {
    const n = Number(dim);
    if (!Number.isSafeInteger(n) || n < 0) throw invalidArg(`tensor '${tensor}': invalid shape dimension ${String(dim)}`);
    return n;
  });
}

/** Names of the `contents` fields that hold at least one element. */
export function populatedContentsFields(contents: Partial<WireTensorContents> | null | undefined): (keyof WireTensorContents)[] {
  if (!contents) return [];
  return (Object.keys(contents) as (keyof WireTensorContents)[]).filter((key) => CONTENTS_FIELD_NAMES.has(key) && (contents[key]?.length ?? 0) > 0);
}

/** Typed `contents` → tensor data; the datatype's own field must hold exactly `count` elements. */
export function dataFromContents(name: string, datatype: DataType, count: number, contents: Partial<WireTensorContents>): TensorData {
  const field = CONTENTS_FIELD[datatype];
  if (field === null) throw invalidArg(`input '${name}': ${datatype} data can only be sent in raw_input_contents`);
  const stray = populatedContentsFields(contents).filter((f) => f !== field);
  if (stray.length > 0) throw invalidArg(`input '${name}': ${datatype} data belongs in contents.${field}, not ${stray.join(', ')}`);
  const values = contents[field] ?? [];
  if (values.length !== count) {
    throw invalidArg(`input '${name}': expected ${count} elements in contents.${field}, got ${values.length}`);
  }
  return typedFromValues(name, datatype, values);
}

function typedFromValues(name: string, datatype: DataType, values: readonly unknown[]): TensorData {
  switch (datatype) {
    case 'BYTES':
      return (values as Uint8Array[]).map((v) => new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
    case 'BOOL':
      return Uint8Array.from(values as boolean[], (v) => (v ? 1 : 0));
    case 'INT64':
      return BigInt64Array.from(values as WireLong[], (v) => BigInt(v));
    case 'UINT64':
      return BigUint64Array.from(values as WireLong[], (v) => BigInt(v));
    default: {
      const range = NARROW_RANGE[datatype];
      if (range) checkRange(name, datatype, values as number[], range);
      const Storage = storageOf(datatype as FixedType) as unknown as { from(values: readonly number[]): TensorData };
      return Storage.from(values as number[]);
    }
  }
}

function checkRange(name: string, datatype: DataType, values: readonly number[], [min, max]: readonly [number, number]): void {
  const bad = values.find((v) => v < min || v > max);
  if (bad !== undefined) throw invalidArg(`input '${name}': value ${bad} is out of range for ${datatype}`);
}

/** Raw little-endian bytes → tensor data, checking the byte length against `count` elements. */
export function dataFromRaw(name: string, datatype: DataType, count: number, raw: Uint8Array): TensorData {
  if (datatype === 'BYTES') return decodeBytesElements(name, count, raw);
  const size = elementSize(datatype);
  if (raw.byteLength !== count * size) {
    throw invalidArg(`input '${name}': expected ${count * size} bytes of raw ${datatype} data (${count} elements), got ${raw.byteLength}`);
  }
  // A view is only legal at an offset aligned to the element size; otherwise copy once.
  const source = raw.byteOffset % size === 0 ? raw : new Uint8Array(raw);
  if (datatype === 'BOOL') checkBoolBytes(name, source);
  const Storage = storageOf(datatype) as new (buffer: ArrayBufferLike, byteOffset: number, length: number) => FixedTensorData;
  return new Storage(source.buffer, source.byteOffset, count);
}

/** As over HTTP: a BOOL byte is 0 or 1, not any truthy value. */
function checkBoolBytes(name: string, bytes: Uint8Array): void {
  const bad = bytes.findIndex((b) => b > 1);
  if (bad >= 0) throw invalidArg(`input '${name}': element ${bad} of BOOL data is ${bytes[bad]}, expected 0 or 1`);
}

/** BYTES raw form: each element is a 4-byte little-endian length followed by that many bytes. */
export function decodeBytesElements(name: string, count: number, raw: Uint8Array): Uint8Array[] {
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const elements: Uint8Array[] = [];
  let offset = 0;
  while (offset < raw.byteLength) {
    if (offset + 4 > raw.byteLength) throw invalidArg(`input '${name}': raw BYTES data ends inside a 4-byte length prefix`);
    const length = view.getUint32(offset, true);
    offset += 4;
    if (offset + length > raw.byteLength) {
      throw invalidArg(`input '${name}': raw BYTES element ${elements.length} claims ${length} bytes but only ${raw.byteLength - offset} remain`);
    }
    elements.push(new Uint8Array(raw.buffer, raw.byteOffset + offset, length));
    offset += length;
  }
  if (elements.length !== count) throw invalidArg(`input '${name}': expected ${count} BYTES elements in raw data, got ${elements.length}`);
  return elements;
}

export function encodeBytesElements(elements: readonly Uint8Array[]): Uint8Array {
  const total = elements.reduce((sum, e) => sum + 4 + e.byteLength, 0);
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  let offset = 0;
  for (const element of elements) {
    view.setUint32(offset, element.byteLength, true);
    out.set(element, offset + 4);
    offset += 4 + element.byteLength;
  }
  return out;
}

/** Tensor → raw little-endian bytes; fixed-size data is a view, not a copy. */
export function tensorToRaw(tensor: Tensor): Uint8Array {
  const { data, datatype, name } = tensor;
  if (datatype === 'BYTES') {
    if (!Array.isArray(data)) throw new Error(`output '${name}': BYTES data must be an array of Uint8Array`);
    return encodeBytesElements(data);
  }
  if (Array.isArray(data) || data.BYTES_PER_ELEMENT !== elementSize(datatype)) {
    throw new Error(`output '${name}': storage does not match datatype ${datatype}`);
  }
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}
