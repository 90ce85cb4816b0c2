// Shapes of the BERT-style encoders Conveyor builds, and their Hugging Face config files.

import type { ModelSize } from '../common/model-files.js';

export interface BertConfig {
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  readonly intermediateSize: number;
  /** Rows of the word embedding: exactly the tokenizer's vocabulary (BERT uncased, 30,522). */
  readonly vocabSize: number;
  readonly maxPositionEmbeddings: number;
  readonly typeVocabSize: number;
  readonly layerNormEps: number;
  /** Std of the embedding tables; the embedding LayerNorm rescales their sum anyway. */
  readonly embeddingStd: number;
}

/** bert-base-uncased's WordPiece vocabulary, which every size uses (see tokenizer.ts). */
export const BERT_VOCAB_SIZE = 30_522;

const BERT_COMMON = { vocabSize: BERT_VOCAB_SIZE, maxPositionEmbeddings: 512, typeVocabSize: 2, layerNormEps: 1e-12, embeddingStd: 0.02 } as const;

export const BERT_CONFIGS: Record<ModelSize, BertConfig> = {
  tiny: { hiddenSize: 32, numLayers: 2, numHeads: 2, intermediateSize: 64, ...BERT_COMMON },
  // all-MiniLM-L6-v2's shape (≈22.7M parameters), the usual embedding model to benchmark.
  bench: { hiddenSize: 384, numLayers: 6, numHeads: 12, intermediateSize: 1536, ...BERT_COMMON },
};

// Special ids of the bert-base-uncased vocabulary.
export const PAD_ID = 0;
export const UNK_ID = 100;
export const CLS_ID = 101;
export const SEP_ID = 102;
export const MASK_ID = 103;

/** config.json as transformers / transformers.js read it (model_type "bert"). */
export function hfConfig(c: BertConfig): Record<string, unknown> {
  return {
    architectures: ['BertModel'],
    model_type: 'bert',
    hidden_size: c.hiddenSize,
    num_hidden_layers: c.numLayers,
    num_attention_heads: c.numHeads,
    intermediate_size: c.intermediateSize,
    hidden_act: 'gelu',
    hidden_dropout_prob: 0.1,
    attention_probs_dropout_prob: 0.1,
    vocab_size: c.vocabSize,
    max_position_embeddings: c.maxPositionEmbeddings,
    type_vocab_size: c.typeVocabSize,
    position_embedding_type: 'absolute',
    layer_norm_eps: c.layerNormEps,
    initializer_range: c.embeddingStd,
    pad_token_id: PAD_ID,
    classifier_dropout: null,
    use_cache: true,
    torch_dtype: 'float32',
    'transformers.js_config': { dtype: 'fp32' },
  };
}
