// `conveyor convert <hf-dir> <out-dir>`: a Hugging Face checkpoint (config.json, safetensors,
// tokenizer files) → a directory `conveyor serve --model` serves (Optimum contract:
// onnx/model*.onnx beside the config and tokenizer files). The weights go through the same graph
// builder as the built-in models (models/qwen3/graph.ts), so a converted model and a built one
// with the same weights are the same graph.

import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { LinearWeights, Precision } from '../../kernels/linear.js';
import { VARIANT_FILE, writeModel } from '../common/model-files.js';
import { transposeMatrix } from '../qwen3/checkpoint.js';
import { buildDecoderGraph } from '../qwen3/graph.js';
import type { DecoderLayerWeights, DecoderWeights } from '../qwen3/weights.js';
import { ConvertError, planDecoder, tokenizerVocabSizeOf, type DecoderPlan } from './architecture.js';
import { CheckpointError, SafetensorsCheckpoint } from './safetensors.js';

/** Files copied as they are when the checkpoint has them (config.json and tokenizer.json are required). */
const COPIED_FILES = [
  'config.json',
  'generation_config.json',
  'tokenizer.json',
  'tokenizer_config.json',
  'special_tokens_map.json',
  'chat_template.jinja',
  'chat_template.json',
  'vocab.json',
  'merges.txt',
  'added_tokens.json',
] as const;

export const CONVERTED_DOC_STRING = 'Converted by conveyor convert from a Hugging Face checkpoint';

export interface ConvertOptions {
  readonly precision?: Precision;
  /** One progress line (stderr in the CLI). */
  readonly log?: (line: string) => void;
}

export interface ConvertResult {
  readonly plan: DecoderPlan;
  /** Path of the written ONNX model, relative to the output directory. */
  readonly modelFile: string;
  readonly sha256: string;
}

export async function convertCheckpoint(hfDir: string, outDir: string, options: ConvertOptions = {}): Promise<ConvertResult> {
  const precision = options.precision ?? 'fp32';
  const log = options.log ?? (() => {});
  for (const required of ['config.json', 'tokenizer.json']) {
    if (!existsSync(join(hfDir, required))) throw new ConvertError(`${hfDir}: no ${required} (a Hugging Face checkpoint directory has config.json, tokenizer.json and *.safetensors)`);
  }
  const rawConfig = JSON.parse(await readFile(join(hfDir, 'config.json'), 'utf8')) as Record<string, unknown>;
  const tokenizer = JSON.parse(await readFile(join(hfDir, 'tokenizer.json'), 'utf8')) as Parameters<typeof tokenizerVocabSizeOf>[0];
  const plan = planDecoder(rawConfig, tokenizerVocabSizeOf(tokenizer));
  const c = plan.config;
  log(`${plan.architecture}: ${c.numLayers} layers, hidden ${c.hiddenSize}, ${c.numHeads} heads (${c.numKvHeads} kv), vocab ${c.vocabSize}, → ${precision}`);
  for (const note of plan.notes) log(`note: ${note}`);
  const checkpoint = await SafetensorsCheckpoint.open(hfDir);
  const weights = await readWeights(checkpoint, plan, log);
  await mkdir(join(outDir, 'onnx'), { recursive: true });
  for (const file of COPIED_FILES) if (existsSync(join(hfDir, file))) await copyFile(join(hfDir, file), join(outDir, file));
  const modelFile = `onnx/${VARIANT_FILE[precision]}`;
  log(`writing ${modelFile}`);
  const sha256 = await writeModel(join(outDir, modelFile), buildDecoderGraph(c, weights, precision, CONVERTED_DOC_STRING));
  log(`done: ${outDir} (serve it with: conveyor serve --model ${outDir} --precision ${precision})`);
  return { plan, modelFile, sha256 };
}

/** The checkpoint's tensors as the graph builder takes them (linear weights transposed to [in, out]). */
async function readWeights(checkpoint: SafetensorsCheckpoint, plan: DecoderPlan, log: (line: string) => void): Promise<DecoderWeights> {
  const c = plan.config;
  const read = (name: string, shape: readonly number[]): Promise<Float32Array> => {
    if (!checkpoint.has(name)) throw new ConvertError(`checkpoint is missing tensor ${name} (${plan.architecture} needs it)`);
    return checkpoint.read(name, shape);
  };
  const linear = async (name: string, inFeatures: number, outFeatures: number, bias: boolean): Promise<LinearWeights> => ({
    inFeatures,
    outFeatures,
    weight: transposeMatrix(await read(`${name}.weight`, [outFeatures, inFeatures]), outFeatures, inFeatures),
    ...(bias ? { bias: await read(`${name}.bias`, [outFeatures]) } : {}),
  });
  const [h, qDim, kvDim] = [c.hiddenSize, c.numHeads * c.headDim, c.numKvHeads * c.headDim];
  log(`reading model.embed_tokens.weight [${c.vocabSize}, ${h}]`);
  const embedding = await read('model.embed_tokens.weight', [c.vocabSize, h]);
  const layers: DecoderLayerWeights[] = [];
  for (let i = 0; i < c.numLayers; i++) {
    const p = `model.layers.${i}`;
    log(`reading ${p} (${i + 1}/${c.numLayers})`);
    layers.push({
      inputNorm: await read(`${p}.input_layernorm.weight`, [h]),
      q: await linear(`${p}.self_attn.q_proj`, h, qDim, plan.qkvBias),
      k: await linear(`${p}.self_attn.k_proj`, h, kvDim, plan.qkvBias),
      v: await linear(`${p}.self_attn.v_proj`, h, kvDim, plan.qkvBias),
      o: await linear(`${p}.self_attn.o_proj`, qDim, h, plan.oBias),
      ...(plan.qkNorm ? { qNorm: await read(`${p}.self_attn.q_norm.weight`, [c.headDim]), kNorm: await read(`${p}.self_attn.k_norm.weight`, [c.headDim]) } : {}),
      postAttentionNorm: await read(`${p}.post_attention_layernorm.weight`, [h]),
      gate: await linear(`${p}.mlp.gate_proj`, h, c.intermediateSize, false),
      up: await linear(`${p}.mlp.up_proj`, h, c.intermediateSize, false),
      down: await linear(`${p}.mlp.down_proj`, c.intermediateSize, h, false),
    });
  }
  const finalNorm = await read('model.norm.weight', [h]);
  // A tied checkpoint's lm_head is the embedding (transformers ignores a saved copy); an untied one must have its own.
  const untied = !plan.tiedEmbeddings;
  if (untied) log(`reading lm_head.weight [${c.vocabSize}, ${h}]`);
  const lmHead = untied ? await read('lm_head.weight', [c.vocabSize, h]) : undefined;
  return { embedding, layers, finalNorm, ...(lmHead ? { lmHead } : {}) };
}

export { CheckpointError, ConvertError };
