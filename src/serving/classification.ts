// Triton's classification extension: an output requested with `classification: K` comes back as
// K BYTES elements per batch row, "value:index" or "value:index:label", highest value first.

import type { Tensor } from '../contracts/tensors.js';
import { invalidArg } from '../errors.js';

const encoder = new TextEncoder();

/** `batched`: whether the first dimension is the batch (each row classified separately). */
export function classify(output: Tensor, topK: number, labels: readonly string[] | undefined, batched: boolean): Tensor {
  if (!Number.isInteger(topK) || topK < 1) throw invalidArg(`classification count for output '${output.name}' must be a positive integer`);
  if (Array.isArray(output.data) || typeof output.data[0] === 'bigint' || output.datatype === 'FP16' || output.datatype === 'BF16') {
    throw invalidArg(`classification is not supported for output '${output.name}' of type ${output.datatype}`);
  }
  const values = output.data as Float32Array;
  const rows = batched ? output.shape[0]! : 1;
  const width = values.length / Math.max(rows, 1);
  const k = Math.min(topK, width);
  const elements: Uint8Array[] = [];
  for (let r = 0; r < rows; r++) {
    const order = Array.from({ length: width }, (_, i) => i).sort((a, b) => values[r * width + b]! - values[r * width + a]! || a - b);
    for (const index of order.slice(0, k)) {
      const label = labels?.[index];
      const value = values[r * width + index]!;
      // Triton prints the value with std::to_string (six decimals).
      const text = value.toFixed(6);
      elements.push(encoder.encode(label !== undefined ? `${text}:${index}:${label}` : `${text}:${index}`));
    }
  }
  return { name: output.name, datatype: 'BYTES', shape: batched ? [rows, k] : [k], data: elements };
}
