// Writing safetensors checkpoints (the layout safetensors.ts reads), one file or sharded with
// model.safetensors.index.json as Hugging Face's save_pretrained does. The builders use it to
// publish their random weights as a Hugging Face checkpoint, which the converter's tests read back.

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { float32ToFloat16Bits } from '../../kernels/onnx/dtypes.js';
import type { SafetensorsDtype } from './safetensors.js';

export interface NamedTensor {
  readonly name: string;
  readonly shape: readonly number[];
  readonly values: Float32Array;
}

/** float32 → the dtype's little-endian bytes (bf16 rounds to nearest even). */
export function encodeFromFloat32(dtype: SafetensorsDtype, values: Float32Array): Uint8Array {
  if (dtype === 'F32') return new Uint8Array(new Float32Array(values).buffer);
  const out = new Uint8Array(values.length * 2);
  const view = new DataView(out.buffer);
  const word = new DataView(new ArrayBuffer(4));
  for (let i = 0; i < values.length; i++) {
    if (dtype === 'F16') {
      view.setUint16(i * 2, float32ToFloat16Bits(values[i]!), true);
      continue;
    }
    word.setFloat32(0, values[i]!);
    const bits = word.getUint32(0);
    view.setUint16(i * 2, (bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16, true);
  }
  return out;
}

/** One safetensors file's bytes: header (padded to 8 bytes, as the reference writer does) then data. */
export function encodeSafetensors(tensors: readonly NamedTensor[], dtype: SafetensorsDtype, metadata: Record<string, string> = { format: 'pt' }): Uint8Array {
  const blobs = tensors.map((t) => encodeFromFloat32(dtype, t.values));
  const header: Record<string, unknown> = { __metadata__: metadata };
  let offset = 0;
  tensors.forEach((t, i) => {
    header[t.name] = { dtype, shape: t.shape, data_offsets: [offset, offset + blobs[i]!.byteLength] };
    offset += blobs[i]!.byteLength;
  });
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const headerBytes = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + headerBytes.byteLength + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerBytes.byteLength), true);
  out.set(headerBytes, 8);
  let at = 8 + headerBytes.byteLength;
  for (const blob of blobs) {
    out.set(blob, at);
    at += blob.byteLength;
  }
  return out;
}

/** Writes `tensors` into `dir` as one model.safetensors, or `shards` files plus the index. */
export async function writeSafetensorsCheckpoint(dir: string, tensors: readonly NamedTensor[], options: { dtype?: SafetensorsDtype; shards?: number } = {}): Promise<void> {
  const dtype = options.dtype ?? 'F32';
  const shards = Math.max(1, options.shards ?? 1);
  await mkdir(dir, { recursive: true });
  if (shards === 1) {
    await writeFile(join(dir, 'model.safetensors'), encodeSafetensors(tensors, dtype));
    return;
  }
  const weightMap: Record<string, string> = {};
  const perShard = Math.ceil(tensors.length / shards);
  let totalSize = 0;
  for (let s = 0; s < shards; s++) {
    const file = `model-${String(s + 1).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.safetensors`;
    const part = tensors.slice(s * perShard, (s + 1) * perShard);
    for (const t of part) weightMap[t.name] = file;
    const bytes = encodeSafetensors(part, dtype);
    totalSize += bytes.byteLength;
    await writeFile(join(dir, file), bytes);
  }
  await writeFile(join(dir, 'model.safetensors.index.json'), `${JSON.stringify({ metadata: { total_size: totalSize }, weight_map: weightMap }, null, 2)}\n`);
}
