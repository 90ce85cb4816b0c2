// `conveyor convert <hf-dir> <out-dir>`: a Hugging Face checkpoint (config.json, safetensors,
// tokenizer files) → a directory `conveyor serve --model` serves (Optimum contract:
// onnx/model*.onnx beside the config and tokenizer files; with `paged`, also the paged-attention
// graph onnx/model_paged*.onnx on the same weights). The weights go through the same graph
// builder as the built-in models (models/qwen3/graph.ts), so a converted model and a built one
// with the same weights are the same graph.

import { closeSync, existsSync, openSync, writeSync } from 'node:fs';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type { WeightPrecision } from '../../kernels/linear.js';
import { PAGED_SEGMENT_FILE, PAGED_VARIANT_FILE, VARIANT_FILE, writeModel } from '../common/model-files.js';
import type { EncodedMessage } from '../../kernels/onnx/protobuf-writer.js';
import type { DecoderConfig } from '../qwen3/config.js';
import { buildDecoderGraph, type DecoderGraphOptions } from '../qwen3/graph.js';
import { buildPagedDecoderGraph } from '../qwen3/paged-graph.js';
import { buildPagedSegmentGraph, pagedSegmentCount } from '../qwen3/paged-segments.js';
import type { DecoderWeights } from '../qwen3/weights.js';
import { ConvertError, type DecoderPlan, planDecoder, tokenizerVocabSizeOf } from './architecture.js';
import { checkTensors, lazyDecoderWeights, requiredTensors } from './decoder-tensors.js';
import { CheckpointError, SafetensorsCheckpoint } from './safetensors.js';

export const CONVERTED_DOC_STRING = 'Converted by conveyor convert from a Hugging Face checkpoint';
/** Names the graphs this converter writes: a Hub checkpoint converted by another version is converted again (src/hub/servable.ts keys its cache by it). Bump it when the graphs change. */
export const CONVERTER_VERSION = '1';

export interface ConvertOptions {
  /**
   * The checkpoint's files the served model reads besides its weights (config, generation config,
   * tokenizer, chat template), copied as they are where present. The caller names them
   * (src/hub's MODEL_METADATA_FILES, the list a Hub download fetches): models/ may not import src/.
   */
  readonly metadataFiles: readonly string[];
  readonly precision?: WeightPrecision;
  /** Also write the paged-attention graph (onnx/model_paged*.onnx) and its segments (model_paged*.segments/) beside the Optimum model. */
  readonly paged?: boolean;
  /** One progress line (stderr in the CLI). */
  readonly log?: (line: string) => void;
}

export interface ConvertResult {
  readonly plan: DecoderPlan;
  /** Path of the written ONNX model, relative to the output directory. */
  readonly modelFile: string;
  readonly sha256: string;
  /** The paged graph's file and sha256, and its segments' (the native kernel's decoder), when `paged` asked for them. */
  readonly paged?: { readonly modelFile: string; readonly sha256: string; readonly segments: { readonly modelFile: string; readonly sha256: string }[] };
}

/** A decoder graph builder (the Optimum one or the paged one): both take the same weights. */
export type DecoderGraphBuilder = (c: DecoderConfig, weights: DecoderWeights, precision: WeightPrecision, options: DecoderGraphOptions) => EncodedMessage;

export async function convertCheckpoint(hfDir: string, outDir: string, options: ConvertOptions): Promise<ConvertResult> {
  const precision = options.precision ?? 'fp32';
  const log = options.log ?? (() => {});
  if (resolve(hfDir) === resolve(outDir)) throw new ConvertError(`${outDir}: the output directory must differ from the checkpoint directory`);
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
  // Every tensor is checked from the headers first: a bad checkpoint writes nothing.
  checkTensors(checkpoint, plan);
  const total = requiredTensors(plan).length;
  await mkdir(join(outDir, 'onnx'), { recursive: true });
  for (const file of options.metadataFiles) if (existsSync(join(hfDir, file))) await copyFile(join(hfDir, file), join(outDir, file));
  // The served context is what config.json says: capped where the converted RoPE is exact only up to a shorter length.
  if (plan.maxContext !== undefined) await writeFile(join(outDir, 'config.json'), `${JSON.stringify({ ...rawConfig, max_position_embeddings: plan.maxContext }, null, 2)}\n`);
  // Each graph streams the tensors again (one at a time), so memory stays near one tensor.
  const write = async (modelFile: string, build: DecoderGraphBuilder): Promise<string> => {
    log(`writing ${modelFile} (weights in ${modelFile}_data)`);
    let done = 0;
    const weights = lazyDecoderWeights(checkpoint, plan, (name) => log(`[${++done}/${total}] ${name}`));
    return writeDecoderModel(join(outDir, modelFile), c, weights, precision, build);
  };
  const modelFile = `onnx/${VARIANT_FILE[precision]}`;
  const sha256 = await write(modelFile, buildDecoderGraph);
  const pagedFile = `onnx/${PAGED_VARIANT_FILE[precision]}`;
  let paged: ConvertResult['paged'];
  if (options.paged) {
    paged = { modelFile: pagedFile, sha256: await write(pagedFile, buildPagedDecoderGraph), segments: [] };
    for (let segment = 0; segment < pagedSegmentCount(c); segment++) {
      const file = `onnx/${PAGED_SEGMENT_FILE(PAGED_VARIANT_FILE[precision], segment)}`;
      await mkdir(dirname(join(outDir, file)), { recursive: true });
      paged.segments.push({ modelFile: file, sha256: await write(file, (config, weights, p, o) => buildPagedSegmentGraph(config, weights, p, segment, o)) });
    }
  }
  log(`done: ${outDir} (serve it with: conveyor serve --model ${outDir} --precision ${precision}${paged ? ' --attention-backend paged' : ''})`);
  return { plan, modelFile, sha256, ...(paged ? { paged } : {}) };
}

/** Weights of at least this many bytes go to the external data file; norms and constants stay inline. */
const EXTERNAL_MIN_BYTES = 4096;
/** Offsets in the data file are kept to this alignment, so each tensor can be memory-mapped in place. */
const EXTERNAL_ALIGNMENT = 4096;

/**
 * Writes the decoder as `path` plus `path_data` (ONNX external data, Optimum's layout for large
 * models): each weight goes to the data file as the graph builder reaches it, so the model never
 * exists in memory whole, and neither file meets protobuf's 2 GB limit. Returns the model file's sha256.
 */
export async function writeDecoderModel(path: string, c: DecoderConfig, weights: DecoderWeights, precision: WeightPrecision, build: DecoderGraphBuilder = buildDecoderGraph): Promise<string> {
  const location = `${basename(path)}_data`;
  const fd = openSync(join(dirname(path), location), 'w');
  let end = 0;
  try {
    const sink = {
      location,
      minBytes: EXTERNAL_MIN_BYTES,
      append(bytes: Uint8Array): number {
        const offset = Math.ceil(end / EXTERNAL_ALIGNMENT) * EXTERNAL_ALIGNMENT;
        for (let written = 0; written < bytes.byteLength; ) written += writeSync(fd, bytes, written, bytes.byteLength - written, offset + written);
        end = offset + bytes.byteLength;
        return offset;
      },
    };
    const graph = build(c, weights, precision, { docString: CONVERTED_DOC_STRING, externalData: sink });
    return await writeModel(path, graph);
  } finally {
    closeSync(fd);
  }
}

export { CheckpointError, ConvertError };
