// Shapes of the Qwen3-style decoders Conveyor builds, and their Hugging Face config files.

import type { ModelSize } from '../common/model-files.js';

export interface DecoderConfig {
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  readonly intermediateSize: number;
  /** Rows of the embedding (Qwen3's config vocab_size, padded past the tokenizer). */
  readonly vocabSize: number;
  /** Ids the tokenizer can produce (0 .. tokenizerVocabSize-1); rows past it are never sampled. */
  readonly tokenizerVocabSize: number;
  readonly maxPositionEmbeddings: number;
  readonly ropeTheta: number;
  readonly rmsNormEps: number;
  /** RoPE's θ_i when a checkpoint's rope_scaling rescales them (models/convert/rope-scaling.ts); plain θ^(-2i/D) otherwise. */
  readonly ropeInverseFrequencies?: readonly number[];
  /** Weight init: projections need a larger std than embeddings or greedy decoding collapses. */
  readonly projectionStd: number;
  readonly embeddingStd: number;
}

const QWEN3_VOCAB = { vocabSize: 151_936, tokenizerVocabSize: 151_669 } as const;

export const DECODER_CONFIGS: Record<ModelSize, DecoderConfig> = {
  tiny: {
    hiddenSize: 64,
    numLayers: 4,
    numHeads: 4,
    numKvHeads: 2,
    headDim: 16,
    intermediateSize: 192,
    ...QWEN3_VOCAB,
    maxPositionEmbeddings: 4096,
    ropeTheta: 1_000_000,
    rmsNormEps: 1e-6,
    projectionStd: 0.17,
    embeddingStd: 0.05,
  },
  // ≈100M parameters, the shape whose forward-pass floor reference/onnxruntime-node.md records.
  bench: {
    hiddenSize: 512,
    numLayers: 8,
    numHeads: 8,
    numKvHeads: 2,
    headDim: 64,
    intermediateSize: 1408,
    ...QWEN3_VOCAB,
    maxPositionEmbeddings: 4096,
    ropeTheta: 1_000_000,
    rmsNormEps: 1e-6,
    projectionStd: 0.17,
    embeddingStd: 0.05,
  },
};

// Qwen3's special ids (tokenizer.json's added tokens).
export const ENDOFTEXT_ID = 151_643;
export const IM_END_ID = 151_645;

/** config.json as transformers / transformers.js read it (model_type "qwen3"). */
export function hfConfig(c: DecoderConfig): Record<string, unknown> {
  return {
    architectures: ['Qwen3ForCausalLM'],
    model_type: 'qwen3',
    hidden_size: c.hiddenSize,
    num_hidden_layers: c.numLayers,
    num_attention_heads: c.numHeads,
    num_key_value_heads: c.numKvHeads,
    head_dim: c.headDim,
    intermediate_size: c.intermediateSize,
    vocab_size: c.vocabSize,
    max_position_embeddings: c.maxPositionEmbeddings,
    rope_theta: c.ropeTheta,
    rope_scaling: null,
    rms_norm_eps: c.rmsNormEps,
    hidden_act: 'silu',
    attention_bias: false,
    attention_dropout: 0,
    tie_word_embeddings: true,
    use_cache: true,
    bos_token_id: ENDOFTEXT_ID,
    eos_token_id: IM_END_ID,
    torch_dtype: 'float32',
    'transformers.js_config': { dtype: 'fp32', kv_cache_dtype: { fp16: 'float16' } },
  };
}

export function hfGenerationConfig(): Record<string, unknown> {
  return {
    bos_token_id: ENDOFTEXT_ID,
    eos_token_id: [IM_END_ID, ENDOFTEXT_ID],
    pad_token_id: ENDOFTEXT_ID,
    do_sample: false,
  };
}
