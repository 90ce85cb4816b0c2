// Which models Conveyor can build, where a built copy lives, and whether a copy on disk is
// current. A build is skipped when the directory's manifest names the same builder fingerprint
// (a hash of the builder sources under kernels/ and models/) and every file it lists is there
// with the same sha256; any change to a builder therefore rebuilds on next use.

import { createHash } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WeightPrecision } from '../kernels/linear.js';
import { DECODER_PRECISIONS, PRECISIONS, VARIANT_FILE, type ModelSize } from './common/model-files.js';
import { writeBertModel } from './bert/write.js';
import { writeQwen3Directory } from './qwen3/write.js';
import { writeResnetModel } from './resnet/resnet.js';

export type ModelFamily = 'qwen3' | 'bert' | 'resnet';

export interface BuiltModel {
  readonly family: ModelFamily;
  readonly size: ModelSize;
  /** The directory the builder wrote. */
  readonly dir: string;
  /** The variants the builder writes (the 4-bit ones for decoders only). */
  readonly precisions: readonly WeightPrecision[];
  /** Path of the ONNX file of one variant. */
  modelPath(precision: WeightPrecision): string;
}

interface Builder {
  /** Where the ONNX files sit inside the directory. */
  readonly onnxDir: string;
  readonly precisions: readonly WeightPrecision[];
  write(dir: string, size: ModelSize, log: (line: string) => void): Promise<Record<string, string>>;
}

const BUILDERS: Record<ModelFamily, Builder> = {
  qwen3: { onnxDir: 'onnx', precisions: DECODER_PRECISIONS, write: writeQwen3Directory },
  // Triton's layout: the ONNX files sit in the version directory itself (1/model.onnx).
  bert: { onnxDir: '.', precisions: PRECISIONS, write: writeBertModel },
  resnet: { onnxDir: '.', precisions: PRECISIONS, write: writeResnetModel },
};

/**
 * The package's models/ folder: the builder sources the fingerprint hashes, the committed
 * repository configs and the weights built beside them. Found from the nearest package.json, so
 * the compiled catalog (dist/models/catalog.js) uses the same folder as the sources do.
 */
export const MODELS_ROOT = join(packageRoot(dirname(fileURLToPath(import.meta.url))), 'models');

function packageRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}
const MANIFEST = 'conveyor-build.json';

interface Manifest {
  family: ModelFamily;
  size: ModelSize;
  builderFingerprint: string;
  files: Record<string, string>;
}

/** Builds the model into `dir` (default models/build/<family>-<size>/) unless an identical build is there. */
export async function ensureBuilt(family: ModelFamily, size: ModelSize, options: { dir?: string; log?: (line: string) => void } = {}): Promise<BuiltModel> {
  const builder = BUILDERS[family];
  const dir = resolve(options.dir ?? join(MODELS_ROOT, 'build', `${family}-${size}`));
  const log = options.log ?? ((line: string) => process.stderr.write(`[models] ${line}\n`));
  const built: BuiltModel = { family, size, dir, precisions: builder.precisions, modelPath: (p) => join(dir, builder.onnxDir, VARIANT_FILE[p]) };
  const fingerprint = await builderFingerprint();
  if (await isCurrent(dir, family, size, fingerprint)) return built;
  const started = performance.now();
  log(`building ${family}-${size} into ${dir}`);
  const files = await builder.write(dir, size, log);
  const manifest: Manifest = { family, size, builderFingerprint: fingerprint, files };
  await writeFile(join(dir, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
  log(`built ${family}-${size} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return built;
}

async function isCurrent(dir: string, family: ModelFamily, size: ModelSize, fingerprint: string): Promise<boolean> {
  let manifest: Manifest;
  try {
    manifest = JSON.parse(await readFile(join(dir, MANIFEST), 'utf8')) as Manifest;
  } catch {
    return false;
  }
  if (manifest.family !== family || manifest.size !== size || manifest.builderFingerprint !== fingerprint) return false;
  for (const [name, sha] of Object.entries(manifest.files)) {
    if ((await sha256File(join(dir, name)).catch(() => '')) !== sha) return false;
  }
  return true;
}

export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Hash of every builder source file (kernels/ and models/ but its repository/, .ts only), in a stable order. */
async function builderFingerprint(): Promise<string> {
  const hash = createHash('sha256');
  for (const root of [join(MODELS_ROOT, '..', 'kernels'), MODELS_ROOT]) {
    const entries = await readdir(root, { recursive: true });
    // build/ holds outputs and repository/ the served configs and TypeScript models: neither builds weights.
    for (const entry of entries.filter((e) => e.endsWith('.ts') && !e.startsWith('build') && !e.startsWith('repository')).sort()) {
      hash.update(entry).update(await readFile(join(root, entry)));
    }
  }
  return hash.digest('hex');
}
