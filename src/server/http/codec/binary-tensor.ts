// Tensor data in the binary tensor data extension: little-endian, row-major, no padding; BOOL
// one byte (0/1); BYTES elements each a 4-byte little-endian length followed by the bytes.
// Every host Node runs on in practice is little-endian, so typed arrays read the wire directly.

import { invalidArg } from '../../../errors.js';
import { elementSize, storageOf } from '../../../contracts/datatypes.js';
import { elementCount, type DataType, type TensorData } from '../../../contracts/tensors.js';
import { formatShape } from './datatypes.js';

/** Decodes one input's binary bytes (exactly its binary_data_size) into tensor storage. */
export function decodeBinaryData(name: string, datatype: DataType, shape: readonly number[], bytes: Uint8Array): TensorData {
  const count = elementCount(shape);
  if (datatype === 'BYTES') return decodeBytesElements(name, shape, count, bytes);
  const expected = count * elementSize(datatype);
  if (bytes.byteLength !== expected) {
    throw invalidArg(`input '${name}': binary_data_size ${bytes.byteLength} does not match shape ${formatShape(shape)} of ${datatype} (${expected} bytes)`);
  }
  const Storage = storageOf(datatype);
  // A typed array view needs an aligned offset; the body buffer's offset is arbitrary.
  const aligned = bytes.byteOffset % Storage.BYTES_PER_ELEMENT === 0;
  const source = aligned ? bytes : copyBytes(bytes);
  const data = new Storage(source.buffer as ArrayBuffer, source.byteOffset, count);
  if (datatype === 'BOOL') checkBoolBytes(name, data as Uint8Array);
  return data;
}

function copyBytes(bytes: Uint8Array): Uint8Array {
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return copy;
}

function checkBoolBytes(name: string, data: Uint8Array): void {
  const bad = data.findIndex((b) => b > 1);
  if (bad >= 0) throw invalidArg(`input '${name}': element ${bad} of BOOL data is ${data[bad]}, expected 0 or 1`);
}

function decodeBytesElements(name: string, shape: readonly number[], count: number, bytes: Uint8Array): Uint8Array[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const elements: Uint8Array[] = [];
  let offset = 0;
  while (offset < bytes.byteLength) {
    if (offset + 4 > bytes.byteLength) {
      throw invalidArg(`input '${name}': BYTES element ${elements.length} has a truncated 4-byte length prefix`);
    }
    const length = view.getUint32(offset, true);
    offset += 4;
    if (offset + length > bytes.byteLength) {
      throw invalidArg(`input '${name}': BYTES element ${elements.length} declares ${length} bytes but only ${bytes.byteLength - offset} remain`);
    }
    // A plain view (not a Buffer slice): the contract's storage is Uint8Array.
    elements.push(new Uint8Array(bytes.buffer, bytes.byteOffset + offset, length));
    offset += length;
  }
  if (elements.length !== count) {
    throw invalidArg(`input '${name}': shape ${formatShape(shape)} needs ${count} BYTES elements, binary data has ${elements.length}`);
  }
  return elements;
}

/** Wire bytes of tensor data; fixed-width data is a view, not a copy. */
export function encodeBinaryData(data: TensorData): Buffer {
  if (!Array.isArray(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return serializeBytesElements(data);
}

/** BYTES elements as length-prefixed wire bytes. */
export function serializeBytesElements(elements: readonly Uint8Array[]): Buffer {
  let total = 0;
  for (const e of elements) total += 4 + e.byteLength;
  const out = Buffer.allocUnsafe(total);
  let offset = 0;
  for (const e of elements) {
    out.writeUInt32LE(e.byteLength, offset);
    out.set(e, offset + 4);
    offset += 4 + e.byteLength;
  }
  return out;
}
