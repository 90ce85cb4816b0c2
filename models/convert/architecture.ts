// Which Hugging Face decoders the converter reads, and how each one's config.json maps onto the
// decoder graph the builders emit. All are dense decoders with RMSNorm, GQA attention with RoPE and
// a gated MLP; they differ in where the norms sit (LLaMA's before each block, Gemma 3's before and
// after, OLMo 2's after), q/k norms, biases, the MLP's activation, scalar multipliers (Gemma,
// Granite), per-layer RoPE and sliding windows (Gemma 3, SmolLM3, Mistral, Qwen2, Phi-3) and
// fused projections (Phi-3). Config fields are read through a ConfigReader, which refuses any
// field left unread that is not known to be irrelevant (config-reader.ts).

import { DEFAULT_DECODER_VARIANT, type DecoderConfig, type DecoderLayerSpec, type DecoderVariant, type LayerRope } from '../qwen3/config.js';
import { ConfigReader } from './config-reader.js';
import { ConvertError } from './convert-error.js';
import { RopeScalingError, resolveRope } from './rope-scaling.js';

export { ConvertError };

type LayerType = 'full_attention' | 'sliding_attention';

interface Family {
  readonly modelTypes: readonly string[];
  /** How its layers are wired (the rest of DecoderVariant comes from the config). */
  readonly wiring: Pick<DecoderVariant, 'norms' | 'qkNorm'>;
  /** q/k/v carry biases whatever attention_bias says (Qwen2). */
  readonly qkvBias?: boolean;
  /** qkv_proj and gate_up_proj as single tensors (Phi-3). */
  readonly fusedProjections?: boolean;
  /** transformers' class defaults for the keys a checkpoint may leave out. */
  readonly defaults: { readonly tieWordEmbeddings: boolean; readonly maxPositionEmbeddings: number; readonly rmsNormEps: number; readonly ropeTheta: Readonly<Record<LayerType, number>> };
}

const THETA_10K = { full_attention: 10_000, sliding_attention: 10_000 };
const LLAMA_DEFAULTS = { tieWordEmbeddings: false, maxPositionEmbeddings: 2048, rmsNormEps: 1e-6, ropeTheta: THETA_10K };

export const ARCHITECTURES = {
  LlamaForCausalLM: { modelTypes: ['llama'], wiring: { norms: 'pre', qkNorm: 'none' }, defaults: LLAMA_DEFAULTS },
  MistralForCausalLM: { modelTypes: ['mistral'], wiring: { norms: 'pre', qkNorm: 'none' }, defaults: { ...LLAMA_DEFAULTS, maxPositionEmbeddings: 131_072 } },
  Qwen2ForCausalLM: { modelTypes: ['qwen2'], wiring: { norms: 'pre', qkNorm: 'none' }, qkvBias: true, defaults: { ...LLAMA_DEFAULTS, maxPositionEmbeddings: 32_768 } },
  Qwen3ForCausalLM: { modelTypes: ['qwen3'], wiring: { norms: 'pre', qkNorm: 'head' }, defaults: { ...LLAMA_DEFAULTS, maxPositionEmbeddings: 32_768 } },
  Gemma3ForCausalLM: {
    modelTypes: ['gemma3_text'],
    wiring: { norms: 'sandwich', qkNorm: 'head' },
    defaults: { tieWordEmbeddings: true, maxPositionEmbeddings: 131_072, rmsNormEps: 1e-6, ropeTheta: { full_attention: 1_000_000, sliding_attention: 10_000 } },
  },
  Phi3ForCausalLM: { modelTypes: ['phi3'], wiring: { norms: 'pre', qkNorm: 'none' }, fusedProjections: true, defaults: { ...LLAMA_DEFAULTS, maxPositionEmbeddings: 4096, rmsNormEps: 1e-5 } },
  SmolLM3ForCausalLM: {
    modelTypes: ['smollm3'],
    wiring: { norms: 'pre', qkNorm: 'none' },
    defaults: { tieWordEmbeddings: true, maxPositionEmbeddings: 32_768, rmsNormEps: 1e-6, ropeTheta: { full_attention: 2_000_000, sliding_attention: 2_000_000 } },
  },
  GraniteForCausalLM: { modelTypes: ['granite'], wiring: { norms: 'pre', qkNorm: 'none' }, defaults: LLAMA_DEFAULTS },
  Olmo2ForCausalLM: { modelTypes: ['olmo2'], wiring: { norms: 'post', qkNorm: 'projection' }, defaults: { ...LLAMA_DEFAULTS, rmsNormEps: 1e-5 } },
} as const satisfies Record<string, Family>;
export type Architecture = keyof typeof ARCHITECTURES;

export interface DecoderPlan {
  readonly architecture: Architecture;
  readonly config: DecoderConfig;
  /** The wiring the graph builders follow (also config.variant). */
  readonly variant: DecoderVariant;
  /** q/k/v projections carry a bias (Qwen2; others with attention_bias). */
  readonly qkvBias: boolean;
  /** o_proj carries a bias (attention_bias). */
  readonly oBias: boolean;
  readonly tiedEmbeddings: boolean;
  /** The checkpoint stores qkv_proj and gate_up_proj fused (Phi-3); they are split as read. */
  readonly fusedProjections: boolean;
  /** Added to every RMSNorm weight as read: Gemma's norms scale by (1 + weight). */
  readonly normWeightOffset: number;
  /** Granite's residual_multiplier, folded into o_proj and down_proj as read (each block's output is scaled before the residual add). */
  readonly residualMultiplier: number;
  /** The context the converted model serves, where it is below max_position_embeddings (LongRoPE's short factors). */
  readonly maxContext?: number;
  /** Caveats the converter prints. */
  readonly notes: readonly string[];
}

/** config.json → the plan, or a ConvertError naming what is unsupported. */
export function planDecoder(raw: Record<string, unknown>, tokenizerVocabSize?: number): DecoderPlan {
  const r = new ConfigReader(raw);
  const architecture = architectureOf(r);
  const family: Family = ARCHITECTURES[architecture];
  const hiddenSize = r.int('hidden_size');
  const numHeads = r.int('num_attention_heads');
  const numKvHeads = r.int('num_key_value_heads', numHeads);
  if (numHeads % numKvHeads !== 0) throw new ConvertError(`config.json: num_attention_heads ${numHeads} is not a multiple of num_key_value_heads ${numKvHeads}`);
  const headDim = r.int('head_dim', hiddenSize / numHeads);
  const numLayers = r.int('num_hidden_layers');
  const vocabSize = r.int('vocab_size');
  const maxPositionEmbeddings = r.int('max_position_embeddings', family.defaults.maxPositionEmbeddings);
  checkActivation(r, architecture);
  r.expect('mlp_bias', false, 'the MLP projections have no bias in the decoder graph');
  const attentionBias = r.bool('attention_bias', false);
  const notes: string[] = [];
  const layerTypes = layerTypesOf(r, architecture, numLayers);
  const window = slidingWindowOf(r, architecture, layerTypes);
  const ropes = layerRopes(r, architecture, family, { headDim, maxPositionEmbeddings, numLayers, layerTypes }, notes);
  const layerSpecs: DecoderLayerSpec[] = layerTypes.map((type, i) => ({
    ...(ropes.perLayer[i] ? { rope: ropes.perLayer[i] } : {}),
    ...(type === 'sliding_attention' && window !== undefined ? { slidingWindow: window } : {}),
  }));
  const { variant, residualMultiplier } = variantOf(r, architecture, family, hiddenSize);
  const rmsNormEps = r.number('rms_norm_eps', family.defaults.rmsNormEps);
  const tiedEmbeddings = r.bool('tie_word_embeddings', family.defaults.tieWordEmbeddings);
  const intermediateSize = r.int('intermediate_size');
  r.refuseUnread(architecture);
  const first = ropes.perLayer.find((rope) => rope !== undefined);
  return {
    architecture,
    variant,
    qkvBias: family.qkvBias === true || attentionBias,
    oBias: attentionBias,
    tiedEmbeddings,
    fusedProjections: family.fusedProjections === true,
    normWeightOffset: architecture === 'Gemma3ForCausalLM' ? 1 : 0,
    residualMultiplier,
    ...(ropes.maxContext !== undefined && ropes.maxContext < maxPositionEmbeddings ? { maxContext: ropes.maxContext } : {}),
    notes,
    config: {
      hiddenSize,
      numLayers,
      numHeads,
      numKvHeads,
      headDim,
      intermediateSize,
      vocabSize,
      tokenizerVocabSize: Math.min(vocabSize, tokenizerVocabSize ?? vocabSize),
      maxPositionEmbeddings,
      // The first RoPE layer's also fill the single-RoPE fields; the builders read layerSpecs.
      ropeTheta: ropes.theta,
      ...(first ? { ropeInverseFrequencies: first.inverseFrequencies } : {}),
      rmsNormEps,
      layerSpecs,
      variant,
      // Initialisation scales: unused when the weights come from a checkpoint.
      projectionStd: 0,
      embeddingStd: 0,
    },
  };
}

function checkActivation(r: ConfigReader, architecture: Architecture): void {
  if (architecture === 'Gemma3ForCausalLM') {
    const act = r.value('hidden_activation') ?? r.value('hidden_act') ?? 'gelu_pytorch_tanh';
    if (act !== 'gelu_pytorch_tanh' && act !== 'gelu_tanh') throw new ConvertError(`config.json: hidden_activation ${JSON.stringify(act)} is not supported (Gemma's GeGLU: gelu_pytorch_tanh)`);
    return;
  }
  const act = r.value('hidden_act') ?? 'silu';
  if (act !== 'silu') throw new ConvertError(`config.json: hidden_act ${JSON.stringify(act)} is not supported (the decoder graph's MLP is SwiGLU: silu)`);
}

/** Each layer's attention kind, from layer_types where the config lists them, else as transformers derives them. */
function layerTypesOf(r: ConfigReader, architecture: Architecture, numLayers: number): LayerType[] {
  const listed = r.value('layer_types');
  if (listed !== undefined && listed !== null) {
    if (!Array.isArray(listed) || listed.length !== numLayers || !listed.every((t) => t === 'full_attention' || t === 'sliding_attention')) {
      throw new ConvertError(`config.json: layer_types must list "full_attention" / "sliding_attention" for each of the ${numLayers} layers`);
    }
    if (architecture === 'Gemma3ForCausalLM') for (const key of ['sliding_window_pattern', '_sliding_window_pattern']) r.value(key);
    if (architecture === 'Qwen2ForCausalLM' || architecture === 'Qwen3ForCausalLM' || architecture === 'SmolLM3ForCausalLM') r.value('max_window_layers');
    return listed as LayerType[];
  }
  const every = (type: (i: number) => LayerType): LayerType[] => Array.from({ length: numLayers }, (_, i) => type(i));
  switch (architecture) {
    case 'MistralForCausalLM':
    case 'Phi3ForCausalLM':
      return every(() => (r.has('sliding_window') || (architecture === 'MistralForCausalLM' && r.value('sliding_window') === undefined) ? 'sliding_attention' : 'full_attention'));
    case 'Qwen2ForCausalLM':
    case 'Qwen3ForCausalLM': {
      const sliding = r.bool('use_sliding_window', false) && r.has('sliding_window');
      const from = r.int('max_window_layers', 28);
      return every((i) => (sliding && i >= from ? 'sliding_attention' : 'full_attention'));
    }
    case 'Gemma3ForCausalLM': {
      const pattern = r.int('sliding_window_pattern', (r.value('_sliding_window_pattern') as number | undefined) ?? 6);
      return every((i) => ((i + 1) % pattern !== 0 ? 'sliding_attention' : 'full_attention'));
    }
    case 'SmolLM3ForCausalLM': {
      const sliding = r.bool('use_sliding_window', false) && r.has('sliding_window');
      const rope = noRopeLayers(r, numLayers);
      return every((i) => (sliding && !rope[i] ? 'sliding_attention' : 'full_attention'));
    }
    default:
      return every(() => 'full_attention');
  }
}

/** The sliding layers' window, where any layer slides. */
function slidingWindowOf(r: ConfigReader, architecture: Architecture, layerTypes: readonly LayerType[]): number | undefined {
  const classDefault = architecture === 'MistralForCausalLM' || architecture === 'Gemma3ForCausalLM' ? 4096 : undefined;
  const value = r.value('sliding_window');
  if (architecture === 'Qwen2ForCausalLM' || architecture === 'Qwen3ForCausalLM' || architecture === 'SmolLM3ForCausalLM') {
    // transformers drops the window unless use_sliding_window is true.
    if (!r.bool('use_sliding_window', false)) return undefined;
  }
  if (!layerTypes.includes('sliding_attention')) return undefined;
  const window = value === undefined ? classDefault : value;
  if (typeof window !== 'number' || !Number.isInteger(window) || window <= 0)
    throw new ConvertError(`config.json: sliding_window must be a positive integer where layers slide (got ${JSON.stringify(value)})`);
  if (architecture === 'Gemma3ForCausalLM') r.expect('use_bidirectional_attention', false, 'Gemma 3 here is a causal decoder');
  return window;
}

/** SmolLM3: 1 where a layer applies RoPE, 0 where it does not (no_rope_layers, else every no_rope_layer_interval-th layer has none). */
function noRopeLayers(r: ConfigReader, numLayers: number): boolean[] {
  const listed = r.value('no_rope_layers');
  const interval = r.int('no_rope_layer_interval', 4);
  if (listed === undefined || listed === null) return Array.from({ length: numLayers }, (_, i) => (i + 1) % interval !== 0);
  if (!Array.isArray(listed) || listed.length !== numLayers || !listed.every((x) => x === 0 || x === 1)) throw new ConvertError(`config.json: no_rope_layers must be ${numLayers} zeros and ones`);
  return listed.map((x) => x === 1);
}

interface RopeFacts {
  readonly headDim: number;
  readonly maxPositionEmbeddings: number;
  readonly numLayers: number;
  readonly layerTypes: readonly LayerType[];
}

/** Each layer's RoPE (undefined: none), from rope_parameters (transformers ≥ 5) or rope_theta / rope_scaling (4.x). */
function layerRopes(r: ConfigReader, architecture: Architecture, family: Family, facts: RopeFacts, notes: string[]): { perLayer: (LayerRope | undefined)[]; theta: number; maxContext?: number } {
  const original = architecture === 'Phi3ForCausalLM' ? r.optionalNumber('original_max_position_embeddings') : undefined;
  const resolved = new Map<LayerType, ReturnType<typeof resolveRope>>();
  let theta: number | undefined;
  for (const type of new Set(facts.layerTypes)) {
    const { parameters, source } = ropeParameters(r, architecture, family, type);
    theta ??= parameters['rope_theta'] as number;
    try {
      resolved.set(
        type,
        resolveRope(parameters, { headDim: facts.headDim, maxPositionEmbeddings: facts.maxPositionEmbeddings, source, ...(original ? { originalMaxPositionEmbeddings: original } : {}) }),
      );
    } catch (error) {
      throw error instanceof RopeScalingError ? new ConvertError(error.message) : error;
    }
  }
  for (const { notes: more } of resolved.values()) notes.push(...more.filter((n) => !notes.includes(n)));
  const withRope = architecture === 'SmolLM3ForCausalLM' ? noRopeLayers(r, facts.numLayers) : facts.layerTypes.map(() => true);
  const caps = [...resolved.values()].map((x) => x.maxContext).filter((x): x is number => x !== undefined);
  return {
    perLayer: facts.layerTypes.map((type, i) => (withRope[i] ? resolved.get(type)!.rope : undefined)),
    theta: theta!,
    ...(caps.length > 0 ? { maxContext: Math.min(...caps) } : {}),
  };
}

const LAYER_TYPES: readonly string[] = ['full_attention', 'sliding_attention'];

/** One layer type's RoPE parameter dict, gathered as transformers standardises the two layouts. */
function ropeParameters(r: ConfigReader, architecture: Architecture, family: Family, type: LayerType): { parameters: Record<string, unknown>; source: string } {
  const asDict = (key: string): Record<string, unknown> | undefined => {
    const value = r.value(key);
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'object' || Array.isArray(value)) throw new ConvertError(`config.json: ${key} must be an object`);
    return value as Record<string, unknown>;
  };
  const modern = asDict('rope_parameters');
  const legacy = asDict('rope_scaling');
  const theta = r.optionalNumber('rope_theta');
  const partial = r.optionalNumber('partial_rotary_factor');
  const gemma = architecture === 'Gemma3ForCausalLM';
  const localTheta = gemma ? r.optionalNumber('rope_local_base_freq') : undefined;
  let parameters: Record<string, unknown>;
  let source: string;
  const nested = modern !== undefined && Object.keys(modern).some((key) => LAYER_TYPES.includes(key));
  if (nested) {
    const own = modern[type];
    if (own !== undefined && own !== null && (typeof own !== 'object' || Array.isArray(own))) throw new ConvertError(`config.json: rope_parameters.${type} must be an object`);
    parameters = { ...((own as Record<string, unknown> | undefined) ?? {}) };
    source = `rope_parameters.${type}`;
  } else if (gemma) {
    // Gemma 3's 4.x layout: rope_scaling applies to the global (full-attention) layers only.
    parameters = { ...(type === 'full_attention' ? (legacy ?? modern ?? {}) : {}) };
    source = type === 'full_attention' && legacy ? 'rope_scaling' : 'rope_parameters';
  } else {
    // transformers: rope_scaling, where present, replaces rope_parameters.
    parameters = { ...(legacy ?? modern ?? {}) };
    source = legacy ? 'rope_scaling' : 'rope_parameters';
  }
  if (parameters['type'] === 'su') parameters['type'] = 'longrope';
  const fallbackTheta = gemma && type === 'sliding_attention' ? (localTheta ?? family.defaults.ropeTheta.sliding_attention) : (theta ?? family.defaults.ropeTheta[type]);
  parameters['rope_theta'] ??= fallbackTheta;
  if (partial !== undefined) parameters['partial_rotary_factor'] ??= partial;
  return { parameters, source };
}

function variantOf(r: ConfigReader, architecture: Architecture, family: Family, hiddenSize: number): { variant: DecoderVariant; residualMultiplier: number } {
  const base: DecoderVariant = { ...DEFAULT_DECODER_VARIANT, ...family.wiring };
  if (architecture === 'Gemma3ForCausalLM') {
    r.expect('attn_logit_softcapping', null, 'Gemma 2 style attention soft-capping is not implemented');
    const softcap = r.optionalNumber('final_logit_softcapping');
    return {
      variant: {
        ...base,
        activation: 'gelu_tanh',
        // transformers multiplies by √hidden cast to the weights' dtype.
        embeddingMultiplier: Math.fround(Math.sqrt(hiddenSize)),
        attentionScale: r.number('query_pre_attn_scalar', 256) ** -0.5,
        ...(softcap !== undefined ? { finalLogitSoftcap: softcap } : {}),
      },
      residualMultiplier: 1,
    };
  }
  if (architecture === 'GraniteForCausalLM') {
    const attention = r.number('attention_multiplier', 1);
    return {
      variant: { ...base, embeddingMultiplier: r.number('embedding_multiplier', 1), attentionScale: attention, logitsMultiplier: 1 / r.number('logits_scaling', 1) },
      residualMultiplier: r.number('residual_multiplier', 1),
    };
  }
  return { variant: base, residualMultiplier: 1 };
}

function architectureOf(r: ConfigReader): Architecture {
  const value = r.value('architectures');
  const modelType = r.value('model_type');
  const listed = Array.isArray(value) ? (value as unknown[]) : [];
  const known = Object.keys(ARCHITECTURES) as Architecture[];
  const byName = known.find((a) => listed.includes(a));
  if (byName) return byName;
  const byType = known.find((a) => (ARCHITECTURES[a].modelTypes as readonly unknown[]).includes(modelType));
  if (byType && listed.length === 0) return byType;
  const named = listed.length > 0 ? listed.map(String).join(', ') : `model_type ${JSON.stringify(modelType)}`;
  throw new ConvertError(`unsupported architecture ${named}: conveyor convert reads ${known.join(', ')}`);
}

/** Ids the tokenizer can produce: one past the largest id in tokenizer.json's vocab and added tokens. */
export function tokenizerVocabSizeOf(tokenizer: { model?: { vocab?: Record<string, number> }; added_tokens?: { id: number }[] }): number | undefined {
  let largest = -1;
  for (const id of Object.values(tokenizer.model?.vocab ?? {})) largest = Math.max(largest, id);
  for (const { id } of tokenizer.added_tokens ?? []) largest = Math.max(largest, id);
  return largest < 0 ? undefined : largest + 1;
}
