// Deterministic random weights for the Qwen3-style decoder. Each tensor has its own stream,
// seeded from the model seed and the tensor's Hugging Face name, so adding a tensor never
// changes the others.

import type { LinearWeights } from '../../kernels/linear.js';
import { SeededRandom, seedFor } from '../../kernels/onnx/random.js';
import type { DecoderConfig } from './config.js';

export interface DecoderLayerWeights {
  /** The attention block's input norm; absent where the norms come after each block only (OLMo 2). */
  readonly inputNorm?: Float32Array;
  readonly q: LinearWeights;
  readonly k: LinearWeights;
  readonly v: LinearWeights;
  readonly o: LinearWeights;
  /** q / k RMSNorm: per head (Qwen3, Gemma 3: head_dim weights) or over the projection (OLMo 2); absent in LLaMA-family checkpoints. */
  readonly qNorm?: Float32Array;
  readonly kNorm?: Float32Array;
  /** Pre-norm families: the MLP's input norm. Gemma 3 and OLMo 2: the norm of the attention block's output, before the residual add. */
  readonly postAttentionNorm: Float32Array;
  /** Gemma 3: the MLP's input norm. */
  readonly preFeedforwardNorm?: Float32Array;
  /** Gemma 3 and OLMo 2: the norm of the MLP's output, before the residual add. */
  readonly postFeedforwardNorm?: Float32Array;
  readonly gate: LinearWeights;
  readonly up: LinearWeights;
  readonly down: LinearWeights;
}

export interface DecoderWeights {
  /** [vocab, hidden]; tied with the lm_head. Rows past the tokenizer are zero. */
  readonly embedding: Float32Array;
  readonly layers: readonly DecoderLayerWeights[];
  readonly finalNorm: Float32Array;
  /** [vocab, hidden]: a checkpoint's separate lm_head (tie_word_embeddings false); absent when tied. */
  readonly lmHead?: Float32Array;
}

export const DEFAULT_DECODER_SEED = 20_261_129;

export function initDecoderWeights(c: DecoderConfig, seed = DEFAULT_DECODER_SEED): DecoderWeights {
  const stream = (name: string): SeededRandom => new SeededRandom(seedFor(seed, name));
  const linear = (name: string, inFeatures: number, outFeatures: number): LinearWeights => ({
    inFeatures,
    outFeatures,
    // std/√(fan_in/64): the tiny model's 0.2 at width 64, scaled so wider models keep the same
    // output magnitude.
    weight: stream(`${name}.weight`).uniformWithStd(inFeatures * outFeatures, c.projectionStd / Math.sqrt(inFeatures / 64)),
  });
  // Norm weights near 1 (not exactly 1) so a kernel that ignored them would be caught by tests.
  const norm = (name: string, width: number): Float32Array =>
    stream(`${name}.weight`)
      .uniformWithStd(width, 0.1)
      .map((x) => 1 + x);

  const embedding = stream('model.embed_tokens.weight').uniformWithStd(c.vocabSize * c.hiddenSize, c.embeddingStd);
  embedding.fill(0, c.tokenizerVocabSize * c.hiddenSize);

  const layers = Array.from({ length: c.numLayers }, (_, i): DecoderLayerWeights => {
    const p = `model.layers.${i}`;
    const [h, qDim, kvDim] = [c.hiddenSize, c.numHeads * c.headDim, c.numKvHeads * c.headDim];
    return {
      inputNorm: norm(`${p}.input_layernorm`, h),
      q: linear(`${p}.self_attn.q_proj`, h, qDim),
      k: linear(`${p}.self_attn.k_proj`, h, kvDim),
      v: linear(`${p}.self_attn.v_proj`, h, kvDim),
      o: linear(`${p}.self_attn.o_proj`, qDim, h),
      qNorm: norm(`${p}.self_attn.q_norm`, c.headDim),
      kNorm: norm(`${p}.self_attn.k_norm`, c.headDim),
      postAttentionNorm: norm(`${p}.post_attention_layernorm`, h),
      gate: linear(`${p}.mlp.gate_proj`, h, c.intermediateSize),
      up: linear(`${p}.mlp.up_proj`, h, c.intermediateSize),
      down: linear(`${p}.mlp.down_proj`, c.intermediateSize, h),
    };
  });
  return { embedding, layers, finalNorm: norm('model.norm', c.hiddenSize) };
}
