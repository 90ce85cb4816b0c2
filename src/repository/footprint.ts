// The memory a model will take once loaded, estimated from disk before loading it: the weights
// file its `precision` chooses (and its external data), per served version, plus the LLM's KV
// cache budget. Good enough to decide what to evict; it is not a measurement.

import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { ModelConfig } from '../contracts/model-config.js';
import { presentVariantFile } from './variants.js';
import { versionDirectories } from './scan.js';
import { selectVersions } from './version-policy.js';

/** The llm backend's KV budget when the model sets no `kv_cache_bytes` (src/serving/llm-backend.ts's default). */
export const DEFAULT_KV_CACHE_BYTES = 256 * 2 ** 20;

const sizeOf = async (path: string): Promise<number> => (await stat(path).catch(() => undefined))?.size ?? 0;

/** Bytes of one weights file and the external-data files beside it (`<file>_data`, `<file>.data`). */
async function weightsBytes(dir: string, file: string): Promise<number> {
  const sizes = await Promise.all([file, `${file}_data`, `${file}.data`].map((f) => sizeOf(join(dir, f))));
  return sizes.reduce((a, b) => a + b, 0);
}

export async function estimateModelBytes(modelDir: string, config: ModelConfig): Promise<number> {
  const precision = config.parameters.precision?.string_value ?? 'fp32';
  const isLlm = config.backend === 'llm';
  const versions = selectVersions(config.version_policy, await versionDirectories(modelDir).catch(() => []));
  let bytes = 0;
  for (const version of versions) {
    // LLMs keep their graphs under onnx/ (a Hugging Face export); classic models beside config.pbtxt's version directory.
    const dir = join(modelDir, String(version), isLlm ? 'onnx' : '');
    const named = !isLlm && config.parameters.precision === undefined ? config.default_model_filename || undefined : undefined;
    const file = named ?? (await presentVariantFile(precision, async (f) => (await sizeOf(join(dir, f))) > 0));
    bytes += await weightsBytes(dir, file);
    if (isLlm) bytes += Number(config.parameters.kv_cache_bytes?.string_value ?? DEFAULT_KV_CACHE_BYTES) || DEFAULT_KV_CACHE_BYTES;
  }
  return bytes;
}
