// The repository `bench -- precision` serves: each family (decoder, encoder, CNN) once per
// precision variant, `<family>-<precision>`, plus `<family>-swap` that the swap measurement
// reloads from variant to variant. Version directories link the built model; the configs differ
// only in the `precision` parameter (classic models are completed from the ONNX model, as Triton does).

import { readFile, mkdir, mkdtemp, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBuilt, type BuiltModel, type ModelFamily } from '../../../models/catalog.js';
import { DEFAULT_REPOSITORY } from '../../../models/default-repository.js';
import type { ModelSize } from '../../../models/common/model-files.js';
import type { WeightPrecision } from '../../../kernels/linear.js';
import type { AttentionBackend } from '../../../src/repository/variants.js';

export const FAMILIES: readonly ModelFamily[] = ['qwen3', 'bert', 'resnet'];
export const SWAP = 'swap';

export interface FamilyModels {
  readonly family: ModelFamily;
  readonly built: BuiltModel;
  /** The variants asked for that this family has, served and measured in this order. */
  readonly precisions: readonly WeightPrecision[];
  /** Variants asked for that this family has no build of. */
  readonly skipped: readonly WeightPrecision[];
}

const served = (family: ModelFamily, variant: string): string => `${family}-${variant}`;
export { served as servedName };

/** What a run sets on the served models beyond the precision; each left out keeps the server's default. */
export interface ServedSettings {
  /** intra_op_thread_count of every model. */
  readonly threads?: number | undefined;
  /** The decoder's attention_backend. */
  readonly attentionBackend?: AttentionBackend | undefined;
}

/** Every served model's intra-op threads where the run sets them (`intra_op_thread_count`); the server's default otherwise. */
const threadsParameter = (threads: number | undefined): string => (threads ? `parameters: { key: "intra_op_thread_count" value: { string_value: "${threads}" } }\n` : '');

/** The decoder's attention_backend where the run sets it (past_key_values, paged, paged_onnx); the server's default otherwise. */
const backendParameter = (backend: AttentionBackend | undefined): string => (backend ? `parameters: { key: "attention_backend" value: { string_value: "${backend}" } }\n` : '');

/** The LLM's committed config (engine settings), renamed, at `precision`, with a small KV pool. */
async function decoderConfig(name: string, precision: string, kvCacheBytes: number, settings: ServedSettings): Promise<string> {
  const text = await readFile(join(DEFAULT_REPOSITORY, 'qwen3-tiny', 'config.pbtxt'), 'utf8');
  return (
    text
      .replace('name: "qwen3-tiny"', `name: "${name}"`)
      .replace('string_value: "fp32"', `string_value: "${precision}"`)
      .replace(/key: "kv_cache_bytes" value: \{ string_value: "\d+" \}/, `key: "kv_cache_bytes" value: { string_value: "${kvCacheBytes}" }`) +
    threadsParameter(settings.threads) +
    backendParameter(settings.attentionBackend)
  );
}

const classicConfig = (name: string, precision: string, threads: number | undefined): string =>
  [
    `name: "${name}"`,
    'backend: "onnxruntime"',
    'max_batch_size: 32',
    'dynamic_batching { max_queue_delay_microseconds: 1000 }',
    `parameters: { key: "precision" value: { string_value: "${precision}" } }`,
    '',
  ].join('\n') + threadsParameter(threads);

export async function buildRepository(
  size: ModelSize,
  wanted: readonly ModelFamily[],
  precisions: readonly WeightPrecision[],
  kvCacheBytes: number,
  settings: ServedSettings,
  log: (line: string) => void,
): Promise<{ root: string; families: FamilyModels[] }> {
  const root = await mkdtemp(join(tmpdir(), 'conveyor-bench-precision-'));
  const families: FamilyModels[] = [];
  for (const family of wanted) {
    const built = await ensureBuilt(family, size, { log });
    // The variants asked for that the builder writes (the 4-bit ones exist for decoders only).
    const variants = precisions.filter((p) => built.precisions.includes(p));
    for (const variant of [...variants, SWAP]) {
      const name = served(family, variant);
      const precision = variant === SWAP ? 'fp32' : variant;
      await mkdir(join(root, name), { recursive: true });
      await symlink(built.dir, join(root, name, '1'), 'dir');
      await writeFile(join(root, name, 'config.pbtxt'), family === 'qwen3' ? await decoderConfig(name, precision, kvCacheBytes, settings) : classicConfig(name, precision, settings.threads));
    }
    families.push({ family, built, precisions: variants, skipped: precisions.filter((p) => !variants.includes(p)) });
  }
  return { root, families };
}
