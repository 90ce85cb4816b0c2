// The server's memory accounting: what a model version will hold once loaded (its weights file,
// once per instance worker, and an LLM's KV block pool), estimated from the config and the files
// before anything starts, so a load or precision swap past --memory-budget-bytes is refused while
// the old variant still serves. The numbers are the server's own books, not the process RSS:
// onnxruntime's arena and the JS heap come on top. The same estimate decides what --load-on-demand
// evicts under --max-loaded-model-bytes (estimateModelBytes: every version the policy serves).

import { readdir, stat } from 'node:fs/promises';
import { pagedFileOfSegments } from '../contracts/paged-segments.js';
import { join } from 'node:path';
import type { ModelConfig } from '../contracts/model-config.js';
import { existingConfinedFile } from '../repository/confine.js';
import { versionDirectories } from '../repository/scan.js';
import { selectVersions } from '../repository/version-policy.js';
import { kvCacheBytesOf, llmModelFile } from './llm-backend.js';
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
  const sizeOf = async (file: string): Promise<number> => {
    try {
      return (await stat((await existingConfinedFile(root, file, 'model file')).path)).size;
    } catch {
      return 0;
    }
  };
  // A graph over 2 GB keeps its weights in external data beside it (Optimum's `<file>_data`, or `<file>.data`).
  const withData = async (file: string): Promise<number> => (await Promise.all([file, `${file}_data`, `${file}.data`].map(sizeOf))).reduce((a, b) => a + b, 0);
  // The segmented paged decoder is a directory of graphs (and their data files): the sum of them.
  const weightsOf = async (file: string): Promise<number> => {
    if (pagedFileOfSegments(file) === null) return withData(file);
    const names = await readdir((await existingConfinedFile(root, file, 'model file')).path).catch(() => []);
    return (await Promise.all(names.map((name) => sizeOf(`${file}/${name}`)))).reduce((a, b) => a + b, 0);
  };
  if (config.backend === 'llm') return { weights: await weightsOf((await llmModelFile(config, root)).file), kvCache: kvCacheBytesOf(config) };
  if (config.backend === 'onnxruntime') return { weights: (await withData(await modelFileFor(config, root))) * instanceCount(config), kvCache: 0 };
  return { weights: 0, kvCache: 0 };
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
