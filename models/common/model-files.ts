// Writing built models to disk. The ONNX bytes stream out chunk by chunk (weights are never
// copied into one big buffer) and are hashed on the way, so callers get the sha256 for free.

import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { EncodedMessage } from '../../kernels/onnx/protobuf-writer.js';
import type { Precision, WeightPrecision } from '../../kernels/linear.js';

export type ModelSize = 'tiny' | 'bench';

/** transformers.js / Optimum file names per variant (dtype → suffix). */
export const VARIANT_FILE: Record<WeightPrecision, string> = {
  fp32: 'model.onnx',
  fp16: 'model_fp16.onnx',
  int8: 'model_quantized.onnx',
  q4: 'model_q4.onnx',
  q4f16: 'model_q4f16.onnx',
};

/**
 * The paged-attention decoder graph written beside each variant (model.onnx → model_paged.onnx).
 * models/ may import only kernels/, so this mirrors src/repository/variants.ts' pagedVariantFile;
 * test/unit/repository/variants.test.ts pins the two together.
 */
export const PAGED_VARIANT_FILE: Record<WeightPrecision, string> = {
  fp32: 'model_paged.onnx',
  fp16: 'model_paged_fp16.onnx',
  int8: 'model_paged_quantized.onnx',
  q4: 'model_paged_q4.onnx',
  q4f16: 'model_paged_q4f16.onnx',
};

/**
 * The segmented paged decoder beside a paged graph (models/qwen3/paged-segments.ts): model_paged.onnx →
 * model_paged.segments/segment_00.onnx …. Mirrors src/contracts/paged-segments.ts (pinned together
 * by test/unit/repository/variants.test.ts).
 */
export const PAGED_SEGMENT_FILE = (pagedFile: string, segment: number): string => `${pagedFile.replace(/\.onnx$/, '.segments')}/segment_${String(segment).padStart(2, '0')}.onnx`;

export const PRECISIONS: readonly Precision[] = ['fp32', 'fp16', 'int8'];

/** The decoders also get the 4-bit variants onnx-community ships for LLMs. */
export const DECODER_PRECISIONS: readonly WeightPrecision[] = [...PRECISIONS, 'q4', 'q4f16'];

const WRITE_BATCH_BYTES = 1 << 20;

/** Writes the model atomically (temp file + rename) and returns its sha256 in hex. */
export async function writeModel(path: string, model: EncodedMessage): Promise<string> {
  await mkdir(dirname(path), { recursive: true });
  // A unique temp name: two processes building the same model must not write into one file.
  const temp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.partial`;
  const hash = createHash('sha256');
  const file = await open(temp, 'w');
  try {
    // Small chunks (graph structure) are gathered into one write; weights go out as they are.
    let pending: Uint8Array[] = [];
    let pendingBytes = 0;
    const flush = async (): Promise<void> => {
      if (pendingBytes > 0) await file.write(Buffer.concat(pending, pendingBytes));
      pending = [];
      pendingBytes = 0;
    };
    for (const chunk of model.chunks) {
      hash.update(chunk);
      if (chunk.byteLength >= WRITE_BATCH_BYTES) {
        await flush();
        await file.write(chunk);
      } else {
        pending.push(chunk);
        pendingBytes += chunk.byteLength;
        if (pendingBytes >= WRITE_BATCH_BYTES) await flush();
      }
    }
    await flush();
  } finally {
    await file.close();
  }
  await rename(temp, path);
  return hash.digest('hex');
}

export function sha256Of(model: EncodedMessage): string {
  const hash = createHash('sha256');
  for (const chunk of model.chunks) hash.update(chunk);
  return hash.digest('hex');
}
