// The Qwen3-style decoder's weights as a Hugging Face checkpoint: config.json,
// generation_config.json, the tokenizer files and safetensors in transformers' names and layout
// (nn.Linear weights [out, in]). The converter's tests convert it back and compare logits with
// the builder's own ONNX model for the same weights.

import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SafetensorsDtype } from '../convert/safetensors.js';
import { type NamedTensor, writeSafetensorsCheckpoint } from '../convert/safetensors-writer.js';
import type { LinearWeights } from '../../kernels/linear.js';
import { type DecoderConfig, hfConfig, hfGenerationConfig } from './config.js';
import type { DecoderWeights } from './weights.js';
import { QWEN3_TOKENIZER_FILES } from './write.js';

/** [in, out] (ONNX MatMul's B) → [out, in] (nn.Linear's weight), or back: the same transpose. */
export function transposeMatrix(values: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(values.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = values[r * cols + c]!;
  return out;
}

/** The weights under their transformers names, in the order save_pretrained writes them. */
export function checkpointTensors(c: DecoderConfig, w: DecoderWeights): NamedTensor[] {
  const linear = (name: string, l: LinearWeights): NamedTensor[] => [
    { name: `${name}.weight`, shape: [l.outFeatures, l.inFeatures], values: transposeMatrix(l.weight, l.inFeatures, l.outFeatures) },
    ...(l.bias ? [{ name: `${name}.bias`, shape: [l.outFeatures], values: l.bias }] : []),
  ];
  const vector = (name: string, values: Float32Array | undefined): NamedTensor[] => (values ? [{ name: `${name}.weight`, shape: [values.length], values }] : []);
  const tensors: NamedTensor[] = [{ name: 'model.embed_tokens.weight', shape: [c.vocabSize, c.hiddenSize], values: w.embedding }];
  w.layers.forEach((layer, i) => {
    const p = `model.layers.${i}`;
    tensors.push(
      ...vector(`${p}.input_layernorm`, layer.inputNorm),
      ...linear(`${p}.self_attn.q_proj`, layer.q),
      ...linear(`${p}.self_attn.k_proj`, layer.k),
      ...linear(`${p}.self_attn.v_proj`, layer.v),
      ...linear(`${p}.self_attn.o_proj`, layer.o),
      ...vector(`${p}.self_attn.q_norm`, layer.qNorm),
      ...vector(`${p}.self_attn.k_norm`, layer.kNorm),
      ...vector(`${p}.post_attention_layernorm`, layer.postAttentionNorm),
      ...linear(`${p}.mlp.gate_proj`, layer.gate),
      ...linear(`${p}.mlp.up_proj`, layer.up),
      ...linear(`${p}.mlp.down_proj`, layer.down),
    );
  });
  tensors.push(...vector('model.norm', w.finalNorm));
  if (w.lmHead) tensors.push({ name: 'lm_head.weight', shape: [c.vocabSize, c.hiddenSize], values: w.lmHead });
  return tensors;
}

export interface CheckpointOptions {
  readonly dtype?: SafetensorsDtype;
  readonly shards?: number;
  /** config.json as written; defaults to the Qwen3 one for `c`. */
  readonly config?: Record<string, unknown>;
}

export async function writeQwen3Checkpoint(dir: string, c: DecoderConfig, weights: DecoderWeights, options: CheckpointOptions = {}): Promise<void> {
  await mkdir(dir, { recursive: true });
  const dtypeName = { F32: 'float32', F16: 'float16', BF16: 'bfloat16' }[options.dtype ?? 'F32'];
  const config = options.config ?? { ...hfConfig(c), torch_dtype: dtypeName, tie_word_embeddings: weights.lmHead === undefined };
  await writeFile(join(dir, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
  await writeFile(join(dir, 'generation_config.json'), `${JSON.stringify(hfGenerationConfig(), null, 2)}\n`);
  for (const [name, source] of Object.entries(QWEN3_TOKENIZER_FILES)) await copyFile(source, join(dir, name));
  await writeSafetensorsCheckpoint(dir, checkpointTensors(c, weights), { dtype: options.dtype ?? 'F32', shards: options.shards ?? 1 });
}
