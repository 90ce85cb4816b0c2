// The names a model's precision variants and attention backends go by, declared once for every
// layer that reads them (the model repository's variants.ts maps them to files; the serve flags
// list them as choices).

/**
 * In the order a directory with several variants and no `precision` prefers them. `files` are
 * tried in order (the first is the one Conveyor's builders write); `aliases` are other names
 * transformers.js users give the same variant.
 */
export const PRECISION_VARIANTS = [
  { precision: 'fp32', files: ['model.onnx'], aliases: [] },
  { precision: 'fp16', files: ['model_fp16.onnx'], aliases: [] },
  // onnx-community exports name their dynamic int8 model_quantized.onnx (transformers.js' q8) and
  // sometimes also ship model_int8.onnx; either serves `int8`.
  { precision: 'int8', files: ['model_quantized.onnx', 'model_int8.onnx'], aliases: ['q8', 'quantized'] },
  { precision: 'uint8', files: ['model_uint8.onnx'], aliases: [] },
  // 4-bit weights (com.microsoft MatMulNBits); q4f16 also keeps activations in float16.
  { precision: 'q4', files: ['model_q4.onnx'], aliases: [] },
  { precision: 'q4f16', files: ['model_q4f16.onnx'], aliases: [] },
  { precision: 'bnb4', files: ['model_bnb4.onnx'], aliases: [] },
] as const satisfies readonly { precision: string; files: readonly [string, ...string[]]; aliases: readonly string[] }[];

export type PrecisionVariant = (typeof PRECISION_VARIANTS)[number];
export type Precision = PrecisionVariant['precision'];

/** Every name `precision` accepts, canonical names first: the choices an error lists. */
export const PRECISION_NAMES: readonly string[] = [...PRECISION_VARIANTS.map((v) => v.precision), ...PRECISION_VARIANTS.flatMap((v) => v.aliases)];

/**
 * How a decoder's attention reads its KV cache, the `attention_backend` model parameter (as vLLM's
 * --attention-backend). `past_key_values`: the Optimum contract (model.onnx), past K/V fed as
 * tensors; `paged`: the paged KV cache read in place — by the native kernel between the segments
 * of the paged decoder (model_paged.segments/) where both are present, else by the paged-attention
 * graph (model_paged.onnx), both written by the builders and `conveyor convert --paged`;
 * `paged_onnx`: always the paged graph's ONNX attention.
 */
export const ATTENTION_BACKENDS = ['past_key_values', 'paged', 'paged_onnx'] as const;
export type AttentionBackend = (typeof ATTENTION_BACKENDS)[number];
