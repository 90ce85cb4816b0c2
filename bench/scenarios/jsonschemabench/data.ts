// JSONSchemaBench's MaskBench data (github.com/guidance-ai/jsonschemabench, maskbench/data/): one
// JSON file per schema, named <split>---<id>.json, holding the schema and its tests (instances
// labelled valid or not). Read from a local directory (--data), or from a git-ignored cache that a
// shallow clone fills on first use. Never committed.

import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const REPOSITORY = 'https://github.com/guidance-ai/jsonschemabench';
/** Where the bench clones the repository when --data is not given (git-ignored). */
export const CACHE_DIR = join(import.meta.dirname, '..', '..', '.cache', 'jsonschemabench');

/** JSONSchemaBench's ten splits (the paper's; Glaiveai2K is its function-call split). */
export const PAPER_SPLITS = ['Glaiveai2K', 'Github_trivial', 'Github_easy', 'Github_medium', 'Github_hard', 'Github_ultra', 'Kubernetes', 'Snowplow', 'WashingtonPost', 'JsonSchemaStore'] as const;

export interface MaskBenchTest {
  readonly description?: string;
  readonly valid: boolean;
  readonly data: unknown;
}

export interface MaskBenchSchema {
  readonly split: string;
  readonly id: string;
  readonly schema: unknown;
  readonly tests: readonly MaskBenchTest[];
}

/** The data directory: --data as given, else the cache (cloned shallowly when absent). */
export function dataDir(flag: string | undefined, log: (line: string) => void): string {
  if (flag !== undefined) {
    if (!existsSync(flag)) throw new Error(`--data ${flag}: no such directory`);
    return flag;
  }
  const dir = join(CACHE_DIR, 'maskbench', 'data');
  if (existsSync(dir)) return dir;
  log(`cloning ${REPOSITORY} into ${CACHE_DIR} (git-ignored)…`);
  execFileSync('git', ['clone', '--depth', '1', REPOSITORY, CACHE_DIR], { stdio: ['ignore', 'ignore', 'inherit'] });
  return dir;
}

/** The file names of a split, sorted, so a cap takes the same schemas every run. */
export function splitFiles(dir: string, split: string): string[] {
  return readdirSync(dir)
    .filter((name) => name.startsWith(`${split}---`) && name.endsWith('.json'))
    .sort();
}

/** Up to `cap` schemas of the split (0: all), spread evenly over its sorted files. */
export function readSplit(dir: string, split: string, cap: number): MaskBenchSchema[] {
  const files = splitFiles(dir, split);
  const picked = cap === 0 || cap >= files.length ? files : Array.from({ length: cap }, (_, i) => files[Math.floor((i * files.length) / cap)]!);
  return picked.map((name) => {
    const json = JSON.parse(readFileSync(join(dir, name), 'utf8')) as { schema?: unknown; tests?: MaskBenchTest[] };
    return { split, id: name.slice(split.length + 3, -'.json'.length), schema: json.schema, tests: json.tests ?? [] };
  });
}
