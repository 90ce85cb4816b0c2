// Reads a Triton model repository's layout: one directory per model, numeric version
// directories inside. Non-numeric names and names starting with 0 are not versions (Triton).

import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** Directory names under `dir`, following symbolic links (repositories are often assembled from links). */
async function subdirectories(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const names: string[] = [];
  for (const entry of entries) {
    const isDir = entry.isDirectory() || (entry.isSymbolicLink() && (await stat(join(dir, entry.name)).catch(() => undefined))?.isDirectory());
    if (isDir) names.push(entry.name);
  }
  return names;
}

export async function listModelNames(root: string): Promise<string[]> {
  return (await subdirectories(root)).filter((name) => !name.startsWith('.')).sort();
}

/** Numeric version directories of a model directory, ascending. */
export async function versionDirectories(modelDir: string): Promise<number[]> {
  return (await subdirectories(modelDir))
    .filter((name) => /^[1-9][0-9]*$/.test(name))
    .map(Number)
    .sort((a, b) => a - b);
}

/**
 * A cheap fingerprint of what poll mode watches: the config, label files and every file's
 * size and mtime under the version directories. Two equal fingerprints mean "nothing changed".
 */
export async function fingerprintModel(path: string): Promise<string> {
  const parts: string[] = [];
  const walk = async (dir: string, depth: number): Promise<void> => {
    for (const entry of (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = join(dir, entry.name);
      if (entry.isDirectory() || (entry.isSymbolicLink() && (await stat(full).catch(() => undefined))?.isDirectory())) {
        if (depth < 4) await walk(full, depth + 1);
      } else {
        const s = await stat(full);
        parts.push(`${full}:${s.size}:${s.mtimeMs}`);
      }
    }
  };
  await walk(path, 0);
  return parts.join('|');
}
