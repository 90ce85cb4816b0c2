// Which Hugging Face decoders the converter reads, and how each one's config.json maps onto
// the decoder graph the builders emit. LLaMA, Mistral, Qwen2 and Qwen3 share one layer shape
// (RMSNorm, GQA attention with RoPE, SwiGLU MLP); they differ in Qwen3's per-head q/k norm,
// Qwen2's q/k/v biases and whether the lm_head is tied to the embedding.

import type { DecoderConfig } from '../qwen3/config.js';
import { RopeScalingError, scaledInverseFrequencies } from './rope-scaling.js';

export class ConvertError extends Error {}

export const ARCHITECTURES = {
  LlamaForCausalLM: { modelType: 'llama', qkNorm: false, qkvBias: false },
  MistralForCausalLM: { modelType: 'mistral', qkNorm: false, qkvBias: false },
  Qwen2ForCausalLM: { modelType: 'qwen2', qkNorm: false, qkvBias: true },
  Qwen3ForCausalLM: { modelType: 'qwen3', qkNorm: true, qkvBias: false },
} as const;
export type Architecture = keyof typeof ARCHITECTURES;

export interface DecoderPlan {
  readonly architecture: Architecture;
  readonly config: DecoderConfig;
  readonly qkNorm: boolean;
  /** q/k/v projections carry a bias (Qwen2; LLaMA/Qwen3 with attention_bias). */
  readonly qkvBias: boolean;
  /** o_proj carries a bias (attention_bias in LLaMA / Qwen3 configs). */
  readonly oBias: boolean;
  readonly tiedEmbeddings: boolean;
  /** Caveats the converter prints (e.g. Mistral's sliding window is not applied). */
  readonly notes: readonly string[];
}

/** config.json → the plan, or a ConvertError naming what is unsupported. */
export function planDecoder(raw: Record<string, unknown>, tokenizerVocabSize?: number): DecoderPlan {
  const architecture = architectureOf(raw);
  const family = ARCHITECTURES[architecture];
  const int = (key: string, fallback?: number): number => {
    const value = raw[key] ?? fallback;
    if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) throw new ConvertError(`config.json: ${key} must be a positive integer (got ${JSON.stringify(raw[key])})`);
    return value;
  };
  const num = (key: string, fallback: number): number => {
    const value = raw[key] ?? fallback;
    if (typeof value !== 'number' || !(value > 0)) throw new ConvertError(`config.json: ${key} must be a positive number`);
    return value;
  };
  const hiddenSize = int('hidden_size');
  const numHeads = int('num_attention_heads');
  const numKvHeads = int('num_key_value_heads', numHeads);
  if (numHeads % numKvHeads !== 0) throw new ConvertError(`config.json: num_attention_heads ${numHeads} is not a multiple of num_key_value_heads ${numKvHeads}`);
  const act = raw['hidden_act'] ?? 'silu';
  if (act !== 'silu') throw new ConvertError(`config.json: hidden_act ${JSON.stringify(act)} is not supported (the decoder graph's MLP is SwiGLU: silu)`);
  if (raw['mlp_bias'] === true) throw new ConvertError('config.json: mlp_bias true is not supported');
  const vocabSize = int('vocab_size');
  const maxPositionEmbeddings = int('max_position_embeddings', 4096);
  const notes: string[] = [];
  const window = raw['sliding_window'];
  if (typeof window === 'number' && window < maxPositionEmbeddings && raw['use_sliding_window'] !== false) {
    notes.push(`sliding_window ${window} is not applied: attention is full, equal to the checkpoint's for contexts up to ${window} tokens`);
  }
  const attentionBias = raw['attention_bias'] === true;
  const headDim = int('head_dim', hiddenSize / numHeads);
  const ropeTheta = num('rope_theta', 10_000);
  const ropeInverseFrequencies = ropeFrequencies(raw['rope_scaling'], headDim, ropeTheta);
  return {
    architecture,
    qkNorm: family.qkNorm,
    qkvBias: family.qkvBias || attentionBias,
    oBias: attentionBias,
    tiedEmbeddings: raw['tie_word_embeddings'] === true,
    notes,
    config: {
      hiddenSize,
      numLayers: int('num_hidden_layers'),
      numHeads,
      numKvHeads,
      headDim,
      intermediateSize: int('intermediate_size'),
      vocabSize,
      tokenizerVocabSize: Math.min(vocabSize, tokenizerVocabSize ?? vocabSize),
      maxPositionEmbeddings,
      ropeTheta,
      ...(ropeInverseFrequencies ? { ropeInverseFrequencies } : {}),
      rmsNormEps: num('rms_norm_eps', 1e-6),
      // Initialisation scales: unused when the weights come from a checkpoint.
      projectionStd: 0,
      embeddingStd: 0,
    },
  };
}

function ropeFrequencies(scaling: unknown, headDim: number, theta: number): number[] | undefined {
  try {
    return scaledInverseFrequencies(scaling as Record<string, unknown> | null | undefined, headDim, theta);
  } catch (error) {
    throw error instanceof RopeScalingError ? new ConvertError(error.message) : error;
  }
}

function architectureOf(raw: Record<string, unknown>): Architecture {
  const listed = Array.isArray(raw['architectures']) ? (raw['architectures'] as unknown[]) : [];
  const known = Object.keys(ARCHITECTURES) as Architecture[];
  const byName = known.find((a) => listed.includes(a));
  if (byName) return byName;
  const byType = known.find((a) => ARCHITECTURES[a].modelType === raw['model_type']);
  if (byType && listed.length === 0) return byType;
  const named = listed.length > 0 ? listed.map(String).join(', ') : `model_type ${JSON.stringify(raw['model_type'])}`;
  throw new ConvertError(`unsupported architecture ${named}: conveyor convert reads ${known.join(', ')}`);
}

/** Ids the tokenizer can produce: one past the largest id in tokenizer.json's vocab and added tokens. */
export function tokenizerVocabSizeOf(tokenizer: { model?: { vocab?: Record<string, number> }; added_tokens?: { id: number }[] }): number | undefined {
  let largest = -1;
  for (const id of Object.values(tokenizer.model?.vocab ?? {})) largest = Math.max(largest, id);
  for (const { id } of tokenizer.added_tokens ?? []) largest = Math.max(largest, id);
  return largest < 0 ? undefined : largest + 1;
}
