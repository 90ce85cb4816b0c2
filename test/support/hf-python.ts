// Hugging Face transformers as the reference implementation: a Python venv with torch,
// transformers, safetensors and jinja2, made once per checkout (node_modules/.cache, so a fresh
// clone makes its own) from the machine's local wheel index. Tests that need it skip with the
// printed reason where it cannot be made (no python3, no wheels).

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** What the reference needs; `import` names, and the pip names install them. */
const PACKAGES = ['torch', 'transformers', 'safetensors', 'jinja2'] as const;
const CHECK = `import ${PACKAGES.join(', ')}; print(transformers.__version__)`;
/** The machine's local index, where it has one: pip's default index (PyPI) is not reachable here, and its retries cost minutes. */
const LOCAL_INDEX = '/opt/pypi/simple';

export type HfPython = { readonly python: string; readonly transformersVersion: string } | { readonly skip: string };

const CACHE = resolve('node_modules/.cache/conveyor-hf-venv');
let pending: Promise<HfPython> | undefined;

/** The venv's python, made on first use (about 40 s), or why it cannot be had. */
export function hfPython(): Promise<HfPython> {
  pending ??= ensureVenv().catch((error: unknown) => ({ skip: `no Hugging Face reference (python venv with ${PACKAGES.join(', ')}): ${firstLine(error)}` }));
  return pending;
}

async function ensureVenv(): Promise<HfPython> {
  const python = join(CACHE, 'venv', 'bin', 'python');
  if (existsSync(python)) {
    const ready = await check(python).catch(() => undefined);
    if (ready) return { python, transformersVersion: ready };
    // A venv that cannot import the packages (an interrupted install): made again below.
    await rm(join(CACHE, 'venv'), { recursive: true, force: true });
  }
  // Built beside the final place and renamed into it, so test files starting together never see a
  // half-made venv. The rename fails where another test file's venv got there first: that one is
  // kept (a test may be running its python this moment) and this one dropped.
  const building = join(CACHE, `venv-${process.pid}-${Date.now()}`);
  await mkdir(CACHE, { recursive: true });
  try {
    await run('python3', ['-m', 'venv', building], { timeout: 120_000 });
    const index = existsSync(LOCAL_INDEX) ? ['--index-url', `file://${LOCAL_INDEX}`] : [];
    await run(join(building, 'bin', 'python'), ['-m', 'pip', 'install', '--quiet', ...index, ...PACKAGES], { timeout: 600_000, maxBuffer: 64 << 20 });
    await rename(building, join(CACHE, 'venv')).catch(() => rm(building, { recursive: true, force: true }));
  } catch (error) {
    await rm(building, { recursive: true, force: true });
    if (!existsSync(python)) throw error;
  }
  return { python, transformersVersion: await check(python) };
}

async function check(python: string): Promise<string> {
  const { stdout } = await run(python, ['-c', CHECK], { timeout: 120_000 });
  return stdout.trim();
}

function firstLine(error: unknown): string {
  const text = error instanceof Error ? (error as { stderr?: string }).stderr || error.message : String(error);
  return text.trim().split('\n').at(-1) ?? text;
}
