// Logits rows as the sampler takes them: float32, whatever the model's logits type.

import type { RawTensor } from '../runtime/model-session.js';

/**
 * A logits row as float32 (fp16 models return float16 logits). A float32 row is a view: the
 * logits array is fresh from each call and nothing else reads it, so the sampler may overwrite it.
 */
export function toFloat32(tensor: RawTensor, offset: number, length: number): Float32Array {
  if (tensor.type === 'float32') return (tensor.data as Float32Array).subarray(offset, offset + length);
  const bits = tensor.data as Uint16Array;
  const out = new Float32Array(length);
  for (let i = 0; i < length; i++) out[i] = halfToFloat(bits[offset + i]!);
  return out;
}

function halfToFloat(h: number): number {
  const exponent = (h >>> 10) & 0x1f;
  const mantissa = h & 0x3ff;
  const sign = h & 0x8000 ? -1 : 1;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 0x1f) return mantissa ? NaN : sign * Infinity;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}
