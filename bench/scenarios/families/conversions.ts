// The families run's inputs: bench-size random checkpoints made by transformers (once, cached
// under models/build/families/ with a stamp of the script that made them), and their conversions,
// each by `src/cli.ts convert` in a child process of its own under GNU time, so the peak resident
// set is that conversion's alone.

import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { hfPython } from '../../../test/support/hf-python.js';
import type { ConversionRecord } from './report.js';

const run = promisify(execFile);
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const SCRIPT = join(ROOT, 'bench', 'scenarios', 'families', 'make_bench_checkpoints.py');
const PARITY_SCRIPT = join(ROOT, 'test', 'support', 'hf', 'make_checkpoints.py');
export const CACHE = join(ROOT, 'models', 'build', 'families');
const GNU_TIME = '/usr/bin/time';

export interface Checkpoints {
  readonly dir: string;
  readonly parameters: Readonly<Record<string, number>>;
  readonly transformers: string;
}

/** Makes the checkpoints that are missing or were made by another version of the scripts. */
export async function ensureCheckpoints(families: readonly string[], log: (line: string) => void): Promise<Checkpoints> {
  const dir = join(CACHE, 'checkpoints');
  const stamp = createHash('sha256')
    .update(await readFile(SCRIPT))
    .update(await readFile(PARITY_SCRIPT))
    .digest('hex')
    .slice(0, 16);
  const manifestPath = join(dir, 'manifest.json');
  const stale = async (family: string): Promise<boolean> => {
    const marker = await readFile(join(dir, family, 'bench-stamp'), 'utf8').catch(() => '');
    return marker !== stamp || !existsSync(join(dir, family, 'model.safetensors'));
  };
  const missing: string[] = [];
  for (const family of families) if (await stale(family)) missing.push(family);
  if (missing.length > 0) {
    const python = await hfPython();
    if ('skip' in python) throw new Error(python.skip);
    log(`making bench-size checkpoints with transformers ${python.transformersVersion}: ${missing.join(', ')}`);
    await run(python.python, [SCRIPT, dir, ...missing], { timeout: 900_000, maxBuffer: 64 << 20 });
    for (const family of missing) await writeFile(join(dir, family, 'bench-stamp'), stamp);
  }
  const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as { transformers: string; families: Record<string, { parameters: number }> };
  const parameters = Object.fromEntries(Object.entries(manifest.families).map(([name, entry]) => [name, entry.parameters]));
  return { dir, parameters, transformers: manifest.transformers };
}

export interface ConversionSpec {
  readonly family: string;
  readonly precision: string;
  readonly paged: boolean;
}

export const conversionLabel = (spec: ConversionSpec): string => `${spec.precision}${spec.paged ? ' --paged' : ''}`;

export function conversionDir(spec: ConversionSpec): string {
  return join(CACHE, 'converted', `${spec.family}-${spec.precision}${spec.paged ? '-paged' : ''}`);
}

/** One conversion into a fresh directory, timed from outside; throws with the tail of its output when it fails. */
export async function convertTimed(checkpoints: Checkpoints, spec: ConversionSpec, log: (line: string) => void): Promise<ConversionRecord> {
  const source = join(checkpoints.dir, spec.family);
  const out = conversionDir(spec);
  await rm(out, { recursive: true, force: true });
  await mkdir(dirname(out), { recursive: true });
  const timeFile = `${out}.time`;
  const convert = [process.execPath, '--import', 'tsx', join(ROOT, 'src', 'cli.ts'), 'convert', source, out, '--precision', spec.precision, ...(spec.paged ? ['--paged'] : [])];
  const timed = existsSync(GNU_TIME);
  const argv = timed ? [GNU_TIME, '-f', '%e %M', '-o', timeFile, ...convert] : convert;
  log(`converting ${spec.family} (${conversionLabel(spec)})…`);
  const started = performance.now();
  await spawnQuiet(argv[0]!, argv.slice(1));
  const measuredS = (performance.now() - started) / 1000;
  let wallS = measuredS;
  let peakRssBytes: number | null = null;
  if (timed) {
    const [elapsed, maxRssKiB] = (await readFile(timeFile, 'utf8')).trim().split('\n').at(-1)!.split(' ').map(Number);
    wallS = elapsed ?? measuredS;
    peakRssBytes = maxRssKiB === undefined ? null : maxRssKiB * 1024;
    await rm(timeFile, { force: true });
  }
  return {
    family: spec.family,
    variant: conversionLabel(spec),
    checkpointBytes: await safetensorsBytes(source),
    parameters: checkpoints.parameters[spec.family],
    outputBytes: await treeBytes(out),
    wallS,
    peakRssBytes,
  };
}

function spawnQuiet(command: string, args: readonly string[]): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn(command, [...args], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    let tail = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => void (tail = (tail + chunk).slice(-4000)));
    child.once('error', fail);
    child.once('exit', (code) => (code === 0 ? done() : fail(new Error(`${args.join(' ')} exited ${code}\n${tail}`))));
  });
}

async function safetensorsBytes(dir: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(dir)) if (name.endsWith('.safetensors')) total += (await stat(join(dir, name))).size;
  return total;
}

export async function treeBytes(path: string): Promise<number> {
  const info = await stat(path);
  if (!info.isDirectory()) return info.size;
  let total = 0;
  for (const name of await readdir(path)) total += await treeBytes(join(path, name));
  return total;
}
