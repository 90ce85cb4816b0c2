// The Qwen3-style decoder graph, I/O exactly the Optimum / transformers.js contract:
//   inputs  input_ids [batch_size, sequence_length] int64, attention_mask [batch_size,
//           total_sequence_length] int64, position_ids [batch_size, sequence_length] int64,
//           past_key_values.{i}.key|value [batch_size, kv_heads, past_sequence_length, head_dim],
//           num_logits_to_keep (scalar int64; k > 0 keeps the last k positions, 0 keeps all)
//   outputs logits [batch_size, logits_length, vocab], present.{i}.key|value
// A layer with a sliding window (c.layerSpecs[i].slidingWindow) attends through its window's mask;
// one mask per distinct window, shared by the layers that have it.
// fp16 and q4f16 variants keep the KV cache and logits in float16, as Optimum's fp16 exports do.

import { causalGqaAttention, causalMask } from '../../kernels/causal-gqa-attention.js';
import type { WeightPrecision } from '../../kernels/linear.js';
import { type ExternalDataSink, GraphBuilder } from '../../kernels/onnx/graph-builder.js';
import type { EncodedMessage } from '../../kernels/onnx/protobuf-writer.js';
import { applyRotary, rotaryTables } from '../../kernels/rotary-embedding.js';
import type { DecoderConfig } from './config.js';
import { decoderLayer, finalNorm, type HeadLayout, type LayerContext, layerRotaries, type ResidualStream } from './decoder-layer.js';
import { tiedEmbedding } from './tied-embedding.js';
import type { DecoderWeights } from './weights.js';

/** [B, S, heads·D] → [B, heads, S, D]: the Optimum cache layout. */
const OPTIMUM_HEADS = (g: GraphBuilder, headDim: number): HeadLayout => ({
  split: (projected, count) => g.op1('Reshape', [projected, g.ints([0, 0, count, headDim])]),
  arrange: (perHead) => g.op1('Transpose', [perHead], { perm: [0, 2, 1, 3] }),
  rotate: (arranged, rotary) => applyRotary(g, arranged, rotary),
});

export interface DecoderGraphOptions {
  readonly docString?: string;
  /** Weights go to an external data file as the graph is built (the converter's way to stream them). */
  readonly externalData?: ExternalDataSink;
}

export function buildDecoderGraph(c: DecoderConfig, weights: DecoderWeights, precision: WeightPrecision, options: DecoderGraphOptions = {}): EncodedMessage {
  const docString = options.docString ?? 'Conveyor Qwen3-style decoder with deterministic random weights';
  const g = new GraphBuilder('qwen3_decoder', precision === 'fp16' || precision === 'q4f16' ? 'float16' : 'float32', options.externalData);
  const kvType = g.floatType;
  const inputIds = g.input('input_ids', 'int64', ['batch_size', 'sequence_length']);
  const attentionMask = g.input('attention_mask', 'int64', ['batch_size', 'total_sequence_length']);
  const positionIds = g.input('position_ids', 'int64', ['batch_size', 'sequence_length']);
  const kvDims = ['batch_size', c.numKvHeads, 'past_sequence_length', c.headDim];
  const past = Array.from({ length: c.numLayers }, (_, i) => ({
    key: g.input(`past_key_values.${i}.key`, kvType, kvDims),
    value: g.input(`past_key_values.${i}.value`, kvType, kvDims),
  }));
  const logitsToKeep = g.input('num_logits_to_keep', 'int64', []);

  const embedding = tiedEmbedding(g, 'model.embed_tokens', weights.embedding, c, precision, weights.lmHead);
  const rotaryOf = layerRotaries(c, (rope) => rotaryTables(g, positionIds, c.headDim, c.ropeTheta, rope.inverseFrequencies, rope.attentionFactor));
  // Every distinct RoPE's tables up front, before the masks: the graph's node order (and bytes) stay as they were before RoPE became per layer.
  for (let layer = 0; layer < c.numLayers; layer++) rotaryOf(layer);
  const windows = weights.layers.map((_, i) => c.layerSpecs?.[i]?.slidingWindow);
  const masks = new Map([...new Set(windows)].map((window) => [window, causalMask(g, attentionMask, inputIds, c.numHeads / c.numKvHeads, window)]));
  const layout = OPTIMUM_HEADS(g, c.headDim);
  let hidden: ResidualStream = embedding.lookup(inputIds);
  const presents = weights.layers.map((layer, i) => {
    const attend = (query: string, key: string, value: string) =>
      causalGqaAttention(g, { query, key, value, pastKey: past[i]!.key, pastValue: past[i]!.value, mask: masks.get(windows[i])!, numHeads: c.numHeads, numKvHeads: c.numKvHeads, headDim: c.headDim });
    const context: LayerContext = { g, c, precision, rotary: rotaryOf(i) };
    const result = g.scope(`model.layers.${i}`, () => decoderLayer(context, hidden, layer, layout, attend));
    hidden = result.hidden;
    return result;
  });

  const normed = finalNorm(g, c, hidden, weights.finalNorm);
  // Logits only where the caller samples: the lm_head is most of a small model's arithmetic.
  const start = g.op1('Neg', [g.op1('Unsqueeze', [logitsToKeep, g.ints([0])])]);
  const kept = g.op1('Slice', [normed, start, g.ints([Number.MAX_SAFE_INTEGER]), g.ints([1])]);
  g.output(embedding.lmHead(kept), 'logits', g.floatType, ['batch_size', 'logits_length', c.vocabSize]);
  const presentDims = ['batch_size', c.numKvHeads, 'total_sequence_length', c.headDim];
  presents.forEach(({ presentKey, presentValue }, i) => {
    g.output(presentKey, `present.${i}.key`, kvType, presentDims);
    g.output(presentValue, `present.${i}.value`, kvType, presentDims);
  });
  return g.toModel({ docString });
}
