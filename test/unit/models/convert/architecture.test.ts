import { describe, expect, it } from 'vitest';
import { ConvertUsageError, parseConvertArguments } from '../../../../models/convert/arguments.js';
import { planDecoder, tokenizerVocabSizeOf } from '../../../../models/convert/architecture.js';
import { requiredTensors } from '../../../../models/convert/decoder-tensors.js';
import { resolveRope } from '../../../../models/convert/rope-scaling.js';
import { inverseFrequencies } from '../../../../kernels/rotary-embedding.js';

// A Mistral-7B-v0.1-shaped config.json, as save_pretrained writes it.
const mistral = {
  architectures: ['MistralForCausalLM'],
  model_type: 'mistral',
  hidden_size: 4096,
  intermediate_size: 14336,
  num_hidden_layers: 32,
  num_attention_heads: 32,
  num_key_value_heads: 8,
  max_position_embeddings: 32768,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  sliding_window: 4096,
  vocab_size: 32000,
  hidden_act: 'silu',
};

describe('planDecoder', () => {
  it('maps a Mistral config: head_dim from hidden / heads, untied lm_head, every layer in the sliding window', () => {
    const plan = planDecoder(mistral, 32000);
    expect(plan).toMatchObject({ architecture: 'MistralForCausalLM', variant: { qkNorm: 'none', norms: 'pre' }, qkvBias: false, oBias: false, tiedEmbeddings: false });
    expect(plan.config).toMatchObject({ hiddenSize: 4096, numLayers: 32, numHeads: 32, numKvHeads: 8, headDim: 128, intermediateSize: 14336, vocabSize: 32000, ropeTheta: 10000, rmsNormEps: 1e-5 });
    expect(plan.config.layerSpecs?.map((l) => l.slidingWindow)).toEqual(Array(32).fill(4096));
    expect(plan.notes).toEqual([]);
    expect(planDecoder({ ...mistral, sliding_window: null }).config.layerSpecs?.every((l) => l.slidingWindow === undefined)).toBe(true);
  });

  it('reads transformers 5 and 4.x layouts alike: rope_parameters, rope_theta + rope_scaling, type and rope_type', () => {
    const { rope_theta: _t, ...modern } = mistral;
    const scaling = { factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192 };
    const v5 = planDecoder({ ...modern, rope_parameters: { rope_type: 'llama3', rope_theta: 500_000, ...scaling } });
    const v4 = planDecoder({ ...mistral, rope_theta: 500_000, rope_scaling: { type: 'llama3', ...scaling } });
    expect(v5.config.ropeTheta).toBe(500_000);
    expect(v5.config.layerSpecs).toEqual(v4.config.layerSpecs);
    // Before the fix, a rope_parameters-only config fell back to θ 10000 and plain RoPE.
    expect(v5.config.layerSpecs![0]!.rope!.inverseFrequencies).not.toEqual(planDecoder(mistral).config.layerSpecs![0]!.rope!.inverseFrequencies);
  });

  it('Gemma 3: local and global layers with their own RoPE and window, sandwich norms, GeGLU, scales', () => {
    const gemma = {
      architectures: ['Gemma3ForCausalLM'],
      model_type: 'gemma3_text',
      hidden_size: 1152,
      intermediate_size: 6912,
      num_hidden_layers: 6,
      num_attention_heads: 4,
      num_key_value_heads: 1,
      head_dim: 256,
      query_pre_attn_scalar: 256,
      sliding_window: 512,
      vocab_size: 262144,
      rope_theta: 1_000_000,
      rope_local_base_freq: 10_000,
      rope_scaling: { rope_type: 'linear', factor: 8 },
      sliding_window_pattern: 6,
      final_logit_softcapping: 30,
      attn_logit_softcapping: null,
    };
    const plan = planDecoder(gemma);
    expect(plan.variant).toMatchObject({
      norms: 'sandwich',
      qkNorm: 'head',
      activation: 'gelu_tanh',
      embeddingMultiplier: Math.fround(Math.sqrt(1152)),
      attentionScale: 1 / 16,
      finalLogitSoftcap: 30,
    });
    expect(plan).toMatchObject({ tiedEmbeddings: true, normWeightOffset: 1 });
    const specs = plan.config.layerSpecs!;
    expect(specs.map((l) => l.slidingWindow)).toEqual([512, 512, 512, 512, 512, undefined]);
    expect(specs[0]!.rope!.inverseFrequencies[1]).toBeCloseTo(10_000 ** (-2 / 256), 12);
    expect(specs[5]!.rope!.inverseFrequencies[1]).toBeCloseTo(1_000_000 ** (-2 / 256) / 8, 12);
    expect(() => planDecoder({ ...gemma, attn_logit_softcapping: 50 })).toThrow(/attn_logit_softcapping 50 is not supported/);
  });

  it('refuses a config field it does not understand, by name, rather than dropping it', () => {
    expect(() => planDecoder({ ...mistral, quantization_config: { quant_method: 'awq' } })).toThrow(/'quantization_config' is not understood by conveyor convert for MistralForCausalLM/);
    expect(() => planDecoder({ ...mistral, query_pre_attn_scalar: 144 })).toThrow(/'query_pre_attn_scalar'/);
    // Bookkeeping, training-only and generation fields, and nulls, pass.
    expect(planDecoder({ ...mistral, torch_dtype: 'bfloat16', initializer_range: 0.02, bos_token_id: 1, use_cache: true, clip_qkv: null }).architecture).toBe('MistralForCausalLM');
  });

  it('model_type alone names the family; kv heads default to the heads; attention_bias adds q/k/v/o biases', () => {
    const { architectures: _a, num_key_value_heads: _k, sliding_window: _s, ...rest } = mistral;
    const plan = planDecoder({ ...rest, model_type: 'llama', attention_bias: true, tie_word_embeddings: true });
    expect(plan).toMatchObject({ architecture: 'LlamaForCausalLM', qkvBias: true, oBias: true, tiedEmbeddings: true, notes: [] });
    expect(plan.config.layerSpecs?.every((l) => l.slidingWindow === undefined)).toBe(true);
    expect(plan.config.numKvHeads).toBe(32);
  });

  it('Qwen2 has q/k/v biases and no o bias; Qwen3 has q/k norm', () => {
    expect(planDecoder({ ...mistral, architectures: ['Qwen2ForCausalLM'], model_type: 'qwen2' })).toMatchObject({ qkvBias: true, oBias: false, variant: { qkNorm: 'none' } });
    expect(planDecoder({ ...mistral, architectures: ['Qwen3ForCausalLM'], model_type: 'qwen3', head_dim: 64 })).toMatchObject({ variant: { qkNorm: 'head' }, config: { headDim: 64 } });
  });

  it('refuses what the graph cannot express, by name', () => {
    expect(() => planDecoder({ ...mistral, architectures: ['MixtralForCausalLM'], model_type: 'mixtral' })).toThrow(/unsupported architecture MixtralForCausalLM/);
    expect(() => planDecoder({ model_type: 'gemma2', hidden_size: 8 })).toThrow(/unsupported architecture model_type "gemma2"/);
    expect(() => planDecoder({ ...mistral, hidden_act: 'gelu' })).toThrow(/hidden_act "gelu" is not supported/);
    expect(() => planDecoder({ ...mistral, num_key_value_heads: 5 })).toThrow(/not a multiple of num_key_value_heads 5/);
    expect(() => planDecoder({ ...mistral, hidden_size: undefined })).toThrow(/hidden_size must be a positive integer/);
    expect(() => planDecoder({ ...mistral, rope_scaling: { rope_type: 'mrope', factor: 4 } })).toThrow(/rope_scaling type "mrope" is not supported/);
    expect(() => planDecoder({ ...mistral, rope_scaling: { rope_type: 'llama3', factor: 8 } })).toThrow(/rope_scaling.low_freq_factor must be a positive number/);
    expect(() => planDecoder({ ...mistral, rope_scaling: { rope_type: 'linear', factor: 2, beta_fast: 3 } })).toThrow(/rope_scaling \(linear\) has 'beta_fast'/);
    expect(planDecoder({ ...mistral, rope_scaling: { type: 'default' } }).architecture).toBe('MistralForCausalLM');
  });

  it('ids past the tokenizer are masked: the tokenizer size comes from tokenizer.json, capped at vocab_size', () => {
    expect(tokenizerVocabSizeOf({ model: { vocab: { a: 0, b: 7 } }, added_tokens: [{ id: 9 }] })).toBe(10);
    expect(tokenizerVocabSizeOf({})).toBeUndefined();
    expect(planDecoder(mistral, 31_990).config.tokenizerVocabSize).toBe(31_990);
    expect(planDecoder(mistral, 40_000).config.tokenizerVocabSize).toBe(32_000);
  });

  it('declares each tensor once: LLaMA-family names, no q/k norm outside Qwen3, lm_head only when untied', () => {
    const names = requiredTensors(planDecoder({ ...mistral, num_hidden_layers: 1 })).map((t) => `${t.name} [${t.shape.join(',')}]`);
    expect(names).toEqual([
      'model.embed_tokens.weight [32000,4096]',
      'lm_head.weight [32000,4096]',
      'model.layers.0.input_layernorm.weight [4096]',
      'model.layers.0.self_attn.q_proj.weight [4096,4096]',
      'model.layers.0.self_attn.k_proj.weight [1024,4096]',
      'model.layers.0.self_attn.v_proj.weight [1024,4096]',
      'model.layers.0.self_attn.o_proj.weight [4096,4096]',
      'model.layers.0.post_attention_layernorm.weight [4096]',
      'model.layers.0.mlp.gate_proj.weight [14336,4096]',
      'model.layers.0.mlp.up_proj.weight [14336,4096]',
      'model.layers.0.mlp.down_proj.weight [4096,14336]',
      'model.norm.weight [4096]',
    ]);
  });
});

describe('rope_scaling', () => {
  // Llama 3.2's values: original context 8192, factor 32, low 1, high 4 → wavelengths under 2048 kept, over 8192 slowed 32×.
  const llama3 = { rope_type: 'llama3', factor: 32, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192 };

  it('llama3 keeps short wavelengths, slows long ones by factor, blends between', () => {
    const headDim = 64;
    const theta = 500_000;
    const plain = inverseFrequencies(headDim, theta);
    const scaled = resolveRope({ ...llama3, rope_theta: theta }, { headDim, maxPositionEmbeddings: 131072, source: 'rope_scaling' }).rope.inverseFrequencies;
    expect(scaled).toHaveLength(headDim / 2);
    let [kept, slowed, blended] = [0, 0, 0];
    plain.forEach((f, i) => {
      const wavelength = (2 * Math.PI) / f;
      if (wavelength < 2048) {
        expect(scaled[i]).toBe(f);
        kept++;
      } else if (wavelength > 8192) {
        expect(scaled[i]).toBeCloseTo(f / 32, 15);
        slowed++;
      } else {
        // Between the two, monotone in the blend: f/32 < scaled < f.
        expect(scaled[i]!).toBeGreaterThan(f / 32);
        expect(scaled[i]!).toBeLessThan(f);
        blended++;
      }
    });
    expect([kept > 0, slowed > 0, blended > 0]).toEqual([true, true, true]);
    // planDecoder hands the same θ_i to the graph.
    expect(planDecoder({ ...mistral, rope_theta: theta, num_attention_heads: 64, rope_scaling: llama3 }).config.ropeInverseFrequencies).toEqual(scaled);
  });

  it('plain RoPE is θ^(-2i/D)', () => {
    const context = { headDim: 64, maxPositionEmbeddings: 4096, source: 'rope_parameters' };
    expect(resolveRope({ rope_type: 'default', rope_theta: 1e4 }, context).rope).toEqual({ inverseFrequencies: inverseFrequencies(64, 1e4), attentionFactor: 1 });
    expect(planDecoder(mistral).config.ropeInverseFrequencies).toEqual(inverseFrequencies(128, 1e4));
  });

  // Expected values printed by transformers 5.18's own ROPE_INIT_FUNCTIONS for the same parameters.
  it('yarn equals transformers: ramped θ_i and the attention factor', () => {
    const { rope } = resolveRope({ rope_type: 'yarn', rope_theta: 1e6, factor: 4, original_max_position_embeddings: 8192 }, { headDim: 64, maxPositionEmbeddings: 32768, source: 'rope_parameters' });
    [1.0, 0.031622779, 0.000333333, 7.906e-6].forEach((expected, k) => expect(rope.inverseFrequencies[k * 8]).toBeCloseTo(expected, 8));
    expect(rope.attentionFactor).toBeCloseTo(1.138629436111989, 12);
  });

  it('longrope with partial rotary equals transformers (short factors) and caps the context at the original length', () => {
    const parameters = {
      rope_type: 'longrope',
      rope_theta: 1e4,
      partial_rotary_factor: 0.5,
      short_factor: Array.from({ length: 8 }, (_, i) => 1 + i * 0.1),
      long_factor: Array.from({ length: 8 }, (_, i) => 2 + i),
    };
    const resolved = resolveRope(parameters, { headDim: 32, maxPositionEmbeddings: 1024, originalMaxPositionEmbeddings: 256, source: 'rope_parameters' });
    const expected = [1.0, 0.2874797582626343, 0.0833333358168602, 0.024325214326381683, 0.0071428571827709675, 0.0021081853192299604, 0.0006249999860301614, 0.0001860163320088759];
    resolved.rope.inverseFrequencies.forEach((f, i) => expect(f).toBeCloseTo(expected[i]!, 7));
    expect(resolved.rope.attentionFactor).toBeCloseTo(1.118033988749895, 12);
    expect(resolved.maxContext).toBe(256);
  });
});

describe('parseConvertArguments', () => {
  it('takes two directories and a precision (default fp32)', () => {
    expect(parseConvertArguments(['in', 'out'])).toEqual({ hfDir: 'in', outDir: 'out', precision: 'fp32', paged: false });
    expect(parseConvertArguments(['in', 'out', '--precision', 'int8'])).toEqual({ hfDir: 'in', outDir: 'out', precision: 'int8', paged: false });
    expect(parseConvertArguments(['in', 'out', '--paged', '--precision', 'q4'])).toEqual({ hfDir: 'in', outDir: 'out', precision: 'q4', paged: true });
    expect(parseConvertArguments(['--help'])).toBeUndefined();
  });

  it('refuses unknown precisions and options, and a wrong argument count', () => {
    expect(() => parseConvertArguments(['in', 'out', '--precision', 'bf16'])).toThrow(/--precision bf16: expected one of fp32, fp16, int8/);
    expect(() => parseConvertArguments(['in', 'out', '--bogus'])).toThrow(ConvertUsageError);
    expect(() => parseConvertArguments(['in'])).toThrow(/expected <hf-dir> <out-dir>, got 1/);
  });
});
