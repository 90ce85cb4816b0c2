// ARCHITECTURE.md's import boundaries, enforced on every file: one seam per native dependency,
// kernels/ and models/ independent of the server, contracts/ free of runtime code.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const SOURCE_DIRS = ['src', 'openai-compat', 'kernels', 'models', 'bench'];

interface Rule {
  readonly description: string;
  /** Files the rule applies to (repository-relative path prefix). */
  readonly appliesTo: (file: string) => boolean;
  /** True when `specifier` may not be imported from such a file. */
  readonly forbids: (specifier: string, file: string) => boolean;
}

const under = (...prefixes: string[]) => (file: string) => prefixes.some((p) => file.startsWith(p));
const notUnder = (...prefixes: string[]) => (file: string) => !prefixes.some((p) => file.startsWith(p));
const isPackage = (name: string) => (s: string) => s === name || s.startsWith(`${name}/`);
const reaches = (file: string, specifier: string, dir: string) =>
  specifier.startsWith('.') && join(file, '..', specifier).startsWith(dir);

const RULES: readonly Rule[] = [
  { description: 'only src/runtime/ imports onnxruntime-node', appliesTo: (f) => under('src/', 'openai-compat/')(f) && notUnder('src/runtime/')(f), forbids: isPackage('onnxruntime-node') },
  // bench/ holds load generators: gRPC clients, like the tests, not a second server seam.
  { description: 'only src/server/grpc/ imports @grpc/grpc-js', appliesTo: notUnder('src/server/grpc/', 'bench/'), forbids: (s) => isPackage('@grpc/grpc-js')(s) || isPackage('@grpc/proto-loader')(s) },
  { description: 'only src/metrics/ imports prom-client', appliesTo: notUnder('src/metrics/', 'bench/'), forbids: isPackage('prom-client') },
  { description: 'kernels/ depends on nothing else in the project', appliesTo: under('kernels/'), forbids: (s, f) => ['src', 'models', 'bench', 'openai-compat', 'test'].some((d) => reaches(f, s, d)) },
  { description: 'models/ depends only on kernels/', appliesTo: under('models/'), forbids: (s, f) => ['src', 'bench', 'openai-compat', 'test'].some((d) => reaches(f, s, d)) },
  { description: 'src/ and openai-compat/ never import bench/ or test/', appliesTo: under('src/', 'openai-compat/'), forbids: (s, f) => ['bench', 'test'].some((d) => reaches(f, s, d)) },
  { description: 'src/contracts/ holds types only', appliesTo: under('src/contracts/'), forbids: (s, f) => !reaches(f, s, 'src/contracts') },
];

function sourceFiles(dir: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(join(ROOT, dir));
  } catch {
    return [];
  }
  return entries.flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules' || name === 'build' || name === 'results') return [];
    if (statSync(join(ROOT, path)).isDirectory()) return sourceFiles(path);
    return /\.(ts|mts|js|mjs)$/.test(name) ? [path] : [];
  });
}

/** Import specifiers of static imports, re-exports, dynamic imports and require calls. */
function importSpecifiers(source: string): string[] {
  const pattern = /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|(?:^|[\s;])import\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|require\(\s*['"]([^'"]+)['"]\s*\)/gm;
  return [...source.matchAll(pattern)].map((m) => m[1] ?? m[2] ?? m[3] ?? m[4]!);
}

describe('import boundaries (ARCHITECTURE.md)', () => {
  const files = SOURCE_DIRS.flatMap(sourceFiles).map((f) => relative(ROOT, join(ROOT, f)));

  it('finds the project sources', () => {
    expect(files.some((f) => f.startsWith('kernels/'))).toBe(true);
  });

  it.each(RULES.map((r) => [r.description, r] as const))('%s', (_, rule) => {
    const violations = files
      .filter(rule.appliesTo)
      .flatMap((file) => importSpecifiers(readFileSync(join(ROOT, file), 'utf8')).filter((s) => rule.forbids(s, file)).map((s) => `${file} imports ${s}`));
    expect(violations).toEqual([]);
  });

  it('flags a violation of each kind', () => {
    const flagged = (file: string, specifier: string) => RULES.some((r) => r.appliesTo(file) && r.forbids(specifier, file));
    expect(flagged('src/engine-worker/loop.ts', 'onnxruntime-node')).toBe(true);
    expect(flagged('src/runtime/session.ts', 'onnxruntime-node')).toBe(false);
    expect(flagged('openai-compat/routes.ts', '@grpc/grpc-js')).toBe(true);
    expect(flagged('src/server/http/metrics.ts', 'prom-client')).toBe(true);
    expect(flagged('kernels/rms-norm.ts', '../models/catalog.js')).toBe(true);
    expect(flagged('models/qwen3/graph.ts', '../../src/runtime/session.js')).toBe(true);
    expect(flagged('models/qwen3/graph.ts', '../../kernels/linear.js')).toBe(false);
    expect(flagged('src/contracts/tensors.ts', '../engine-worker/state.js')).toBe(true);
  });

  it('the specifier scanner sees every import form', () => {
    const sample = "import a from 'x';\nimport { b } from \"y\";\nexport * from './z.js';\nimport './side.js';\nconst c = await import('w');\nrequire('v');";
    expect(importSpecifiers(sample)).toEqual(['x', 'y', './z.js', './side.js', 'w', 'v']);
  });
});
