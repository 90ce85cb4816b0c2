// The server's memory accounting: what a model version will hold once loaded (its weights file,
// once per instance worker, and an LLM's KV block pool; a draft model's weights and pool too), estimated from the config and the files
// before anything starts, so a load or precision swap past --memory-budget-bytes is refused while
// the old variant still serves. The numbers are the server's own books, not the process RSS:
// onnxruntime's arena and the JS heap come on top. The same estimate decides what --load-on-demand
// evicts under --max-loaded-model-bytes (estimateModelBytes: every version the policy serves).

import { readFile, readdir, stat } from 'node:fs/promises';
import { pagedFileOfSegments } from '../contracts/paged-segments.js';
import { join } from 'node:path';
import type { ModelConfig } from '../contracts/model-config.js';
import { type ConfinementRoot, existingConfinedFile } from '../repository/confine.js';
import { versionDirectories } from '../repository/scan.js';
import { selectVersions } from '../repository/version-policy.js';
import { kvCacheBytesOf, llmModelFile, withPrecision } from './llm-parameters.js';
import { draftDirectory, parseSpeculativeConfig } from './speculative-config.js';
import { instanceCount, modelFileFor } from './onnx-backend.js';

/** One version's share of the budget. */
export interface VersionBytes {
  readonly weights: number;
  readonly kvCache: number;
}

export const totalBytes = (b: VersionBytes): number => b.weights + b.kvCache;

/**
 * What loading `config` into `versionDir` will hold. A backend it does not know counts nothing;
 * a missing file counts nothing either (the backend's own load then fails, naming it).
 */
export async function estimateVersionBytes(config: ModelConfig, versionDir: string, display: string): Promise<VersionBytes> {
  const root = { dir: versionDir, display };
  if (config.backend === 'llm') {
    const target = { weights: await weightsIn(root, (await llmModelFile(config, root)).file), kvCache: kvCacheBytesOf(config) };
    const draft = await draftModelBytes(config, versionDir, target.kvCache);
    return { weights: target.weights + draft.weights, kvCache: target.kvCache + draft.kvCache };
  }
  if (config.backend === 'onnxruntime') return { weights: (await withDataIn(root, await modelFileFor(config, root))) * instanceCount(config), kvCache: 0 };
  return { weights: 0, kvCache: 0 };
}

/**
 * A draft model's share (speculative_config method draft_model): its decoder's weights, and its KV
 * pool, which holds as many positions as the target's (openDraftRunner), so the target's KV bytes
 * scaled by the two models' KV elements per position (config.json). Nothing where there is none,
 * or where the draft cannot be found (the load then fails, naming it).
 */
async function draftModelBytes(config: ModelConfig, versionDir: string, targetKvBytes: number): Promise<VersionBytes> {
  let parsed: ReturnType<typeof parseSpeculativeConfig>;
  try {
    parsed = parseSpeculativeConfig(config.parameters['speculative_config']?.string_value);
  } catch {
    return { weights: 0, kvCache: 0 };
  }
  if (parsed?.method !== 'draft_model') return { weights: 0, kvCache: 0 };
  const draftDir = await draftDirectory(versionDir, parsed.model);
  if (draftDir === null) return { weights: 0, kvCache: 0 };
  const root = { dir: draftDir, display: `speculative_config model '${parsed.model}'` };
  const file = await llmModelFile(withPrecision(config, parsed.quantization), root).catch(() => null);
  if (!file) return { weights: 0, kvCache: 0 };
  const [draft, target] = await Promise.all([kvElementsPerPosition(draftDir), kvElementsPerPosition(versionDir)]);
  return { weights: await weightsIn(root, file.file), kvCache: draft && target ? Math.ceil((targetKvBytes * draft) / target) : 0 };
}

/** K and V elements one position takes across a decoder's layers, from its config.json; null where it does not say. */
async function kvElementsPerPosition(dir: string): Promise<number | null> {
  const c = (await readFile(join(dir, 'config.json'), 'utf8').then(JSON.parse, () => null)) as Record<string, unknown> | null;
  const layers = c?.['num_hidden_layers'];
  const heads = c?.['num_attention_heads'];
  const kvHeads = c?.['num_key_value_heads'] ?? heads;
  const headDim = c?.['head_dim'] ?? (typeof c?.['hidden_size'] === 'number' && typeof heads === 'number' ? c['hidden_size'] / heads : undefined);
  return typeof layers === 'number' && typeof kvHeads === 'number' && typeof headDim === 'number' ? 2 * layers * kvHeads * headDim : null;
}

const sizeIn = async (root: ConfinementRoot, file: string): Promise<number> => {
  try {
    return (await stat((await existingConfinedFile(root, file, 'model file')).path)).size;
  } catch {
    return 0;
  }
};

/** A graph's bytes: over 2 GB it keeps its weights in external data beside it (Optimum's `<file>_data`, or `<file>.data`). */
const withDataIn = async (root: ConfinementRoot, file: string): Promise<number> =>
  (await Promise.all([file, `${file}_data`, `${file}.data`].map((name) => sizeIn(root, name)))).reduce((a, b) => a + b, 0);

/** A decoder's weights: the segmented paged decoder is a directory of graphs (and their data files), the sum of them. */
async function weightsIn(root: ConfinementRoot, file: string): Promise<number> {
  if (pagedFileOfSegments(file) === null) return withDataIn(root, file);
  const names = await readdir((await existingConfinedFile(root, file, 'model file')).path).catch(() => []);
  return (await Promise.all(names.map((name) => sizeIn(root, `${file}/${name}`)))).reduce((a, b) => a + b, 0);
}

/** Each of `versions`' estimate (see estimateVersionBytes), by version number. */
export async function estimateVersionsBytes(config: ModelConfig, modelDir: string, name: string, versions: readonly number[]): Promise<Map<number, VersionBytes>> {
  const estimates = new Map<number, VersionBytes>();
  for (const version of versions) estimates.set(version, await estimateVersionBytes(config, join(modelDir, String(version)), `${name}/${version}`));
  return estimates;
}

export function sumBytes(list: Iterable<VersionBytes>): VersionBytes {
  let weights = 0;
  let kvCache = 0;
  for (const b of list) {
    weights += b.weights;
    kvCache += b.kvCache;
  }
  return { weights, kvCache };
}

/** What loading `config` from `modelDir` holds across every version its version policy serves. */
export async function estimateModelBytes(modelDir: string, config: ModelConfig, name: string): Promise<number> {
  const versions = selectVersions(config.version_policy, await versionDirectories(modelDir).catch(() => []));
  return totalBytes(sumBytes((await estimateVersionsBytes(config, modelDir, name, versions)).values()));
}

/**
 * Why a load needing `needed` bytes beside the `loaded` ones would not fit `budget` (0 = no
 * budget), or null when it fits. During a swap `loaded` still holds the old variant: both live
 * until the new one is READY.
 */
export function budgetRefusal(name: string, needed: VersionBytes, loaded: number, budget: number): string | null {
  if (budget <= 0 || loaded + totalBytes(needed) <= budget) return null;
  const kv = needed.kvCache > 0 ? ` + ${needed.kvCache} KV cache` : '';
  return `failed to load '${name}': not enough memory under --memory-budget-bytes ${budget}: it needs ${totalBytes(needed)} bytes (${needed.weights} weights${kv}) beside the ${loaded} bytes loaded (the variant serving stays loaded until the new one is ready); nothing was unloaded`;
}
