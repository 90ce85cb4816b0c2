// The paged decoder cut at every layer's attention core: numLayers + 1 ONNX graphs on the same
// weights as the paged graph (paged-graph.ts), for a runner that computes attention itself
// between them (the NativePagedRunner, with src/runtime/native/paged-attention.c reading the block
// pool in place). ONNX Runtime runs no attention at all and never sees the pool. Flat tokens of
// many sequences, as in the paged graph:
//   segment 0            inputs  input_ids, position_ids [num_tokens] int64
//                        outputs hidden [N, hidden] (layer 0's input, the residual),
//                                query [N, heads, D], key, value [N, kv_heads, D] (layer 0, RoPE applied)
//   segment i (1..L−1)   inputs  residual [N, hidden] (layer i−1's input), attention [N, heads·D]
//                                (layer i−1's attention core), position_ids
//                        outputs hidden (layer i's input), query, key, value (layer i)
//   segment L            inputs  residual, attention (layer L−1), logits_indices [num_logits] int64,
//                                greedy_indices [num_greedy] int64, sampleable_vocab [1] int64
//                        outputs logits [num_logits, vocab], greedy_token_ids [num_greedy] int64
//                                (kernels/greedy-tokens.ts)
// Written as onnx/<paged file>.segments/segment_NN.onnx (model-files.ts, PAGED_SEGMENT_FILE).
// Metadata: conveyor.paged_segment "i/count"; and where layer i (whose q/k/v segment i computes)
// has a sliding window, conveyor.sliding_window = that window, which the runner gives the kernel;
// conveyor.decoder_layer = layer i's wiring (layerWiring), for a runner computing the layer itself;
// on segment 0, conveyor.decoder_embedding = its lookup's multiplier; on segment L, conveyor.decoder_head = the last layer's wiring, the logits' table and their
// multiplier and soft cap (headWiring), for a runner computing that segment itself.

import type { WeightPrecision } from '../../kernels/linear.js';
import { greedyTokens } from '../../kernels/greedy-tokens.js';
import { GraphBuilder } from '../../kernels/onnx/graph-builder.js';
import type { EncodedMessage } from '../../kernels/onnx/protobuf-writer.js';
import { DEFAULT_DECODER_VARIANT, type DecoderConfig } from './config.js';
import { attentionInputs, finalNorm, layerOutput, layerRope, type ResidualStream, variantOf } from './decoder-layer.js';
import type { DecoderGraphOptions } from './graph.js';
import { FLAT_HEADS, flatLayerRotaries } from './paged-graph.js';
import { tiedEmbedding } from './tied-embedding.js';
import type { DecoderWeights } from './weights.js';

/** How many segments a decoder of this config is cut into. */
export const pagedSegmentCount = (c: DecoderConfig): number => c.numLayers + 1;

/** Segment `segment` (0 .. numLayers) of the cut decoder: only its own layers' weights are read, so a lazy checkpoint streams one segment at a time. */
export function buildPagedSegmentGraph(c: DecoderConfig, weights: DecoderWeights, precision: WeightPrecision, segment: number, options: DecoderGraphOptions = {}): EncodedMessage {
  const floatType = precision === 'fp16' || precision === 'q4f16' ? 'float16' : 'float32';
  const numLayers = c.numLayers;
  if (!Number.isInteger(segment) || segment < 0 || segment > numLayers) throw new RangeError(`segment ${segment} of a ${numLayers}-layer decoder (0 .. ${numLayers})`);
  const docString = options.docString ?? 'Conveyor Qwen3-style decoder over a paged KV cache, cut at each attention core, deterministic random weights';
  const g = new GraphBuilder(`qwen3_paged_segment_${segment}`, floatType, options.externalData);
  const flat = (name: string, width: number) => g.input(name, floatType, ['num_tokens', width]);
  const headDims = (count: number) => ['num_tokens', count, c.headDim];
  // A layer's q/k are computed in every segment but the last; position_ids feed its RoPE (an input
  // of every such segment, so the runner's feeds do not depend on the layer's RoPE).
  const computesAttentionInputs = segment < numLayers;
  const positionIds = computesAttentionInputs ? g.input('position_ids', 'int64', ['num_tokens']) : undefined;
  let hidden: ResidualStream;
  let untiedLmHead = false;
  if (segment === 0) {
    hidden = tiedEmbedding(g, 'model.embed_tokens', weights.embedding, c, precision).lookup(g.input('input_ids', 'int64', ['num_tokens']));
  } else {
    const [residual, attention] = [flat('residual', c.hiddenSize), flat('attention', c.numHeads * c.headDim)];
    const previous = segment - 1;
    hidden = g.scope(`model.layers.${previous}`, () => layerOutput({ g, c, precision }, residual, attention, weights.layers[previous]!));
  }
  if (positionIds) {
    const rotary = flatLayerRotaries(g, c, positionIds)(segment);
    const { query, key, value, residual } = g.scope(`model.layers.${segment}`, () => attentionInputs({ g, c, precision, rotary }, hidden, weights.layers[segment]!, FLAT_HEADS(g, c.headDim)));
    g.output(residual, 'hidden', floatType, ['num_tokens', c.hiddenSize]);
    g.output(query, 'query', floatType, headDims(c.numHeads));
    g.output(key, 'key', floatType, headDims(c.numKvHeads));
    g.output(value, 'value', floatType, headDims(c.numKvHeads));
  } else {
    const logitsIndices = g.input('logits_indices', 'int64', ['num_logits']);
    const normed = finalNorm(g, c, hidden, weights.finalNorm);
    const sampled = g.op1('Gather', [normed, logitsIndices], { axis: 0 });
    // The table that serves the logits: the checkpoint's own lm_head where untied, else the embedding.
    const lmHead = weights.lmHead; // read once: a converted checkpoint's getter reads the tensor each time
    untiedLmHead = lmHead !== undefined;
    const head = tiedEmbedding(g, lmHead ? 'lm_head' : 'model.embed_tokens', lmHead ?? weights.embedding, c, precision);
    g.output(head.lmHeadRows(sampled), 'logits', floatType, ['num_logits', c.vocabSize]);
    greedyTokens(g, normed, head.lmHeadRows);
  }
  const window = segment < numLayers ? c.layerSpecs?.[segment]?.slidingWindow : undefined;
  const metadata: Record<string, string> = { 'conveyor.paged_segment': `${segment}/${numLayers + 1}` };
  if (window !== undefined) metadata['conveyor.sliding_window'] = String(window);
  if (segment === 0) metadata['conveyor.decoder_embedding'] = JSON.stringify({ multiplier: (c.variant ?? DEFAULT_DECODER_VARIANT).embeddingMultiplier });
  if (segment < numLayers) metadata['conveyor.decoder_layer'] = JSON.stringify(layerWiring(c, segment));
  else metadata['conveyor.decoder_head'] = JSON.stringify(headWiring(c, untiedLmHead));
  return g.toModel({ docString, metadata });
}

/**
 * Layer `layer`'s wiring as decoder-layer.ts applies it, for a runner that computes the layer
 * itself (src/contracts/paged-segments.ts's SegmentLayerWiring; the same JSON shape). The
 * frequencies are rounded to float32, as the graph holds them.
 */
export function layerWiring(c: DecoderConfig, layer: number): Record<string, unknown> {
  const variant = variantOf(c);
  const rope = layerRope(c, layer);
  return {
    norms: variant.norms,
    qkNorm: variant.qkNorm,
    activation: variant.activation,
    rmsNormEps: c.rmsNormEps,
    queryScale: variant.attentionScale === undefined ? 1 : variant.attentionScale * Math.sqrt(c.headDim),
    rope: rope ? { inverseFrequencies: Array.from(Float32Array.from(rope.inverseFrequencies)), attentionFactor: rope.attentionFactor } : null,
  };
}

/** What the last segment computes after the last layer's attention (src/contracts/paged-segments.ts's SegmentHeadWiring; the same JSON shape). */
export function headWiring(c: DecoderConfig, untiedLmHead: boolean): Record<string, unknown> {
  const { logitsMultiplier, finalLogitSoftcap } = c.variant ?? DEFAULT_DECODER_VARIANT;
  return { layer: layerWiring(c, c.numLayers - 1), table: untiedLmHead ? 'lm_head' : 'model.embed_tokens', logitsMultiplier, finalLogitSoftcap: finalLogitSoftcap ?? null };
}
