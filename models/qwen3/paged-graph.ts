// The Qwen3-style decoder over a paged KV cache (onnx/model_paged*.onnx), same weights and layer
// code as the Optimum graph (graph.ts). One call runs a flat batch of tokens from many sequences
// (prefill chunks and decode tokens mixed, no padding across sequences):
//   inputs  input_ids, position_ids [num_tokens] int64; query_starts, query_lengths,
//           past_lengths [num_seqs] int64; block_tables [num_seqs, max_blocks] int64;
//           logits_indices [num_logits] int64;
//           greedy_indices [num_greedy] int64, sampleable_vocab [1] int64 (kernels/greedy-tokens.ts);
//           key_cache.{i}, value_cache.{i} [kv_heads, num_blocks, block_size, head_dim]
//   outputs logits [num_logits, vocab]; greedy_token_ids [num_greedy] int64;
//           new_key.{i}, new_value.{i} [num_tokens, kv_heads, head_dim]
// The graph never writes the pool: the runner copies new_key / new_value into the blocks.
// A layer with a sliding window (c.layerSpecs[i].slidingWindow) attends through its window's plan
// (pagedAttentionPlans: one per distinct window, index rows shared).

import type { WeightPrecision } from '../../kernels/linear.js';
import { greedyTokens } from '../../kernels/greedy-tokens.js';
import { GraphBuilder } from '../../kernels/onnx/graph-builder.js';
import type { EncodedMessage } from '../../kernels/onnx/protobuf-writer.js';
import { pagedAttention, pagedAttentionPlans } from '../../kernels/paged-attention.js';
import { applyRotary, type RotaryTables, rotaryTables } from '../../kernels/rotary-embedding.js';
import type { DecoderConfig } from './config.js';
import type { DecoderGraphOptions } from './graph.js';
import { decoderLayer, finalNorm, type HeadLayout, type LayerContext, layerRotaries, type ResidualStream } from './decoder-layer.js';
import { tiedEmbedding } from './tied-embedding.js';
import type { DecoderWeights } from './weights.js';

/**
 * [N, heads·D] → [N, heads, D]. RoPE sees each token as its own one-position batch, [N, heads, 1, D]
 * with positions [N, 1] (flatRotaryTables), and hands back [N, heads, D].
 */
export const FLAT_HEADS = (g: GraphBuilder, headDim: number): HeadLayout => ({
  split: (projected, count) => g.op1('Reshape', [projected, g.ints([0, count, headDim])]),
  arrange: (perHead) => perHead,
  rotate: (arranged, rotary) => g.op1('Reshape', [applyRotary(g, g.op1('Reshape', [arranged, g.ints([0, 0, 1, headDim])]), rotary), g.ints([0, 0, headDim])]),
});

/** Each layer's RoPE inputs for FLAT_HEADS from flat `positionIds` [N] (undefined for a layer without RoPE). */
export const flatLayerRotaries = (g: GraphBuilder, c: DecoderConfig, positionIds: string): ((layer: number) => RotaryTables | undefined) => {
  const positions = g.op1('Unsqueeze', [positionIds, g.ints([1])]);
  return layerRotaries(c, (rope) => rotaryTables(g, positions, c.headDim, c.ropeTheta, rope.inverseFrequencies, rope.attentionFactor));
};

export function buildPagedDecoderGraph(c: DecoderConfig, weights: DecoderWeights, precision: WeightPrecision, options: DecoderGraphOptions = {}): EncodedMessage {
  const docString = options.docString ?? 'Conveyor Qwen3-style decoder over a paged KV cache, deterministic random weights';
  const g = new GraphBuilder('qwen3_paged_decoder', precision === 'fp16' || precision === 'q4f16' ? 'float16' : 'float32', options.externalData);
  const kvType = g.floatType;
  const inputIds = g.input('input_ids', 'int64', ['num_tokens']);
  const positionIds = g.input('position_ids', 'int64', ['num_tokens']);
  const queryStarts = g.input('query_starts', 'int64', ['num_seqs']);
  const queryLengths = g.input('query_lengths', 'int64', ['num_seqs']);
  const pastLengths = g.input('past_lengths', 'int64', ['num_seqs']);
  const blockTables = g.input('block_tables', 'int64', ['num_seqs', 'max_blocks']);
  const logitsIndices = g.input('logits_indices', 'int64', ['num_logits']);
  const poolDims = [c.numKvHeads, 'num_blocks', 'block_size', c.headDim];
  const pools = Array.from({ length: c.numLayers }, (_, i) => ({ key: g.input(`key_cache.${i}`, kvType, poolDims), value: g.input(`value_cache.${i}`, kvType, poolDims) }));

  const embedding = tiedEmbedding(g, 'model.embed_tokens', weights.embedding, c, precision, weights.lmHead);
  const rotaryOf = flatLayerRotaries(g, c, positionIds);
  // Every distinct RoPE's tables up front, before the masks: the graph's node order (and bytes) stay as they were before RoPE became per layer.
  for (let layer = 0; layer < c.numLayers; layer++) rotaryOf(layer);
  const windows = weights.layers.map((_, i) => c.layerSpecs?.[i]?.slidingWindow);
  const plans = pagedAttentionPlans(g, { queryStarts, queryLengths, pastLengths, blockTables, keyCache: pools[0]!.key, flatTokens: inputIds, groups: c.numHeads / c.numKvHeads }, windows);
  const layout = FLAT_HEADS(g, c.headDim);
  let hidden: ResidualStream = embedding.lookup(inputIds); // [N, hidden]
  const newKv = weights.layers.map((layer, i) => {
    const attend = (query: string, key: string, value: string) => ({
      output: pagedAttention(g, {
        query,
        key,
        value,
        keyCache: pools[i]!.key,
        valueCache: pools[i]!.value,
        plan: plans.get(windows[i])!,
        numHeads: c.numHeads,
        numKvHeads: c.numKvHeads,
        headDim: c.headDim,
      }),
      newKey: key,
      newValue: value,
    });
    const context: LayerContext = { g, c, precision, rotary: rotaryOf(i) };
    const result = g.scope(`model.layers.${i}`, () => decoderLayer(context, hidden, layer, layout, attend));
    hidden = result.hidden;
    return result;
  });

  const normed = finalNorm(g, c, hidden, weights.finalNorm);
  const sampled = g.op1('Gather', [normed, logitsIndices], { axis: 0 }); // [num_logits, hidden]
  g.output(embedding.lmHeadRows(sampled), 'logits', g.floatType, ['num_logits', c.vocabSize]);
  greedyTokens(g, normed, embedding.lmHeadRows);
  const newDims = ['num_tokens', c.numKvHeads, c.headDim];
  newKv.forEach(({ newKey, newValue }, i) => {
    g.output(newKey, `new_key.${i}`, kvType, newDims);
    g.output(newValue, `new_value.${i}`, kvType, newDims);
  });
  return g.toModel({ docString });
}
