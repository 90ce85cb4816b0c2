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
  /**
   * Per layer (numLayers entries): its RoPE and attention window where a checkpoint's layers differ
   * (Gemma 3's local and global layers, SmolLM3's layers without RoPE, Mistral's window). Absent:
   * every layer is full causal attention with RoPE from ropeTheta / ropeInverseFrequencies.
   */
  readonly layerSpecs?: readonly DecoderLayerSpec[];
  /** How the layers are wired where a family departs from LLaMA / Qwen3 (absent: DEFAULT_DECODER_VARIANT). */
  readonly variant?: DecoderVariant;
}

/** RoPE as one layer applies it. */
export interface LayerRope {
  /** θ_i for each rotated pair: rotaryDim / 2 entries, rotaryDim ≤ headDim (partial rotary rotates the first rotaryDim dimensions of a head and passes the rest). */
  readonly inverseFrequencies: readonly number[];
  /** cos and sin are multiplied by it (YaRN's and LongRoPE's attention factor); 1 otherwise. */
  readonly attentionFactor: number;
}

export interface DecoderLayerSpec {
  /** Undefined: the layer applies no RoPE (SmolLM3's NoPE layers). */
  readonly rope?: LayerRope;
  /** Key position j is visible to query position i iff i − window < j ≤ i; undefined: full causal attention. */
  readonly slidingWindow?: number;
}

/** The wiring knobs of the dense decoder families Conveyor converts. */
export interface DecoderVariant {
  /** 'pre': norm before attention / MLP (LLaMA); 'sandwich': and after each, before the residual add (Gemma 3); 'post': after each only (OLMo 2). */
  readonly norms: 'pre' | 'sandwich' | 'post';
  /** RMSNorm on q and k: per head over head_dim (Qwen3, Gemma 3), over the whole projection (OLMo 2), or none. */
  readonly qkNorm: 'none' | 'head' | 'projection';
  /** The gated MLP's activation: SwiGLU (silu) or GeGLU with GELU's tanh approximation (Gemma). */
  readonly activation: 'silu' | 'gelu_tanh';
  /** The embedding lookup is multiplied by it (Gemma's √hidden, Granite's embedding_multiplier); the lm_head reads the table unscaled. */
  readonly embeddingMultiplier: number;
  /** Multiplies q·k (default 1/√head_dim; Gemma's query_pre_attn_scalar^-½, Granite's attention_multiplier). */
  readonly attentionScale?: number;
  /** Logits are multiplied by it (Granite's 1 / logits_scaling). */
  readonly logitsMultiplier: number;
  /** logits = cap · tanh(logits / cap) where set (Gemma's final_logit_softcapping). */
  readonly finalLogitSoftcap?: number;
}

export const DEFAULT_DECODER_VARIANT: DecoderVariant = { norms: 'pre', qkNorm: 'head', activation: 'silu', embeddingMultiplier: 1, logitsMultiplier: 1 };

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
