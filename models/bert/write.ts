// Writes a BERT-style encoder directory as transformers.js / Optimum lay out a feature-extraction
// export: config.json, tokenizer.json, tokenizer_config.json and the three ONNX variants side by
// side (model.onnx, model_fp16.onnx, model_quantized.onnx).

import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PRECISIONS, VARIANT_FILE, writeModel, type ModelSize } from '../common/model-files.js';
import { BERT_CONFIGS, hfConfig } from './config.js';
import { buildBertEncoder } from './graph.js';
import { bertTokenizerConfig, bertTokenizerJson, loadBertVocabulary } from './tokenizer.js';

/** Returns file name → sha256 (hex) of everything written. */
export async function writeBertModel(dir: string, size: ModelSize): Promise<Record<string, string>> {
  await mkdir(dir, { recursive: true });
  const config = BERT_CONFIGS[size];
  const files: Record<string, string> = {};
  const writeJson = async (name: string, value: unknown): Promise<void> => {
    const text = `${JSON.stringify(value, null, 2)}\n`;
    await writeFile(join(dir, name), text);
    files[name] = createHash('sha256').update(text).digest('hex');
  };
  await writeJson('config.json', hfConfig(config));
  await writeJson('tokenizer.json', bertTokenizerJson(await loadBertVocabulary()));
  await writeJson('tokenizer_config.json', bertTokenizerConfig(config.maxPositionEmbeddings));
  // One variant at a time: the bench size's weights are ~90 MB per variant in memory.
  for (const precision of PRECISIONS) {
    const { model } = buildBertEncoder({ size, precision });
    files[VARIANT_FILE[precision]] = await writeModel(join(dir, VARIANT_FILE[precision]), model);
  }
  return files;
}
