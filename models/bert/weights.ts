// Deterministic random weights for the BERT-style encoder. Each tensor has its own stream,
// seeded from the model seed and the tensor's Hugging Face name, so adding a tensor never
// changes the others.

import type { EncoderAttentionWeights } from '../../kernels/encoder-attention.js';
import type { GeluMlpWeights } from '../../kernels/gelu-mlp.js';
import type { LinearWeights } from '../../kernels/linear.js';
import { SeededRandom, seedFor } from '../../kernels/onnx/random.js';
import type { BertConfig } from './config.js';

export interface NormWeights {
  readonly weight: Float32Array;
  readonly bias: Float32Array;
}

export interface BertLayerWeights {
  readonly attention: EncoderAttentionWeights;
  readonly attentionNorm: NormWeights;
  readonly mlp: GeluMlpWeights;
  readonly outputNorm: NormWeights;
}

export interface BertWeights {
  /** [vocab, hidden], [maxPositions, hidden], [typeVocab, hidden]. */
  readonly wordEmbeddings: Float32Array;
  readonly positionEmbeddings: Float32Array;
  readonly tokenTypeEmbeddings: Float32Array;
  readonly embeddingNorm: NormWeights;
  readonly layers: readonly BertLayerWeights[];
}

export const DEFAULT_BERT_SEED = 20_261_130;

export function initBertWeights(c: BertConfig, seed = DEFAULT_BERT_SEED): BertWeights {
  const stream = (name: string): SeededRandom => new SeededRandom(seedFor(seed, name));
  // Projections get std 1/√fan_in, not BERT's 0.02: with 0.02 every sublayer's output is ~100×
  // smaller than the residual it joins, the layers become no-ops, and a test comparing variants
  // or checking the mask would pass against an embedding lookup alone.
  const linear = (name: string, inFeatures: number, outFeatures: number): LinearWeights => ({
    inFeatures,
    outFeatures,
    weight: stream(`${name}.weight`).uniformWithStd(inFeatures * outFeatures, 1 / Math.sqrt(inFeatures)),
    bias: stream(`${name}.bias`).uniformWithStd(outFeatures, 0.02),
  });
  // Norm weights near 1 and biases near 0 (not exactly) so a kernel that ignored them would be caught.
  const norm = (name: string, width: number): NormWeights => ({
    weight: stream(`${name}.weight`)
      .uniformWithStd(width, 0.1)
      .map((x) => 1 + x),
    bias: stream(`${name}.bias`).uniformWithStd(width, 0.05),
  });
  const table = (name: string, rows: number): Float32Array => stream(`${name}.weight`).uniformWithStd(rows * c.hiddenSize, c.embeddingStd);

  const layers = Array.from({ length: c.numLayers }, (_, i): BertLayerWeights => {
    const p = `encoder.layer.${i}`;
    const h = c.hiddenSize;
    return {
      attention: {
        query: linear(`${p}.attention.self.query`, h, h),
        key: linear(`${p}.attention.self.key`, h, h),
        value: linear(`${p}.attention.self.value`, h, h),
        output: linear(`${p}.attention.output.dense`, h, h),
      },
      attentionNorm: norm(`${p}.attention.output.LayerNorm`, h),
      mlp: { intermediate: linear(`${p}.intermediate.dense`, h, c.intermediateSize), output: linear(`${p}.output.dense`, c.intermediateSize, h) },
      outputNorm: norm(`${p}.output.LayerNorm`, h),
    };
  });
  return {
    wordEmbeddings: table('embeddings.word_embeddings', c.vocabSize),
    positionEmbeddings: table('embeddings.position_embeddings', c.maxPositionEmbeddings),
    tokenTypeEmbeddings: table('embeddings.token_type_embeddings', c.typeVocabSize),
    embeddingNorm: norm('embeddings.LayerNorm', c.hiddenSize),
    layers,
  };
}
