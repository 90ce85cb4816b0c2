// The converter reads the builder's random weights back from a Hugging Face checkpoint: the
// converted model is the builder's own graph for the same weights (same bytes) and gives the
// same logits under onnxruntime.
import { mkdir, mkdtemp, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, describe, expect, it } from 'vitest';
import { type ConvertOptions, convertCheckpoint, type DecoderGraphBuilder, writeDecoderModel } from '../../../../models/convert/convert.js';
import { buildPagedDecoderGraph } from '../../../../models/qwen3/paged-graph.js';
import { MODEL_METADATA_FILES } from '../../../../src/hub/select.js';
import { pagedVariantFile } from '../../../../src/repository/variants.js';
import { resolveRope } from '../../../../models/convert/rope-scaling.js';
import { decodeToFloat32 } from '../../../../models/convert/safetensors.js';
import { encodeFromFloat32, writeSafetensorsCheckpoint } from '../../../../models/convert/safetensors-writer.js';
import { checkpointTensors, writeQwen3Checkpoint } from '../../../../models/qwen3/checkpoint.js';
import { DECODER_CONFIGS, type DecoderConfig, hfConfig } from '../../../../models/qwen3/config.js';
import { buildDecoderGraph } from '../../../../models/qwen3/graph.js';
import { type DecoderWeights, initDecoderWeights } from '../../../../models/qwen3/weights.js';
import type { WeightPrecision } from '../../../../kernels/linear.js';
import { VARIANT_FILE } from '../../../../models/common/model-files.js';
import { decoderShape, emptyCache, forward } from '../../../support/decoder.js';

// The tiny decoder with a short vocabulary, so checkpoints stay small; its tokenizer is Qwen3's, whose ids go past it.
const small: DecoderConfig = { ...DECODER_CONFIGS.tiny, numLayers: 2, vocabSize: 2048, tokenizerVocabSize: 2048 };
const prompt = [9, 707, 11, 1879, 0, 358, 1079, 264];
const root = await mkdtemp(join(tmpdir(), 'convert-'));
afterAll(() => rm(root, { recursive: true, force: true }));

let next = 0;
const fresh = (): string => join(root, String(next++));
/** The converter as its callers run it: the metadata files a Hub download fetches are the ones it copies. */
const convert = (hfDir: string, outDir: string, options: Omit<ConvertOptions, 'metadataFiles'> = {}) => convertCheckpoint(hfDir, outDir, { metadataFiles: MODEL_METADATA_FILES, ...options });

const mapWeights = (w: DecoderWeights, f: (x: Float32Array) => Float32Array): DecoderWeights => {
  const linear = <L extends { weight: Float32Array; bias?: Float32Array }>(l: L): L => ({ ...l, weight: f(l.weight), ...(l.bias ? { bias: f(l.bias) } : {}) });
  return {
    embedding: f(w.embedding),
    finalNorm: f(w.finalNorm),
    ...(w.lmHead ? { lmHead: f(w.lmHead) } : {}),
    layers: w.layers.map((l) => ({
      ...(l.inputNorm ? { inputNorm: f(l.inputNorm) } : {}),
      postAttentionNorm: f(l.postAttentionNorm),
      ...(l.qNorm && l.kNorm ? { qNorm: f(l.qNorm), kNorm: f(l.kNorm) } : {}),
      q: linear(l.q),
      k: linear(l.k),
      v: linear(l.v),
      o: linear(l.o),
      gate: linear(l.gate),
      up: linear(l.up),
      down: linear(l.down),
    })),
  };
};
const bf16 = (x: Float32Array): Float32Array => decodeToFloat32('BF16', encodeFromFloat32('BF16', x));

/** Whether the converter's output equals the same writer fed in-memory weights: model file and external data, byte for byte. */
async function isSameModel(
  out: string,
  modelFile: string,
  weights: DecoderWeights,
  precision: WeightPrecision,
  config: DecoderConfig = small,
  build: DecoderGraphBuilder = buildDecoderGraph,
): Promise<boolean> {
  const reference = fresh();
  await mkdir(reference);
  // The same file name: the model records its data file's name.
  const path = join(reference, basename(modelFile));
  await writeDecoderModel(path, config, weights, precision, build);
  return (await readFile(join(out, modelFile))).equals(await readFile(path)) && (await readFile(join(out, `${modelFile}_data`))).equals(await readFile(`${path}_data`));
}

async function logitsOf(path: string): Promise<Float64Array> {
  const session = await ort.InferenceSession.create(path, { intraOpNumThreads: 1, logSeverityLevel: 3 });
  try {
    return (await forward(session, emptyCache(decoderShape(session), 1, ort), [prompt], [prompt.map(() => 1)])).logits[0]!;
  } finally {
    await session.release();
  }
}

const maxAbsDiff = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
};

describe('conveyor convert: Qwen3 checkpoints from the builder', () => {
  const weights = initDecoderWeights(small);

  it('fp32, one file: the builder graph byte for byte, the same logits under onnxruntime, a servable directory', async () => {
    const [hf, out] = [fresh(), fresh()];
    await writeQwen3Checkpoint(hf, small, weights);
    const lines: string[] = [];
    const result = await convert(hf, out, { log: (l) => lines.push(l) });
    expect(result.plan.architecture).toBe('Qwen3ForCausalLM');
    expect(await isSameModel(out, result.modelFile, weights, 'fp32')).toBe(true);
    for (const file of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model.onnx']) expect(existsSync(join(out, file))).toBe(true);
    expect(lines).toContain('[1/24] model.embed_tokens.weight');
    expect(lines).toContain('[24/24] model.norm.weight');

    const reference = join(root, 'reference.onnx');
    await writeFile(reference, Buffer.concat(buildDecoderGraph(small, weights, 'fp32').chunks));
    expect(maxAbsDiff(await logitsOf(join(out, 'onnx/model.onnx')), await logitsOf(reference))).toBeLessThanOrEqual(1e-5);
  });

  it('bf16, sharded: the builder graph of the bf16-rounded weights', async () => {
    const [hf, out] = [fresh(), fresh()];
    await writeQwen3Checkpoint(hf, small, weights, { dtype: 'BF16', shards: 3 });
    expect(existsSync(join(hf, 'model-00003-of-00003.safetensors'))).toBe(true);
    const result = await convert(hf, out);
    expect(await isSameModel(out, result.modelFile, mapWeights(weights, bf16), 'fp32')).toBe(true);
  });

  it('fp16, int8 and q4 outputs are the builder variants', async () => {
    const [hf, out] = [fresh(), fresh()];
    await writeQwen3Checkpoint(hf, small, weights, { dtype: 'F16' });
    const rounded = mapWeights(weights, (x) => decodeToFloat32('F16', encodeFromFloat32('F16', x)));
    for (const precision of ['fp16', 'int8', 'q4'] as const) {
      const result = await convert(hf, out, { precision });
      expect(result.modelFile).toBe(`onnx/${VARIANT_FILE[precision]}`);
      expect(await isSameModel(out, result.modelFile, rounded, precision)).toBe(true);
    }
  });

  it('--paged also writes the paged graph of the same weights, beside the Optimum model', async () => {
    const [hf, out] = [fresh(), fresh()];
    await writeQwen3Checkpoint(hf, small, weights);
    for (const precision of ['fp32', 'q4'] as const) {
      const result = await convert(hf, out, { precision, paged: true });
      expect(result.paged?.modelFile).toBe(`onnx/${pagedVariantFile(VARIANT_FILE[precision])}`);
      expect(await isSameModel(out, result.modelFile, weights, precision)).toBe(true);
      expect(await isSameModel(out, result.paged!.modelFile, weights, precision, small, buildPagedDecoderGraph)).toBe(true);
    }
    expect((await convert(hf, fresh())).paged).toBeUndefined();
  });
});

describe('conveyor convert: LLaMA-family naming', () => {
  // LLaMA's layout: no q/k norm, an untied lm_head, LLaMA's config keys (no head_dim: hidden / heads).
  const base = initDecoderWeights(small);
  const llamaWeights: DecoderWeights = {
    ...base,
    lmHead: base.embedding.map((x, i) => x * 0.5 + (i % 7) * 1e-3),
    layers: base.layers.map(({ qNorm: _q, kNorm: _k, ...rest }) => rest),
  };
  const llamaConfig = (architecture: string, modelType: string): Record<string, unknown> => {
    const { head_dim: _h, 'transformers.js_config': _t, ...rest } = hfConfig(small);
    return { ...rest, architectures: [architecture], model_type: modelType, tie_word_embeddings: false, rope_theta: small.ropeTheta };
  };

  it('LlamaForCausalLM: the same graph without q/k norm, with its own lm_head', async () => {
    const [hf, out] = [fresh(), fresh()];
    await writeQwen3Checkpoint(hf, small, llamaWeights, { config: llamaConfig('LlamaForCausalLM', 'llama') });
    const result = await convert(hf, out);
    expect(result.plan).toMatchObject({ architecture: 'LlamaForCausalLM', variant: { qkNorm: 'none' }, tiedEmbeddings: false });
    expect(await isSameModel(out, result.modelFile, llamaWeights, 'fp32')).toBe(true);
  });

  it('Llama 3 rope_scaling rescales the rotary frequencies in the graph', async () => {
    const [hf, out] = [fresh(), fresh()];
    const ropeScaling = { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 64 };
    await writeQwen3Checkpoint(hf, small, llamaWeights, { config: { ...llamaConfig('LlamaForCausalLM', 'llama'), rope_scaling: ropeScaling } });
    const result = await convert(hf, out);
    const scaled = resolveRope({ ...ropeScaling, rope_theta: small.ropeTheta }, { headDim: small.headDim, maxPositionEmbeddings: small.maxPositionEmbeddings, source: 'rope_scaling' }).rope
      .inverseFrequencies;
    expect(await isSameModel(out, result.modelFile, llamaWeights, 'fp32', { ...small, ropeInverseFrequencies: scaled })).toBe(true);
    expect(await isSameModel(out, result.modelFile, llamaWeights, 'fp32')).toBe(false);
  });

  it('Qwen2ForCausalLM: q/k/v biases', async () => {
    const [hf, out] = [fresh(), fresh()];
    const withBias = (l: DecoderWeights['layers'][number]['q']) => ({ ...l, bias: new Float32Array(l.outFeatures).map((_, i) => (i % 5) * 0.01 - 0.02) });
    const qwen2: DecoderWeights = { ...llamaWeights, layers: llamaWeights.layers.map((l) => ({ ...l, q: withBias(l.q), k: withBias(l.k), v: withBias(l.v) })) };
    await writeQwen3Checkpoint(hf, small, qwen2, { config: llamaConfig('Qwen2ForCausalLM', 'qwen2') });
    const result = await convert(hf, out);
    expect(result.plan.qkvBias).toBe(true);
    expect(await isSameModel(out, result.modelFile, qwen2, 'fp32')).toBe(true);
  });
});

describe('conveyor convert: bad checkpoints get a clear error', () => {
  const weights = initDecoderWeights(small);

  it('an unsupported architecture is named', async () => {
    const hf = fresh();
    await writeQwen3Checkpoint(hf, small, weights, { config: { ...hfConfig(small), architectures: ['GPT2LMHeadModel'], model_type: 'gpt2' } });
    await expect(convert(hf, fresh())).rejects.toThrow(/unsupported architecture GPT2LMHeadModel: conveyor convert reads LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM/);
  });

  it('the output directory must not be the checkpoint', async () => {
    const hf = fresh();
    await writeQwen3Checkpoint(hf, small, weights);
    await expect(convert(hf, join(hf, '.'))).rejects.toThrow(/must differ from the checkpoint directory/);
  });

  it('a missing tensor is named, and nothing is written', async () => {
    const [hf, out] = [fresh(), fresh()];
    await writeQwen3Checkpoint(hf, small, weights);
    const tensors = checkpointTensors(small, weights).filter((t) => t.name !== 'model.layers.1.mlp.up_proj.weight');
    await writeSafetensorsCheckpoint(hf, tensors);
    await expect(convert(hf, out)).rejects.toThrow('checkpoint is missing tensor model.layers.1.mlp.up_proj.weight (Qwen3ForCausalLM needs it)');
    expect(existsSync(out)).toBe(false);
  });

  it('a shape that disagrees with config.json is named', async () => {
    const hf = fresh();
    await writeQwen3Checkpoint(hf, small, weights, { config: { ...hfConfig(small), intermediate_size: 128 } });
    await expect(convert(hf, fresh())).rejects.toThrow(/tensor model.layers.0.mlp.gate_proj.weight has shape \[192, 64\], the config needs \[128, 64\]/);
  });

  it('a truncated shard is named', async () => {
    const hf = fresh();
    await writeQwen3Checkpoint(hf, small, weights, { shards: 2 });
    const shard = join(hf, 'model-00002-of-00002.safetensors');
    await truncate(shard, (await readFile(shard)).byteLength - 100);
    await expect(convert(hf, fresh())).rejects.toThrow(/model-00002-of-00002.safetensors: tensor .* past the end of the file .*truncated/);
  });

  it('unsupported config features are refused by name', async () => {
    const hf = fresh();
    await writeQwen3Checkpoint(hf, small, weights, { config: { ...hfConfig(small), rope_scaling: { rope_type: 'mrope', mrope_section: [4, 2, 2] } } });
    await expect(convert(hf, fresh())).rejects.toThrow(/rope_scaling type "mrope" is not supported/);
    await writeQwen3Checkpoint(hf, small, weights, { config: { ...hfConfig(small), quantization_config: { quant_method: 'gptq', bits: 4 } } });
    await expect(convert(hf, fresh())).rejects.toThrow(/'quantization_config' is not understood by conveyor convert for Qwen3ForCausalLM/);
  });
});
