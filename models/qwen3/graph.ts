// The Qwen3-style decoder graph, I/O exactly the Optimum / transformers.js contract:
//   inputs  input_ids [batch_size, sequence_length] int64, attention_mask [batch_size,
//           total_sequence_length] int64, position_ids [batch_size, sequence_length] int64,
//           past_key_values.{i}.key|value [batch_size, kv_heads, past_sequence_length, head_dim],
//           num_logits_to_keep (scalar int64; k > 0 keeps the last k positions, 0 keeps all)
//   outputs logits [batch_size, logits_length, vocab], present.{i}.key|value
// fp16 and q4f16 variants keep the KV cache and logits in float16, as Optimum's fp16 exports do.

import { causalGqaAttention, causalMask } from '../../kernels/causal-gqa-attention.js';
import { linear, type WeightPrecision } from '../../kernels/linear.js';
import { type ExternalDataSink, GraphBuilder } from '../../kernels/onnx/graph-builder.js';
import type { EncodedMessage } from '../../kernels/onnx/protobuf-writer.js';
import { rmsNorm } from '../../kernels/rms-norm.js';
import { applyRotary, rotaryTables, type RotaryTables } from '../../kernels/rotary-embedding.js';
import { swigluMlp } from '../../kernels/swiglu-mlp.js';
import type { DecoderConfig } from './config.js';
import { tiedEmbedding } from './tied-embedding.js';
import type { DecoderLayerWeights, DecoderWeights } from './weights.js';

interface LayerContext {
  readonly g: GraphBuilder;
  readonly c: DecoderConfig;
  readonly precision: WeightPrecision;
  readonly rotary: RotaryTables;
  readonly mask: string;
}

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
  const context: LayerContext = {
    g,
    c,
    precision,
    rotary: rotaryTables(g, positionIds, c.headDim, c.ropeTheta, c.ropeInverseFrequencies),
    mask: causalMask(g, attentionMask, inputIds, c.numHeads / c.numKvHeads),
  };
  let hidden = embedding.lookup(inputIds);
  const presents = weights.layers.map((layer, i) => {
    const result = g.scope(`model.layers.${i}`, () => decoderLayer(context, hidden, layer, past[i]!));
    hidden = result.hidden;
    return result;
  });

  const normed = g.scope('model.norm', () => rmsNorm(g, hidden, g.weight('weight', [c.hiddenSize], weights.finalNorm), c.rmsNormEps));
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

function decoderLayer(
  { g, c, precision, rotary, mask }: LayerContext,
  x: string,
  w: DecoderLayerWeights,
  past: { key: string; value: string },
): { hidden: string; presentKey: string; presentValue: string } {
  const normed = g.scope('input_layernorm', () => rmsNorm(g, x, g.weight('weight', [c.hiddenSize], w.inputNorm), c.rmsNormEps));
  const attention = g.scope('self_attn', () => {
    // [B, S, heads·D] → [B, heads, S, D], with Qwen3's per-head RMSNorm on q and k before RoPE
    // (LLaMA, Qwen2 and Mistral have none: their layers carry no qNorm / kNorm).
    const heads = (projected: string, count: number, norm?: { name: string; weight?: Float32Array | undefined }): string => {
      let perHead = g.op1('Reshape', [projected, g.ints([0, 0, count, c.headDim])]);
      const weight = norm?.weight;
      if (norm && weight) perHead = g.scope(norm.name, () => rmsNorm(g, perHead, g.weight('weight', [c.headDim], weight), c.rmsNormEps));
      return g.op1('Transpose', [perHead], { perm: [0, 2, 1, 3] });
    };
    const q = heads(linear(g, normed, 'q_proj', w.q, precision), c.numHeads, { name: 'q_norm', weight: w.qNorm });
    const k = heads(linear(g, normed, 'k_proj', w.k, precision), c.numKvHeads, { name: 'k_norm', weight: w.kNorm });
    const v = heads(linear(g, normed, 'v_proj', w.v, precision), c.numKvHeads);
    const result = causalGqaAttention(g, {
      query: applyRotary(g, q, rotary, c.headDim),
      key: applyRotary(g, k, rotary, c.headDim),
      value: v,
      pastKey: past.key,
      pastValue: past.value,
      mask,
      numHeads: c.numHeads,
      numKvHeads: c.numKvHeads,
      headDim: c.headDim,
    });
    return { ...result, output: linear(g, result.output, 'o_proj', w.o, precision) };
  });
  const afterAttention = g.op1('Add', [x, attention.output]);
  const mlpInput = g.scope('post_attention_layernorm', () => rmsNorm(g, afterAttention, g.weight('weight', [c.hiddenSize], w.postAttentionNorm), c.rmsNormEps));
  const mlp = g.scope('mlp', () => swigluMlp(g, mlpInput, { gate: w.gate, up: w.up, down: w.down }, precision));
  return { hidden: g.op1('Add', [afterAttention, mlp]), presentKey: attention.presentKey, presentValue: attention.presentValue };
}
