// The BERT-style encoder graph: word + position + token-type embeddings, LayerNorm, N post-LN
// layers, and a sentence embedding (masked mean pool, L2-normalised) next to the hidden states.
// Every variant has the same I/O (int64 in, float32 out) so the server can swap fp32, fp16 and
// int8 files behind one config.pbtxt; the fp16 graph casts to float32 at the boundary.

import { encoderSelfAttention, paddingMask } from '../../kernels/encoder-attention.js';
import { geluMlp } from '../../kernels/gelu-mlp.js';
import { layerNorm } from '../../kernels/layer-norm.js';
import type { Precision } from '../../kernels/linear.js';
import { maskedMeanPool } from '../../kernels/masked-mean-pool.js';
import { GraphBuilder } from '../../kernels/onnx/graph-builder.js';
import type { EncodedMessage } from '../../kernels/onnx/protobuf-writer.js';
import type { ModelSize } from '../common/model-files.js';
import { BERT_CONFIGS, type BertConfig } from './config.js';
import { DEFAULT_BERT_SEED, initBertWeights, type BertLayerWeights, type BertWeights, type NormWeights } from './weights.js';

export interface BertBuildOptions {
  readonly size: ModelSize;
  readonly precision: Precision;
  readonly seed?: number;
}

export const BERT_INPUTS = ['input_ids', 'attention_mask', 'token_type_ids'] as const;
export const BERT_OUTPUTS = ['last_hidden_state', 'sentence_embedding'] as const;

export function buildBertEncoder(options: BertBuildOptions): { model: EncodedMessage; config: BertConfig } {
  const config = BERT_CONFIGS[options.size];
  const weights = initBertWeights(config, options.seed ?? DEFAULT_BERT_SEED);
  const g = new GraphBuilder('bert_encoder', options.precision === 'fp16' ? 'float16' : 'float32');
  const dims = ['batch_size', 'sequence_length'];
  const [inputIds, attentionMask, tokenTypeIds] = BERT_INPUTS.map((name) => g.input(name, 'int64', dims)) as [string, string, string];

  let hidden = g.scope('embeddings', () => embeddings(g, inputIds, tokenTypeIds, weights, config));
  const mask = paddingMask(g, attentionMask);
  weights.layers.forEach((layer, i) => {
    hidden = g.scope(`encoder.layer.${i}`, () => encoderLayer(g, hidden, mask, layer, config, options.precision));
  });

  const hidden32 = g.floatType === 'float16' ? g.op1('Cast', [hidden], { to: 1 }) : hidden;
  g.output(hidden32, 'last_hidden_state', 'float32', [...dims, config.hiddenSize]);
  g.output(maskedMeanPool(g, hidden32, attentionMask), 'sentence_embedding', 'float32', ['batch_size', config.hiddenSize]);
  const model = g.toModel({
    opset: 17,
    docString: `BERT-style encoder (${options.size}, ${options.precision}), deterministic random weights`,
    metadata: { architecture: 'bert', precision: options.precision, size: options.size },
  });
  return { model, config };
}

/** Sum of the three lookups, then LayerNorm. Positions are 0..S-1, as Hugging Face BERT uses. */
function embeddings(g: GraphBuilder, inputIds: string, tokenTypeIds: string, w: BertWeights, c: BertConfig): string {
  const h = c.hiddenSize;
  const words = g.op1('Gather', [g.weight('word_embeddings.weight', [c.vocabSize, h], w.wordEmbeddings), inputIds], { axis: 0 });
  const types = g.op1('Gather', [g.weight('token_type_embeddings.weight', [c.typeVocabSize, h], w.tokenTypeEmbeddings), tokenTypeIds], { axis: 0 });
  const length = g.op1('Gather', [g.op1('Shape', [inputIds]), g.ints(1)], { axis: 0 });
  const positionIds = g.op1('Range', [g.ints(0), length, g.ints(1)]);
  const positions = g.op1('Gather', [g.weight('position_embeddings.weight', [c.maxPositionEmbeddings, h], w.positionEmbeddings), positionIds], { axis: 0 });
  const sum = g.op1('Add', [g.op1('Add', [words, types]), positions]); // positions [S, H] broadcast over batch
  return norm(g, sum, 'LayerNorm', w.embeddingNorm, c);
}

/** Post-LN (original BERT): x = LN(x + attention(x)); x = LN(x + mlp(x)). */
function encoderLayer(g: GraphBuilder, x: string, mask: string, w: BertLayerWeights, c: BertConfig, precision: Precision): string {
  const attended = g.scope('attention', () => {
    const context = encoderSelfAttention(g, x, mask, w.attention, c.numHeads, precision);
    return norm(g, g.op1('Add', [context, x]), 'output.LayerNorm', w.attentionNorm, c);
  });
  const fed = geluMlp(g, attended, w.mlp, precision);
  return norm(g, g.op1('Add', [fed, attended]), 'output.LayerNorm', w.outputNorm, c);
}

function norm(g: GraphBuilder, x: string, name: string, w: NormWeights, c: BertConfig): string {
  const width = c.hiddenSize;
  return layerNorm(g, x, g.weight(`${name}.weight`, [width], w.weight), g.weight(`${name}.bias`, [width], w.bias), c.layerNormEps);
}
