// Draft models for qwen3-tiny, built in test setup (never committed): the same deterministic
// builder with fewer layers than the target's four. Weights are seeded per tensor name, so the
// draft's embedding, first layers and final norm are the target's own — a cheap, smaller decoder
// over the same tokenizer, as a real draft is. Only the fp32 paged graph and its segments are written (a
// draft runs on the paged runners).

import { copyFile, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PAGED_SEGMENT_FILE, PAGED_VARIANT_FILE, writeModel } from '../../models/common/model-files.js';
import { DECODER_CONFIGS, hfConfig, hfGenerationConfig } from '../../models/qwen3/config.js';
import { buildPagedDecoderGraph } from '../../models/qwen3/paged-graph.js';
import { buildPagedSegmentGraph, pagedSegmentCount } from '../../models/qwen3/paged-segments.js';
import { initDecoderWeights } from '../../models/qwen3/weights.js';
import { QWEN3_TOKENIZER_FILES } from '../../models/qwen3/write.js';

/** Writes the target's first `numLayers` layers as a draft into a fresh temporary directory and returns it (a model version directory: config, tokenizer, onnx/). */
export async function buildTruncatedDraft(numLayers: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'conveyor-draft-'));
  const config = { ...DECODER_CONFIGS.tiny, numLayers };
  await writeFile(join(dir, 'config.json'), JSON.stringify(hfConfig(config)));
  await writeFile(join(dir, 'generation_config.json'), JSON.stringify(hfGenerationConfig()));
  for (const [name, source] of Object.entries(QWEN3_TOKENIZER_FILES)) await copyFile(source, join(dir, name));
  const weights = initDecoderWeights(config);
  const paged = PAGED_VARIANT_FILE.fp32;
  await writeModel(join(dir, 'onnx', paged), buildPagedDecoderGraph(config, weights, 'fp32'));
  for (let segment = 0; segment < pagedSegmentCount(config); segment++) {
    await writeModel(join(dir, 'onnx', PAGED_SEGMENT_FILE(paged, segment)), buildPagedSegmentGraph(config, weights, 'fp32', segment));
  }
  return dir;
}
