// Triton's `file:<version>/<path>` load parameters (a model loaded from files sent with the load
// request, with its config in the `config` parameter): they become a temporary model directory,
// every path checked before anything is written. The model manager loads from it and removes it
// when the versions it holds are unloaded (keptOverrideDir decides which directory a load leaves).

import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { LoadOverride } from '../contracts/inference-service.js';
import { invalidArg } from '../errors.js';
import { lexicalProblem } from '../repository/confine.js';

/** Where `file:` overrides are written: `<tmpdir>/conveyor-load-<model>-XXXXXX`. */
export const OVERRIDE_DIR_PREFIX = 'conveyor-load-';

/**
 * Triton's `file:<version>/<path>` load parameters become a temporary model directory. Every
 * path is checked before anything is written; a failed write removes the directory.
 */
export async function materializeOverride(name: string, override: LoadOverride): Promise<string> {
  if (!override.config) throw invalidArg(`failed to load '${name}': file: parameters require a 'config' parameter`);
  const files = Object.entries(override.files ?? {});
  for (const [path] of files) {
    const problem = lexicalProblem(path, 'file: load parameter');
    if (problem !== undefined) throw invalidArg(`failed to load '${name}': ${problem}`);
  }
  const dir = await mkdtemp(join(tmpdir(), `${OVERRIDE_DIR_PREFIX}${name}-`));
  try {
    for (const [path, bytes] of files) {
      const target = join(dir, path);
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, bytes);
    }
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw invalidArg(`failed to load '${name}': cannot write the file: parameters (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  return dir;
}

/**
 * After a load that wrote the override directory `attempted` (or none), the one the versions now
 * serving read from (a restarted instance reads its model file again); the other is removed, on
 * success and on failure. `replaced`: the load swapped its versions in; `servesNew`: one is READY.
 */
export async function keptOverrideDir(current: string | undefined, attempted: string | undefined, replaced: boolean, servesNew: boolean): Promise<string | undefined> {
  const inUse = replaced ? (servesNew ? attempted : undefined) : current;
  for (const dir of new Set([current, attempted])) {
    if (dir !== undefined && dir !== inUse) await rm(dir, { recursive: true, force: true });
  }
  return inUse;
}
