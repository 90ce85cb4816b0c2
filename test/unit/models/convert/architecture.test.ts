import { describe, expect, it } from 'vitest';
import { ConvertUsageError, parseConvertArguments } from '../../../../models/convert/arguments.js';
import { planDecoder, tokenizerVocabSizeOf } from '../../../../models/convert/architecture.js';
import { requiredTensors } from '../../../../models/convert/decoder-tensors.js';
import { scaledInverseFrequencies } from '../../../../models/convert/rope-scaling.js';
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
  it('maps a Mistral config: head_dim from hidden / heads, untied lm_head, the sliding window noted', () => {
    const plan = planDecoder(mistral, 32000);
    expect(plan).toMatchObject({ architecture: 'MistralForCausalLM', qkNorm: false, qkvBias: false, oBias: false, tiedEmbeddings: false });
    expect(plan.config).toMatchObject({ hiddenSize: 4096, numLayers: 32, numHeads: 32, numKvHeads: 8, headDim: 128, intermediateSize: 14336, vocabSize: 32000, ropeTheta: 10000, rmsNormEps: 1e-5 });
    expect(plan.notes).toEqual(["sliding_window 4096 is not applied: attention is full, equal to the checkpoint's for contexts up to 4096 tokens"]);
  });

  it('model_type alone names the family; kv heads default to the heads; attention_bias adds q/k/v/o biases', () => {
    const { architectures: _a, num_key_value_heads: _k, sliding_window: _s, ...rest } = mistral;
    const plan = planDecoder({ ...rest, model_type: 'llama', attention_bias: true, tie_word_embeddings: true });
    expect(plan).toMatchObject({ architecture: 'LlamaForCausalLM', qkvBias: true, oBias: true, tiedEmbeddings: true, notes: [] });
    expect(plan.config.numKvHeads).toBe(32);
  });

  it('Qwen2 has q/k/v biases and no o bias; Qwen3 has q/k norm', () => {
    expect(planDecoder({ ...mistral, architectures: ['Qwen2ForCausalLM'], model_type: 'qwen2' })).toMatchObject({ qkvBias: true, oBias: false, qkNorm: false });
    expect(planDecoder({ ...mistral, architectures: ['Qwen3ForCausalLM'], model_type: 'qwen3', head_dim: 64 })).toMatchObject({ qkNorm: true, config: { headDim: 64 } });
  });

  it('refuses what the graph cannot express, by name', () => {
    expect(() => planDecoder({ ...mistral, architectures: ['MixtralForCausalLM'], model_type: 'mixtral' })).toThrow(/unsupported architecture MixtralForCausalLM/);
    expect(() => planDecoder({ model_type: 'gemma2', hidden_size: 8 })).toThrow(/unsupported architecture model_type "gemma2"/);
    expect(() => planDecoder({ ...mistral, hidden_act: 'gelu' })).toThrow(/hidden_act "gelu" is not supported/);
    expect(() => planDecoder({ ...mistral, num_key_value_heads: 5 })).toThrow(/not a multiple of num_key_value_heads 5/);
    expect(() => planDecoder({ ...mistral, hidden_size: undefined })).toThrow(/hidden_size must be a positive integer/);
    expect(() => planDecoder({ ...mistral, rope_scaling: { rope_type: 'yarn', factor: 4 } })).toThrow(/rope_scaling type "yarn" is not supported yet/);
    expect(() => planDecoder({ ...mistral, rope_scaling: { rope_type: 'llama3', factor: 8 } })).toThrow(/rope_scaling \(llama3\) needs a positive low_freq_factor/);
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
    const scaled = scaledInverseFrequencies(llama3, headDim, theta)!;
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

  it('plain RoPE has no override', () => {
    expect(scaledInverseFrequencies(null, 64, 1e4)).toBeUndefined();
    expect(scaledInverseFrequencies({ rope_type: 'default' }, 64, 1e4)).toBeUndefined();
    expect(planDecoder(mistral).config.ropeInverseFrequencies).toBeUndefined();
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
