// ARCHITECTURE.md's import boundaries, enforced on every file: one seam per native dependency,
// kernels/ and models/ independent of the server, contracts/ free of runtime code; and the
// server's layers (layers.ts): every import between folders allowed by one table, no folder cycles.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  crossLayerImports,
  cycles,
  DOC_TABLE_MARKERS,
  layersDocTable,
  dependencySpecifiers,
  graphOf,
  isPending,
  layeredFiles,
  layerOf,
  LAYERS,
  layersOfTier,
  layerViolation,
  PENDING,
  resolveSpecifier,
  ROOT,
  rootFolderOf,
} from './layers.js';
const SOURCE_DIRS = ['src', 'openai-compat', 'anthropic-compat', 'kernels', 'models', 'bench'];

interface Rule {
  readonly description: string;
  /** Files the rule applies to (repository-relative path prefix). */
  readonly appliesTo: (file: string) => boolean;
  /** True when `specifier` may not be imported from such a file. */
  readonly forbids: (specifier: string, file: string) => boolean;
}

const under =
  (...prefixes: string[]) =>
  (file: string) =>
    prefixes.some((p) => file.startsWith(p));
const notUnder =
  (...prefixes: string[]) =>
  (file: string) =>
    !prefixes.some((p) => file.startsWith(p));
const isPackage = (name: string) => (s: string) => s === name || s.startsWith(`${name}/`);
const reaches = (file: string, specifier: string, dir: string) => specifier.startsWith('.') && join(file, '..', specifier).startsWith(dir);

const RULES: readonly Rule[] = [
  {
    description: 'only src/runtime/ imports onnxruntime-node',
    appliesTo: (f) => under('src/', 'openai-compat/', 'anthropic-compat/')(f) && notUnder('src/runtime/')(f),
    forbids: isPackage('onnxruntime-node'),
  },
  // bench/ holds load generators: gRPC clients, like the tests, not a second server seam.
  {
    description: 'only the gRPC front ends (src/server/grpc/, src/server/grpc-generation/) and the gRPC kit (src/server/kit/grpc/) import @grpc/grpc-js',
    appliesTo: notUnder('src/server/grpc/', 'src/server/grpc-generation/', 'src/server/kit/grpc/', 'bench/'),
    forbids: (s) => isPackage('@grpc/grpc-js')(s) || isPackage('@grpc/proto-loader')(s),
  },
  { description: 'only src/grammar/ imports @mlc-ai/web-xgrammar', appliesTo: notUnder('src/grammar/'), forbids: isPackage('@mlc-ai/web-xgrammar') },
  // Tests subscribe to the published events with a real socket.
  { description: 'only src/kv-events/ imports zeromq', appliesTo: notUnder('src/kv-events/', 'test/'), forbids: isPackage('zeromq') },
  { description: 'only src/metrics/ imports prom-client', appliesTo: notUnder('src/metrics/', 'bench/'), forbids: isPackage('prom-client') },
  { description: 'only src/hub/ imports @huggingface/hub', appliesTo: notUnder('src/hub/'), forbids: isPackage('@huggingface/hub') },
  {
    description: 'kernels/ depends on nothing else in the project',
    appliesTo: under('kernels/'),
    forbids: (s, f) => ['src', 'models', 'bench', 'openai-compat', 'test'].some((d) => reaches(f, s, d)),
  },
  { description: 'models/ depends only on kernels/', appliesTo: under('models/'), forbids: (s, f) => ['src', 'bench', 'openai-compat', 'test'].some((d) => reaches(f, s, d)) },
  {
    description: 'src/ and the API front ends never import bench/ or test/',
    appliesTo: under('src/', 'openai-compat/', 'anthropic-compat/'),
    forbids: (s, f) => ['bench', 'test'].some((d) => reaches(f, s, d)),
  },
  { description: 'src/contracts/ holds types and pure declarations, importing nothing outside it', appliesTo: under('src/contracts/'), forbids: (s, f) => !reaches(f, s, 'src/contracts') },
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

/**
 * Specifiers a module loads when it runs: value imports, re-exports, side-effect and dynamic
 * imports. Not `import type` / `export type` (erased), and not worker-entry URLs: the worker's
 * own thread loads those.
 */
function loadedSpecifiers(source: string): string[] {
  const pattern = /(?:^|[\s;])(?:import|export)\s(?!type\s)[^'"]*?from\s*['"]([^'"]+)['"]|(?:^|[\s;])import\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm;
  return [...source.matchAll(pattern)].map((m) => m[1] ?? m[2] ?? m[3]!);
}

/** Every module a thread loads from `roots`, its own files and the packages they name, each with the file that first loads it. */
function loadedModules(roots: readonly string[]): Map<string, string> {
  const loadedBy = new Map<string, string>(roots.map((r) => [r, '(root)']));
  const queue = [...roots];
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    for (const specifier of loadedSpecifiers(readFileSync(join(ROOT, file), 'utf8'))) {
      const target = specifier.startsWith('.') ? normalize(join(dirname(file), specifier)).replace(/\.js$/, '.ts') : specifier;
      if (loadedBy.has(target)) continue;
      loadedBy.set(target, file);
      if (specifier.startsWith('.') && existsSync(join(ROOT, target))) queue.push(target);
    }
  }
  return loadedBy;
}

describe('import boundaries (ARCHITECTURE.md)', () => {
  const files = SOURCE_DIRS.flatMap(sourceFiles).map((f) => relative(ROOT, join(ROOT, f)));

  it('finds the project sources', () => {
    expect(files.some((f) => f.startsWith('kernels/'))).toBe(true);
  });

  it.each(RULES.map((r) => [r.description, r] as const))('%s', (_, rule) => {
    const violations = files.filter(rule.appliesTo).flatMap((file) =>
      importSpecifiers(readFileSync(join(ROOT, file), 'utf8'))
        .filter((s) => rule.forbids(s, file))
        .map((s) => `${file} imports ${s}`),
    );
    expect(violations).toEqual([]);
  });

  it('flags a violation of each kind', () => {
    const flagged = (file: string, specifier: string) => RULES.some((r) => r.appliesTo(file) && r.forbids(specifier, file));
    expect(flagged('src/engine-worker/loop.ts', 'onnxruntime-node')).toBe(true);
    expect(flagged('src/runtime/session.ts', 'onnxruntime-node')).toBe(false);
    expect(flagged('openai-compat/routes.ts', '@grpc/grpc-js')).toBe(true);
    expect(flagged('src/server/kit/access.ts', '@grpc/grpc-js')).toBe(true);
    expect(flagged('src/server/grpc-generation/generation-service.ts', '@grpc/grpc-js')).toBe(false);
    expect(flagged('src/server/kit/grpc/server.ts', '@grpc/proto-loader')).toBe(false);
    expect(flagged('src/server/metrics/index.ts', 'prom-client')).toBe(true);
    expect(flagged('src/sampler/sampler.ts', '@mlc-ai/web-xgrammar')).toBe(true);
    expect(flagged('src/grammar/xgrammar-module.ts', '@mlc-ai/web-xgrammar')).toBe(false);
    expect(flagged('kernels/rms-norm.ts', '../models/catalog.js')).toBe(true);
    expect(flagged('models/qwen3/graph.ts', '../../src/runtime/session.js')).toBe(true);
    expect(flagged('models/qwen3/graph.ts', '../../kernels/linear.js')).toBe(false);
    expect(flagged('src/contracts/tensors.ts', '../engine-worker/state.js')).toBe(true);
  });

  // One seam per native dependency: the gRPC front ends name grpc-js's types (a call, a stream),
  // but only the kit loads the library, so one module decides how the server, its status codes
  // and its flow control are used.
  it('only the gRPC kit (src/server/kit/grpc/) loads @grpc/grpc-js and @grpc/proto-loader; the gRPC front ends import their types only', () => {
    const grpc = (s: string) => isPackage('@grpc/grpc-js')(s) || isPackage('@grpc/proto-loader')(s);
    const violations = files
      .filter(under('src/'))
      .filter(notUnder('src/server/kit/grpc/'))
      .flatMap((file) =>
        loadedSpecifiers(readFileSync(join(ROOT, file), 'utf8'))
          .filter(grpc)
          .map((s) => `${file} loads ${s}`),
      );
    expect(violations).toEqual([]);
  });

  // session.run blocks its thread: ONNX Runtime belongs to the instance and engine workers. The
  // main thread reaches them only through their entry URLs (test/integration/main-thread-modules
  // .test.ts checks the running server's module cache too).
  it('the main thread (src/cli.ts, src/main.ts) never loads src/runtime/ or onnxruntime-node', () => {
    const loaded = loadedModules(['src/cli.ts']);
    expect(loaded.has('src/main.ts')).toBe(true);
    const offending = [...loaded].filter(([module]) => module.startsWith('src/runtime/') || isPackage('onnxruntime-node')(module) || isPackage('onnxruntime-common')(module));
    expect(offending.map(([module, by]) => `${by} loads ${module}`)).toEqual([]);
  });

  it('the load scanner skips type-only imports and worker-entry URLs', () => {
    const sample = [
      "import type { A } from '../a.js';",
      "export type { B } from './b.js';",
      "import { type C, d } from './c.js';",
      "export { e } from './e.js';",
      "import './side.js';",
      "const f = await import('./f.js');",
      "export const ENTRY = new URL('./main.ts', import.meta.url);",
    ].join('\n');
    expect(loadedSpecifiers(sample)).toEqual(['./c.js', './e.js', './side.js', './f.js']);
  });

  it('the specifier scanner sees every import form', () => {
    const sample = "import a from 'x';\nimport { b } from \"y\";\nexport * from './z.js';\nimport './side.js';\nconst c = await import('w');\nrequire('v');";
    expect(importSpecifiers(sample)).toEqual(['x', 'y', './z.js', './side.js', 'w', 'v']);
  });
});

const FRONT_ENDS = layersOfTier('front end');
const KITS = layersOfTier('front-end kit');
const COMPOSITION_ROOT = layersOfTier('composition root');
const ENGINE_INTERNALS = ['src/engine-worker', 'src/sampler', 'src/engine-client', 'src/runners', 'src/runtime', 'src/kv-cache', 'src/tokenizer', 'src/tokenizer-worker'];

describe('layers (test/unit/architecture/layers.ts)', () => {
  const files = layeredFiles();
  const edges = crossLayerImports(files);

  it('places every server file in a layer', () => {
    expect(files.filter((f) => layerOf(f) === undefined)).toEqual([]);
    expect(files.length).toBeGreaterThan(100);
  });

  it('docs/architecture.md shows this table (regenerate: npx tsx test/unit/architecture/layers.ts --doc)', () => {
    const doc = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');
    const [begin, end] = DOC_TABLE_MARKERS;
    const start = doc.indexOf(begin);
    const stop = doc.indexOf(end);
    expect(start, 'the layers table markers are missing from docs/architecture.md').toBeGreaterThanOrEqual(0);
    expect(doc.slice(start + begin.length, stop).trim()).toBe(layersDocTable());
  });

  it('every import between folders is one the table allows', () => {
    const violations = edges.filter((e) => !isPending(e)).flatMap((e) => layerViolation(e.file, e.specifier) ?? []);
    expect(violations).toEqual([]);
  });

  it('no folder cycle, in the code or in the table', () => {
    expect(cycles(graphOf(edges))).toEqual([]);
    const declared = Object.entries(LAYERS).flatMap(([from, layer]) => layer.imports.map((to) => ({ from, to })));
    expect(cycles(graphOf(declared))).toEqual([]);
  });

  it('no cycle between folders of src/ either (src/server/http and src/server/kit count as src/server)', () => {
    // A layer nested in a folder must not hide a cycle through that folder: openai-compat may use
    // src/server/kit only because nothing under src/server imports openai-compat back.
    const topFolder = (layer: string) =>
      layer
        .split('/')
        .slice(0, layer.startsWith('src/') ? 2 : 1)
        .join('/');
    const collapsed = edges.map((e) => ({ from: topFolder(e.from), to: topFolder(e.to) })).filter((e) => e.from !== e.to);
    expect(cycles(graphOf(collapsed))).toEqual([]);
  });

  it('no cycle between top-level folders, the composition root a node of its own (src/ ↔ openai-compat/ is one)', () => {
    const collapse = (list: readonly { from: string; to: string }[]) => list.map((e) => ({ from: rootFolderOf(e.from), to: rootFolderOf(e.to) })).filter((e) => e.from !== e.to);
    expect(cycles(graphOf(collapse(edges)))).toEqual([]);
    const declared = Object.entries(LAYERS).flatMap(([from, layer]) => layer.imports.map((to) => ({ from, to })));
    expect(cycles(graphOf(collapse(declared)))).toEqual([]);
    // The check sees one: anything in src/ but the root importing a top-level front end closes src → openai-compat → src.
    expect(cycles(graphOf(collapse([...edges, { from: 'src/serving', to: 'openai-compat' }])))).toEqual([['openai-compat', 'src']]);
    expect(rootFolderOf('src/main.ts')).toBe('composition root');
    expect(rootFolderOf('src/server/kit')).toBe('src');
  });

  it('front ends never import each other, in the table or in the code', () => {
    expect(FRONT_ENDS.length).toBeGreaterThanOrEqual(7);
    for (const frontEnd of [...FRONT_ENDS, ...KITS])
      expect(
        LAYERS[frontEnd]!.imports.filter((l) => FRONT_ENDS.includes(l)),
        frontEnd,
      ).toEqual([]);
    expect(edges.filter((e) => FRONT_ENDS.includes(e.from) && FRONT_ENDS.includes(e.to)).map((e) => `${e.file} → ${e.specifier}`)).toEqual([]);
  });

  it('the composition root alone imports the front ends, every one of them; the kit imports none', () => {
    const importers = Object.keys(LAYERS).filter((name) => LAYERS[name]!.imports.some((l) => FRONT_ENDS.includes(l)));
    expect(importers.filter((name) => !COMPOSITION_ROOT.includes(name))).toEqual([]);
    expect(edges.filter((e) => FRONT_ENDS.includes(e.to) && !COMPOSITION_ROOT.includes(e.from)).map((e) => `${e.file} → ${e.specifier}`)).toEqual([]);
    const imported = new Set(edges.filter((e) => COMPOSITION_ROOT.includes(e.from)).map((e) => e.to));
    expect(FRONT_ENDS.filter((f) => !imported.has(f))).toEqual([]);
    for (const kit of KITS)
      expect(
        LAYERS[kit]!.imports.filter((l) => FRONT_ENDS.includes(l) || COMPOSITION_ROOT.includes(l)),
        kit,
      ).toEqual([]);
  });

  it('every pending edge still exists (delete it once its fix is merged)', () => {
    const stale = PENDING.filter((p) => !edges.some((e) => e.file === p.file && resolveSpecifier(e.file, e.specifier) === p.target));
    expect(stale).toEqual([]);
  });

  it("the table keeps the issue's rules", () => {
    for (const frontEnd of [...FRONT_ENDS, ...KITS])
      expect(
        LAYERS[frontEnd]!.imports.filter((l) => ENGINE_INTERNALS.includes(l)),
        frontEnd,
      ).toEqual([]);
    for (const engine of ['src/engine-worker', 'src/sampler']) expect(LAYERS[engine]!.imports, engine).not.toContain('src/runtime');
    expect(LAYERS['src/kv-cache']!.imports.filter((l) => l !== 'src/errors.ts' && l !== 'src/contracts')).toEqual([]);
    expect(LAYERS['src/contracts']!.imports).toEqual([]);
  });

  it('flags a violation of each kind, naming file, specifier and rule', () => {
    expect(layerViolation('openai-compat/chat.ts', '../src/engine-client/output-processor.js')).toBe(
      'openai-compat/chat.ts → ../src/engine-client/output-processor.js: openai-compat may not import src/engine-client (it may import: src/contracts, src/vocabulary, src/serving, src/errors.ts, src/config, src/server/kit, src/tool-calls, src/assistant-output)',
    );
    expect(layerViolation('src/server/grpc/generation-codec.ts', '../../runners/kv-storage.js')).toMatch(/src\/server\/grpc may not import src\/runners/);
    expect(layerViolation('src/server/websocket/messages.ts', '../../sampler/draw.js')).toMatch(/may not import src\/sampler/);
    expect(layerViolation('src/engine-worker/engine-core.ts', '../runtime/model-session.js')).toMatch(/src\/engine-worker may not import src\/runtime/);
    expect(layerViolation('src/sampler/draw.ts', '../runtime/ort-tensors.js')).toMatch(/src\/sampler may not import src\/runtime/);
    expect(layerViolation('src/kv-cache/block-pool.ts', '../runners/kv-storage.js')).toMatch(/src\/kv-cache may not import src\/runners/);
    expect(layerViolation('src/kv-cache/block-pool.ts', '../errors.js')).toBeNull();
    expect(layerViolation('src/repository/scan.ts', '../serving/served-model.js')).toMatch(/src\/repository may not import src\/serving/);
    expect(layerViolation('src/server/kit/transport.ts', '../../../openai-compat/sse.js')).toMatch(/src\/server\/kit may not import openai-compat/);
    // One front end never leans on another: what they share is the kit's.
    expect(layerViolation('anthropic-compat/messages.ts', '../openai-compat/respond.js')).toMatch(/anthropic-compat may not import openai-compat/);
    expect(layerViolation('src/server/websocket/session.ts', '../http/routes/generate.js')).toMatch(/src\/server\/websocket may not import src\/server\/http/);
    expect(layerViolation('openai-compat/index.ts', '../src/server/http/index.js')).toMatch(/openai-compat may not import src\/server\/http/);
    expect(layerViolation('src/server/kit/choices.ts', '../../../openai-compat/wire.js')).toMatch(/src\/server\/kit may not import openai-compat/);
    // The two gRPC front ends share the gRPC kit, not each other.
    expect(layerViolation('src/server/grpc-generation/generation-service.ts', '../grpc/status.js')).toMatch(/src\/server\/grpc-generation may not import src\/server\/grpc /);
    expect(layerViolation('src/server/grpc/handlers.ts', '../grpc-generation/generation-codec.js')).toMatch(/src\/server\/grpc may not import src\/server\/grpc-generation/);
    expect(layerViolation('src/server/kit/grpc/server.ts', '../../grpc/handlers.js')).toMatch(/src\/server\/kit\/grpc may not import src\/server\/grpc /);
    expect(layerViolation('src/server/grpc-generation/generation-service.ts', '../kit/grpc/status.js')).toBeNull();
    // A worker thread's code is reached only through its entry.
    expect(layerViolation('src/engine-client/engine-client.ts', '../engine-worker/entry.js')).toBeNull();
    expect(layerViolation('src/engine-client/engine-client.ts', '../engine-worker/scheduler.js')).toMatch(
      /src\/engine-worker runs on its own thread; other layers import only src\/engine-worker\/entry.ts/,
    );
    expect(layerViolation('src/engine-client/offthread-tokenizer.ts', '../tokenizer-worker/main.js')).toMatch(/import only src\/tokenizer-worker\/entry.ts/);
    // A new folder must be given a place in the table.
    expect(layerViolation('src/structured-output/grammar.ts', '../contracts/generate.js')).toMatch(/belongs to no layer/);
    expect(layerViolation('src/serving/llm-backend.ts', '../../kernels/rms-norm.js')).toMatch(/kernels\/rms-norm.ts belongs to no layer/);
  });

  it('finds a cycle of any length', () => {
    const graph = graphOf([
      { from: 'a', to: 'b' },
      { from: 'b', to: 'c' },
      { from: 'c', to: 'a' },
      { from: 'c', to: 'd' },
      { from: 'd', to: 'e' },
    ]);
    expect(cycles(graph)).toEqual([['a', 'b', 'c']]);
    expect(cycles(graphOf([{ from: 'x', to: 'y' }]))).toEqual([]);
  });

  it('counts type-only imports, re-exports, dynamic imports and worker-entry URLs as edges', () => {
    const sample = [
      "import type { A } from '../contracts/a.js';",
      "import {\n  type B,\n  c,\n} from './b.js';",
      "export type { D } from '../d.js';",
      "const e = await import('../e.js');",
      "export const ENTRY = new URL('./main.ts', import.meta.url);",
      "const boot = new URL('./bootstrap.mjs', import.meta.url);",
      "const protos = new URL('../../protos/', import.meta.url);",
      "import { z } from 'zod';",
    ].join('\n');
    expect(dependencySpecifiers(sample)).toEqual(['../contracts/a.js', './b.js', '../d.js', '../e.js', './main.ts', './bootstrap.mjs']);
  });
});
