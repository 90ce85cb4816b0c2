// The Hugging Face tensors a decoder plan needs, declared once: the converter checks them all
// against the checkpoint's headers before writing anything, then reads each one lazily, when
// the graph builder reaches it, so only one tensor's values are alive at a time.

import type { LinearWeights } from '../../kernels/linear.js';
import { transposeMatrix } from '../qwen3/checkpoint.js';
import type { DecoderLayerWeights, DecoderWeights } from '../qwen3/weights.js';
import { ConvertError, type DecoderPlan } from './architecture.js';
import type { SafetensorsCheckpoint } from './safetensors.js';

export interface RequiredTensor {
  readonly name: string;
  readonly shape: readonly number[];
}

interface LinearShape {
  readonly name: string;
  readonly inFeatures: number;
  readonly outFeatures: number;
  readonly bias: boolean;
}

function layerLinears(plan: DecoderPlan, i: number): Record<'q' | 'k' | 'v' | 'o' | 'gate' | 'up' | 'down', LinearShape> {
  const c = plan.config;
  const [h, qDim, kvDim, ff] = [c.hiddenSize, c.numHeads * c.headDim, c.numKvHeads * c.headDim, c.intermediateSize];
  const p = `model.layers.${i}`;
  const at = (name: string, inFeatures: number, outFeatures: number, bias = false): LinearShape => ({ name: `${p}.${name}`, inFeatures, outFeatures, bias });
  return {
    q: at('self_attn.q_proj', h, qDim, plan.qkvBias),
    k: at('self_attn.k_proj', h, kvDim, plan.qkvBias),
    v: at('self_attn.v_proj', h, kvDim, plan.qkvBias),
    o: at('self_attn.o_proj', qDim, h, plan.oBias),
    gate: at('mlp.gate_proj', h, ff),
    up: at('mlp.up_proj', h, ff),
    down: at('mlp.down_proj', ff, h),
  };
}

/** Every tensor the plan reads, in the order the graph builder reaches them. */
export function requiredTensors(plan: DecoderPlan): RequiredTensor[] {
  const c = plan.config;
  const table = [c.vocabSize, c.hiddenSize];
  const out: RequiredTensor[] = [{ name: 'model.embed_tokens.weight', shape: table }];
  if (!plan.tiedEmbeddings) out.push({ name: 'lm_head.weight', shape: table });
  for (let i = 0; i < c.numLayers; i++) {
    const p = `model.layers.${i}`;
    const linears = layerLinears(plan, i);
    const linear = (l: LinearShape): RequiredTensor[] => [{ name: `${l.name}.weight`, shape: [l.outFeatures, l.inFeatures] }, ...(l.bias ? [{ name: `${l.name}.bias`, shape: [l.outFeatures] }] : [])];
    out.push({ name: `${p}.input_layernorm.weight`, shape: [c.hiddenSize] }, ...linear(linears.q));
    if (plan.qkNorm) out.push({ name: `${p}.self_attn.q_norm.weight`, shape: [c.headDim] });
    out.push(...linear(linears.k));
    if (plan.qkNorm) out.push({ name: `${p}.self_attn.k_norm.weight`, shape: [c.headDim] });
    out.push(...linear(linears.v), ...linear(linears.o), { name: `${p}.post_attention_layernorm.weight`, shape: [c.hiddenSize] });
    out.push(...linear(linears.gate), ...linear(linears.up), ...linear(linears.down));
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
  const linear = (l: LinearShape): LinearWeights => {
    const weight = transposeMatrix(read(`${l.name}.weight`, [l.outFeatures, l.inFeatures]), l.outFeatures, l.inFeatures);
    return { inFeatures: l.inFeatures, outFeatures: l.outFeatures, weight, ...(l.bias ? { bias: read(`${l.name}.bias`, [l.outFeatures]) } : {}) };
  };
  const layers = Array.from({ length: c.numLayers }, (_, i): DecoderLayerWeights => {
    const p = `model.layers.${i}`;
    const l = layerLinears(plan, i);
    const norm = (name: string, width: number) => () => read(`${p}.${name}.weight`, [width]);
    const qkNorm = plan.qkNorm
      ? {
          get qNorm() {
            return norm('self_attn.q_norm', c.headDim)();
          },
          get kNorm() {
            return norm('self_attn.k_norm', c.headDim)();
          },
        }
      : {};
    return Object.defineProperties(qkNorm as DecoderLayerWeights, {
      inputNorm: { get: norm('input_layernorm', c.hiddenSize), enumerable: true },
      postAttentionNorm: { get: norm('post_attention_layernorm', c.hiddenSize), enumerable: true },
      q: { get: () => linear(l.q), enumerable: true },
      k: { get: () => linear(l.k), enumerable: true },
      v: { get: () => linear(l.v), enumerable: true },
      o: { get: () => linear(l.o), enumerable: true },
      gate: { get: () => linear(l.gate), enumerable: true },
      up: { get: () => linear(l.up), enumerable: true },
      down: { get: () => linear(l.down), enumerable: true },
    });
  });
  const table = [c.vocabSize, c.hiddenSize];
  const weights = {
    layers,
    get embedding() {
      return read('model.embed_tokens.weight', table);
    },
    get finalNorm() {
      return read('model.norm.weight', [c.hiddenSize]);
    },
  };
  if (plan.tiedEmbeddings) return weights;
  return Object.defineProperty(weights, 'lmHead', { get: () => read('lm_head.weight', table), enumerable: true });
}
