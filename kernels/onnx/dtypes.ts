// Element types as ONNX numbers them (TensorProto.DataType), and their JS storage.

export type DType = 'float32' | 'float16' | 'float64' | 'int64' | 'int32' | 'int8' | 'uint8' | 'bool';

export const ONNX_DATA_TYPE: Record<DType, number> = {
  float32: 1,
  uint8: 2,
  int8: 3,
  int32: 6,
  int64: 7,
  bool: 9,
  float16: 10,
  float64: 11,
};

export type TensorStorage =
  | Float32Array
  | Float64Array
  | Uint16Array // float16 bit patterns
  | BigInt64Array
  | Int32Array
  | Int8Array
  | Uint8Array; // uint8 and bool

/** A dense little-endian tensor value: what initializers and test inputs are made of. */
export interface TensorValue {
  readonly dtype: DType;
  readonly dims: readonly number[];
  readonly data: TensorStorage;
}

export function elementCount(dims: readonly number[]): number {
  return dims.reduce((a, b) => a * b, 1);
}

export function isFloatType(dtype: DType): boolean {
  return dtype === 'float32' || dtype === 'float16' || dtype === 'float64';
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** IEEE 754 binary32 → binary16 bits, round to nearest even (what numpy's astype does). */
export function float32ToFloat16Bits(value: number): number {
  f32[0] = value;
  return float32BitsToFloat16Bits(u32[0]!);
}

function float32BitsToFloat16Bits(x: number): number {
  const sign = (x >>> 16) & 0x8000;
  const exponent = (x >>> 23) & 0xff;
  let mantissa = x & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa ? 0x200 : 0); // inf / nan
  const e = exponent - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00; // overflow → inf
  if (e <= 0) {
    if (e < -10) return sign; // underflow → ±0
    mantissa |= 0x800000; // subnormal: make the implicit bit explicit
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rest = mantissa & ((1 << shift) - 1);
    let result = mantissa >>> shift;
    if (rest > half || (rest === half && result & 1)) result += 1;
    return sign | result;
  }
  let result = (e << 10) | (mantissa >>> 13);
  const rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && result & 1)) result += 1; // may carry into the exponent: correct
  return sign | result;
}

export function float16BitsToFloat32(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >>> 10) & 0x1f;
  const mantissa = bits & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 0x1f) return mantissa ? NaN : sign * Infinity;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

export function toFloat16Array(values: ArrayLike<number>): Uint16Array {
  const out = new Uint16Array(values.length);
  if (values instanceof Float32Array) {
    // Read the float32 bits directly: no per-element round trip through a scratch array.
    const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
    for (let i = 0; i < bits.length; i++) out[i] = float32BitsToFloat16Bits(bits[i]!);
    return out;
  }
  for (let i = 0; i < values.length; i++) out[i] = float32ToFloat16Bits(values[i]!);
  return out;
}

export function fromFloat16Array(bits: Uint16Array): Float32Array {
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = float16BitsToFloat32(bits[i]!);
  return out;
}

/** Stores float values in the given float type (fp16 as bit patterns). */
export function floatTensor(dtype: 'float32' | 'float16' | 'float64', dims: readonly number[], values: ArrayLike<number>): TensorValue {
  if (values.length !== elementCount(dims)) throw new Error(`floatTensor: ${values.length} values for dims [${dims}]`);
  // A Float32Array is used as is (weights are large and never mutated after init).
  const data = dtype === 'float16' ? toFloat16Array(values) : dtype === 'float64' ? Float64Array.from(values) : values instanceof Float32Array ? values : Float32Array.from(values);
  return { dtype, dims: [...dims], data };
}

export function int64Tensor(dims: readonly number[], values: ArrayLike<number | bigint>): TensorValue {
  const data = new BigInt64Array(values.length);
  for (let i = 0; i < values.length; i++) data[i] = BigInt(values[i]!);
  return { dtype: 'int64', dims: [...dims], data };
}
