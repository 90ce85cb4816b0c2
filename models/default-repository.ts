// The bundled default model repository (models/repository/). Its config.pbtxt files and the
// TypeScript pipeline steps' 1/model.ts are committed; the weights in each version directory are
// built here on first use, never downloaded, never committed, and the files a pipeline step reads
// from the model it serves (bert-tiny's tokenizer, resnet-tiny's labels) are copied beside it.

import { copyFile, mkdir } from 'node:fs/promises';
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

/** The pipelines (Triton ensembles) whose steps are the models above and TypeScript models. */
export const ENSEMBLES: readonly string[] = ['text-embedder', 'image-classifier'];

/** Files a TypeScript step reads from a built model's directory, copied into its own (`into`: '1' or '.'). */
const COPIED_FILES: readonly { name: string; from: { model: string; into: string }; files: readonly string[] }[] = [
  { name: 'bert-tokenize', from: { model: 'bert-tiny', into: '1' }, files: ['tokenizer.json', 'tokenizer_config.json', 'config.json'] },
  { name: 'image-top5', from: { model: 'resnet-tiny', into: '.' }, files: ['labels.txt'] },
];

export async function ensureDefaultRepository(root = DEFAULT_REPOSITORY, log?: (line: string) => void): Promise<Record<string, BuiltModel>> {
  const built: Record<string, BuiltModel> = {};
  for (const { name, family } of DEFAULT_MODELS) {
    built[name] = await ensureBuilt(family, 'tiny', { dir: join(root, name, '1'), ...(log ? { log } : {}) });
    // Triton resolves label_filename against the model directory, not the version directory.
    const labels = join(built[name].dir, 'labels.txt');
    if (existsSync(labels)) await copyFile(labels, join(root, name, 'labels.txt'));
  }
  for (const { name, from, files } of COPIED_FILES) {
    for (const file of files) await copyFile(join(built[from.model]!.dir, file), join(root, name, from.into, file));
  }
  // Triton requires an ensemble to have a version directory, empty.
  for (const name of ENSEMBLES) await mkdir(join(root, name, '1'), { recursive: true });
  return built;
}
