// The bundled default model repository (models/repository/). Its config.pbtxt files are
// committed; the weights in each version directory are built here on first use, never
// downloaded, never committed.

import { copyFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { MODELS_ROOT, ensureBuilt, type BuiltModel, type ModelFamily } from './catalog.js';

export const DEFAULT_REPOSITORY = join(MODELS_ROOT, 'repository');

/** Repository entries and the tiny builds that fill their version 1 directory. */
export const DEFAULT_MODELS: readonly { name: string; family: ModelFamily }[] = [
  { name: 'qwen3-tiny', family: 'qwen3' },
  { name: 'bert-tiny', family: 'bert' },
  { name: 'resnet-tiny', family: 'resnet' },
];

export async function ensureDefaultRepository(root = DEFAULT_REPOSITORY, log?: (line: string) => void): Promise<Record<string, BuiltModel>> {
  const built: Record<string, BuiltModel> = {};
  for (const { name, family } of DEFAULT_MODELS) {
    built[name] = await ensureBuilt(family, 'tiny', { dir: join(root, name, '1'), ...(log ? { log } : {}) });
    // Triton resolves label_filename against the model directory, not the version directory.
    const labels = join(built[name].dir, 'labels.txt');
    if (existsSync(labels)) await copyFile(labels, join(root, name, 'labels.txt'));
  }
  return built;
}
