// `--copier`: the speculation run's model that copies its context (make_copier.py writes its
// weights as an induction-head circuit and checks transformers' greedy output against its rule),
// and with `--copier-draft` its two-layer draft; each made once with the Hugging Face reference
// venv and converted with the paged files, cached under models/build/copier/<kind>/ with a stamp
// of the script that made them.

import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { convertCheckpoint } from '../../../models/convert/convert.js';
import { MODEL_METADATA_FILES } from '../../../src/hub/index.js';
import { hfPython } from '../../../test/support/hf-python.js';

const run = promisify(execFile);
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const SCRIPT = join(ROOT, 'bench', 'scenarios', 'engine', 'make_copier.py');
const CACHE = join(ROOT, 'models', 'build', 'copier');
const STAMP_FILE = 'bench-stamp';
/** The segment builder: a copier converted before a change to what the segments hold (e.g. their metadata) is converted again. */
const SEGMENT_BUILDER = join(ROOT, 'models', 'qwen3', 'paged-segments.ts');

export type CopierKind = 'target' | 'draft';

/** The converted copier's directory (a `conveyor convert --paged` output), made where missing or made by another version of the script. */
export async function ensureCopier(kind: CopierKind, log: (line: string) => void): Promise<string> {
  const stamp = createHash('sha256')
    .update(await readFile(SCRIPT))
    .update(await readFile(SEGMENT_BUILDER))
    .digest('hex')
    .slice(0, 16);
  const dir = join(CACHE, kind);
  const checkpoint = join(dir, 'checkpoint');
  const converted = join(dir, 'converted');
  const current = await readFile(join(converted, STAMP_FILE), 'utf8').catch(() => '');
  if (current === stamp && existsSync(join(converted, 'onnx'))) return converted;
  const python = await hfPython();
  if ('skip' in python) throw new Error(`--copier: ${python.skip}`);
  log(`making the copier's ${kind} with transformers ${python.transformersVersion}…`);
  await rm(dir, { recursive: true, force: true });
  const { stdout } = await run(python.python, [SCRIPT, checkpoint, ...(kind === 'draft' ? ['--draft'] : [])], { timeout: 600_000, maxBuffer: 16 << 20 });
  log(stdout.trim());
  log(`converting the copier's ${kind} (fp32, paged)…`);
  await convertCheckpoint(checkpoint, converted, { metadataFiles: MODEL_METADATA_FILES, paged: true });
  await writeFile(join(converted, STAMP_FILE), stamp);
  return converted;
}
