// Tensor data as JSON `data` arrays: decoding with per-datatype validation, and encoding back
// to JSON text. Values are row-major; request data may be nested or flat.

import { invalidArg } from '../../../errors.js';
import { integerRange, storageOf, type FixedStorage } from '../../../contracts/datatypes.js';
import { elementCount, type DataType, type FixedTensorData, type TensorData } from '../../../contracts/tensors.js';
import { formatShape } from './datatypes.js';

type SmallIntegerType = 'UINT8' | 'UINT16' | 'UINT32' | 'INT8' | 'INT16' | 'INT32';
type NumberStorage = Exclude<FixedStorage, BigInt64ArrayConstructor | BigUint64ArrayConstructor>;

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();

/** Decodes an input's JSON `data` into the storage its datatype uses. */
export function decodeJsonData(name: string, datatype: DataType, shape: readonly number[], data: unknown): TensorData {
  if (datatype === 'FP16' || datatype === 'BF16') {
    throw invalidArg(`input '${name}': ${datatype} has no JSON representation; send it as binary data`);
  }
  if (!Array.isArray(data)) throw invalidArg(`input '${name}': 'data' must be an array`);
  const values = flatten(data);
  const expected = elementCount(shape);
  if (values.length !== expected) {
    throw invalidArg(`input '${name}': shape ${formatShape(shape)} needs ${expected} elements, 'data' has ${values.length}`);
  }
  const fail = (index: number, problem: string) => invalidArg(`input '${name}': element ${index} ${problem}`);
  switch (datatype) {
    case 'BOOL':
      return toBool(values, fail);
    case 'BYTES':
      return toBytes(values, fail);
    case 'FP32':
    case 'FP64':
      return toFloat(values, datatype, fail);
    case 'INT64':
    case 'UINT64':
      return toBigInteger(values, datatype, fail);
    default:
      return toSmallInteger(values, datatype, fail);
  }
}

type Fail = (index: number, problem: string) => Error;

/** Row-major leaves of nested arrays, walked with an explicit stack: the nesting depth is the client's choice (bodies are also depth-checked before parsing). */
function flatten(data: unknown[]): unknown[] {
  if (!data.some(Array.isArray)) return data;
  const out: unknown[] = [];
  const stack: { items: unknown[]; next: number }[] = [{ items: data, next: 0 }];
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    if (top.next === top.items.length) {
      stack.pop();
      continue;
    }
    const item = top.items[top.next++];
    if (Array.isArray(item)) stack.push({ items: item, next: 0 });
    else out.push(item);
  }
  return out;
}

/** A request value for an error message; JSON.stringify alone throws on the bigints parseJson revives, at any depth. */
export const describe = (value: unknown): string => (typeof value === 'bigint' ? value.toString() : String(JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))));

function toBool(values: unknown[], fail: Fail): Uint8Array {
  const out = new Uint8Array(values.length);
  values.forEach((v, i) => {
    if (typeof v !== 'boolean') throw fail(i, `must be true or false for BOOL, got ${describe(v)}`);
    out[i] = v ? 1 : 0;
  });
  return out;
}

function toBytes(values: unknown[], fail: Fail): Uint8Array[] {
  return values.map((v, i) => {
    if (typeof v !== 'string') throw fail(i, `must be a string for BYTES, got ${describe(v)}`);
    return textEncoder.encode(v);
  });
}

function toFloat(values: unknown[], datatype: 'FP32' | 'FP64', fail: Fail): Float32Array | Float64Array {
  const out = datatype === 'FP32' ? new Float32Array(values.length) : new Float64Array(values.length);
  values.forEach((v, i) => {
    const n = typeof v === 'bigint' ? Number(v) : v;
    if (typeof n !== 'number') throw fail(i, `must be a number for ${datatype}, got ${describe(v)}`);
    if (datatype === 'FP32' && !Number.isFinite(Math.fround(n))) throw fail(i, `(${describe(v)}) is out of range for FP32`);
    out[i] = n;
  });
  return out;
}

function toSmallInteger(values: unknown[], datatype: SmallIntegerType, fail: Fail): FixedTensorData {
  const [low, high] = integerRange(datatype)!;
  const [min, max] = [Number(low), Number(high)];
  const out = new (storageOf(datatype) as NumberStorage)(values.length);
  values.forEach((v, i) => {
    const n = typeof v === 'bigint' ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isInteger(n)) throw fail(i, `must be an integer for ${datatype}, got ${describe(v)}`);
    if (n < min || n > max) throw fail(i, `(${describe(v)}) is out of range for ${datatype}`);
    out[i] = n;
  });
  return out;
}

function toBigInteger(values: unknown[], datatype: 'INT64' | 'UINT64', fail: Fail): BigInt64Array | BigUint64Array {
  const [min, max] = integerRange(datatype)!;
  const out = datatype === 'INT64' ? new BigInt64Array(values.length) : new BigUint64Array(values.length);
  values.forEach((v, i) => {
    if (typeof v !== 'bigint' && !(typeof v === 'number' && Number.isInteger(v))) {
      throw fail(i, `must be an integer for ${datatype}, got ${describe(v)}`);
    }
    const n = BigInt(v);
    if (n < min || n > max) throw fail(i, `(${describe(v)}) is out of range for ${datatype}`);
    out[i] = n;
  });
  return out;
}

/**
 * JSON text of an output's data as a flat array. Non-finite floats print as null: JSON has no
 * NaN or Infinity, and clients that need them should ask for binary outputs.
 */
export function encodeJsonData(name: string, datatype: DataType, data: TensorData): string {
  if (datatype === 'FP16' || datatype === 'BF16') {
    throw invalidArg(`output '${name}': ${datatype} has no JSON representation; request it with binary_data`);
  }
  if (Array.isArray(data)) return `[${data.map((bytes) => JSON.stringify(textDecoder.decode(bytes))).join(',')}]`;
  if (datatype === 'BOOL') return `[${Array.from(data as Uint8Array, (b) => (b !== 0 ? 'true' : 'false')).join(',')}]`;
  if (data instanceof Float32Array || data instanceof Float64Array) return floatText(data);
  return `[${data.join(',')}]`;
}

function floatText(data: Float32Array | Float64Array): string {
  for (const value of data) {
    if (!Number.isFinite(value)) return `[${Array.from(data, (v) => (Number.isFinite(v) ? String(v) : 'null')).join(',')}]`;
  }
  return `[${data.join(',')}]`;
}
