// The Hugging Face tensors a decoder plan needs, declared once: the converter checks them all
// against the checkpoint's headers before writing anything, then reads each one lazily, when
// the graph builder reaches it, so only one tensor's values are alive at a time. Where a family
// stores something differently from the graph's weights, the difference is undone as read:
// Phi-3's fused qkv_proj / gate_up_proj are split into rows, Gemma's (1 + weight) norms get their
// 1 added, Granite's residual_multiplier is folded into the projections that feed the residual.

import type { LinearWeights } from '../../kernels/linear.js';
import { transposeMatrix } from '../qwen3/checkpoint.js';
import type { DecoderLayerWeights, DecoderWeights } from '../qwen3/weights.js';
import { ConvertError, type DecoderPlan } from './architecture.js';
import type { SafetensorsCheckpoint } from './safetensors.js';

export interface RequiredTensor {
  readonly name: string;
  readonly shape: readonly number[];
}

/** A linear layer of the graph: its checkpoint tensor, and which rows of it where the tensor is fused. */
interface LinearShape {
  readonly name: string;
  readonly inFeatures: number;
  readonly outFeatures: number;
  readonly bias: boolean;
  /** Rows [first, first + outFeatures) of a fused tensor with `fusedRows` rows. */
  readonly rows?: { readonly first: number; readonly fusedRows: number };
  /** Multiplies weight and bias (Granite's residual_multiplier on o_proj / down_proj). */
  readonly scale: number;
}

type LinearName = 'q' | 'k' | 'v' | 'o' | 'gate' | 'up' | 'down';
type NormName = 'inputNorm' | 'qNorm' | 'kNorm' | 'postAttentionNorm' | 'preFeedforwardNorm' | 'postFeedforwardNorm';

/** The checkpoint names of a layer's norms, with their widths, as the plan's family has them. */
function layerNorms(plan: DecoderPlan, i: number): Partial<Record<NormName, RequiredTensor>> {
  const c = plan.config;
  const p = `model.layers.${i}`;
  const at = (name: string, width: number): RequiredTensor => ({ name: `${p}.${name}.weight`, shape: [width] });
  const { norms, qkNorm } = plan.variant;
  return {
    ...(norms !== 'post' ? { inputNorm: at('input_layernorm', c.hiddenSize) } : {}),
    ...(qkNorm === 'head' ? { qNorm: at('self_attn.q_norm', c.headDim), kNorm: at('self_attn.k_norm', c.headDim) } : {}),
    ...(qkNorm === 'projection' ? { qNorm: at('self_attn.q_norm', c.numHeads * c.headDim), kNorm: at('self_attn.k_norm', c.numKvHeads * c.headDim) } : {}),
    postAttentionNorm: at('post_attention_layernorm', c.hiddenSize),
    ...(norms === 'sandwich' ? { preFeedforwardNorm: at('pre_feedforward_layernorm', c.hiddenSize) } : {}),
    ...(norms !== 'pre' ? { postFeedforwardNorm: at('post_feedforward_layernorm', c.hiddenSize) } : {}),
  };
}

function layerLinears(plan: DecoderPlan, i: number): Record<LinearName, LinearShape> {
  const c = plan.config;
  const [h, qDim, kvDim, ff] = [c.hiddenSize, c.numHeads * c.headDim, c.numKvHeads * c.headDim, c.intermediateSize];
  const p = `model.layers.${i}`;
  const at = (name: string, inFeatures: number, outFeatures: number, bias = false, scale = 1): LinearShape => ({ name: `${p}.${name}`, inFeatures, outFeatures, bias, scale });
  const fused = (name: string, inFeatures: number, outFeatures: number, first: number, fusedRows: number): LinearShape => ({ ...at(name, inFeatures, outFeatures), rows: { first, fusedRows } });
  const residual = plan.residualMultiplier;
  const o = at('self_attn.o_proj', qDim, h, plan.oBias, residual);
  const down = at('mlp.down_proj', ff, h, false, residual);
  if (plan.fusedProjections) {
    const qkvRows = qDim + 2 * kvDim;
    return {
      q: fused('self_attn.qkv_proj', h, qDim, 0, qkvRows),
      k: fused('self_attn.qkv_proj', h, kvDim, qDim, qkvRows),
      v: fused('self_attn.qkv_proj', h, kvDim, qDim + kvDim, qkvRows),
      o,
      gate: fused('mlp.gate_up_proj', h, ff, 0, 2 * ff),
      up: fused('mlp.gate_up_proj', h, ff, ff, 2 * ff),
      down,
    };
  }
  return {
    q: at('self_attn.q_proj', h, qDim, plan.qkvBias),
    k: at('self_attn.k_proj', h, kvDim, plan.qkvBias),
    v: at('self_attn.v_proj', h, kvDim, plan.qkvBias),
    o,
    gate: at('mlp.gate_proj', h, ff),
    up: at('mlp.up_proj', h, ff),
    down,
  };
}

/** Every tensor the plan reads, in the order the graph builder reaches them (a fused tensor once). */
export function requiredTensors(plan: DecoderPlan): RequiredTensor[] {
  const c = plan.config;
  const table = [c.vocabSize, c.hiddenSize];
  const out: RequiredTensor[] = [{ name: 'model.embed_tokens.weight', shape: table }];
  if (!plan.tiedEmbeddings) out.push({ name: 'lm_head.weight', shape: table });
  const add = (t: RequiredTensor | undefined) => {
    if (t && !out.some((o) => o.name === t.name)) out.push(t);
  };
  const linear = (l: LinearShape): void => {
    add({ name: `${l.name}.weight`, shape: [l.rows?.fusedRows ?? l.outFeatures, l.inFeatures] });
    if (l.bias) add({ name: `${l.name}.bias`, shape: [l.rows?.fusedRows ?? l.outFeatures] });
  };
  for (let i = 0; i < c.numLayers; i++) {
    const norms = layerNorms(plan, i);
    const linears = layerLinears(plan, i);
    add(norms.inputNorm);
    linear(linears.q);
    add(norms.qNorm);
    linear(linears.k);
    add(norms.kNorm);
    linear(linears.v);
    linear(linears.o);
    add(norms.postAttentionNorm);
    add(norms.preFeedforwardNorm);
    linear(linears.gate);
    linear(linears.up);
    linear(linears.down);
    add(norms.postFeedforwardNorm);
  }
  out.push({ name: 'model.norm.weight', shape: [c.hiddenSize] });
  return out;
}

/** Fails on the first tensor the checkpoint lacks or has in another shape, reading headers only. */
export function checkTensors(checkpoint: SafetensorsCheckpoint, plan: DecoderPlan): void {
  for (const { name, shape } of requiredTensors(plan)) {
    const entry = checkpoint.entry(name);
    if (!entry) throw new ConvertError(`checkpoint is missing tensor ${name} (${plan.architecture} needs it)`);
    if (entry.shape.join(',') !== shape.join(',')) throw new ConvertError(`tensor ${name} has shape [${entry.shape.join(', ')}], the config needs [${shape.join(', ')}]`);
  }
}

/** Weights whose every tensor is read from the checkpoint when first touched (and not kept). */
export function lazyDecoderWeights(checkpoint: SafetensorsCheckpoint, plan: DecoderPlan, onRead: (name: string) => void = () => {}): DecoderWeights {
  const c = plan.config;
  const read = (name: string, shape: readonly number[]): Float32Array => {
    onRead(name);
    return checkpoint.read(name, shape);
  };
  const readNorm = (t: RequiredTensor): Float32Array => {
    const values = read(t.name, t.shape);
    return plan.normWeightOffset === 0 ? values : values.map((x) => x + plan.normWeightOffset);
  };
  const linear = (l: LinearShape): LinearWeights => {
    const rows = l.rows ?? { first: 0, fusedRows: l.outFeatures };
    const stored = read(`${l.name}.weight`, [rows.fusedRows, l.inFeatures]).subarray(rows.first * l.inFeatures, (rows.first + l.outFeatures) * l.inFeatures);
    const scaled = (values: Float32Array): Float32Array => (l.scale === 1 ? values : values.map((x) => x * l.scale));
    const weight = transposeMatrix(scaled(stored), l.outFeatures, l.inFeatures);
    const bias = l.bias ? scaled(read(`${l.name}.bias`, [rows.fusedRows]).subarray(rows.first, rows.first + l.outFeatures)) : undefined;
    return { inFeatures: l.inFeatures, outFeatures: l.outFeatures, weight, ...(bias ? { bias } : {}) };
  };
  const layers = Array.from({ length: c.numLayers }, (_, i): DecoderLayerWeights => {
    const linears = layerLinears(plan, i);
    const properties: PropertyDescriptorMap = {};
    for (const [key, tensor] of Object.entries(layerNorms(plan, i))) properties[key] = { get: () => readNorm(tensor), enumerable: true };
    for (const [key, shape] of Object.entries(linears)) properties[key] = { get: () => linear(shape), enumerable: true };
    return Object.defineProperties({}, properties) as DecoderLayerWeights;
  });
  const table = [c.vocabSize, c.hiddenSize];
  const weights = {
    layers,
    get embedding() {
      return read('model.embed_tokens.weight', table);
    },
    get finalNorm() {
      return readNorm({ name: 'model.norm.weight', shape: [c.hiddenSize] });
    },
  };
  if (plan.tiedEmbeddings) return weights;
  return Object.defineProperty(weights, 'lmHead', { get: () => read('lm_head.weight', table), enumerable: true });
}
