// The server's layers: one table naming, for every folder of src/, openai-compat/ and anthropic-compat/, the folders
// its files may import. import-boundaries.test.ts fails on any import outside the table, on any
// cycle between layers or between top-level folders (the composition root counted apart from the
// rest of src/), on a front end importing another, and on anything but the composition root
// importing a front end; `npx tsx test/unit/architecture/layers.ts` prints the table and the
// folder graph as it is today (for docs/architecture.md).
//
// Every relative import counts, `import type` included (a type names the layer it comes from
// as surely as a value does), and so does `new URL('./x.ts', import.meta.url)`: that is how a
// worker thread's entry is reached, and a worker entry is a dependency like any other.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { pathToFileURL } from 'node:url';

export const ROOT = join(import.meta.dirname, '..', '..', '..');

/**
 * The protocol tier: each front end translates one protocol for the serving layer and never
 * imports another; what two or more share is the kit's; the composition root alone imports them
 * all and puts them on their ports.
 */
export type Tier = 'front end' | 'front-end kit' | 'composition root';

export interface Layer {
  /** What lives here, for the printed table. */
  readonly holds: string;
  /** The protocol tier's layers name their place in it; the rest of the server has none. */
  readonly tier?: Tier;
  /** The layers its files may import; its own files always may. */
  readonly imports: readonly string[];
  /**
   * A worker thread's folder: every other layer reaches it only through this file (its entry URL
   * and the messages it speaks), never the code that runs on the worker.
   */
  readonly entry?: string;
}

const FRONT_END_BASE = ['src/contracts', 'src/vocabulary', 'src/serving', 'src/errors.ts', 'src/config'];
/** The kit every front end may use: the HTTP app and its transport, SSE, CORS, bodies, choices, tool plan. */
const KIT = 'src/server/kit';
/** Triton's LLM request and its lookup, shared by the KServe HTTP and gRPC front ends (and the WebSocket's and generation gRPC's lookup). */
const TRITON_GENERATION = 'src/server/generation';
/** The gRPC kit: one server on one port for both gRPC front ends, access, status mapping, health, proto loading. */
const GRPC_KIT = 'src/server/kit/grpc';

/** A file's layer is the longest key that is its folder (or, for a top-level file, the file). */
export const LAYERS: Readonly<Record<string, Layer>> = {
  'src/contracts': {
    holds: 'plain types shared across threads and layers, and pure declarations they derive from (the ModelConfig schema, the tensor datatype table); no I/O, no imports outside it',
    imports: [],
  },
  'src/errors.ts': { holds: 'the error catalog', imports: [] },
  'src/security': { holds: 'API keys and the access policy', imports: ['src/errors.ts'] },
  'src/config': { holds: 'server options, resource limits and their defaults, the --model flags', imports: ['src/contracts', 'src/security', 'src/metrics'] },
  'src/vocabulary': { holds: 'the generation request vocabulary: sampling fields and their validation', imports: ['src/contracts', 'src/errors.ts'] },
  'src/kv-cache': { holds: 'block pool, KV cache manager, block hashing', imports: ['src/contracts', 'src/errors.ts'] },
  'src/kv-events': {
    holds: "the only importer of zeromq and @msgpack/msgpack: vLLM's KV events (config, msgpack layout, PUB socket and replay) for one engine (engine worker thread)",
    imports: ['src/contracts', 'src/kv-cache'],
  },
  'src/sampler': { holds: 'logits → token (engine worker thread)', imports: ['src/contracts', 'src/errors.ts'] },
  'src/grammar': {
    holds: 'the only importer of @mlc-ai/web-xgrammar: grammar specs compiled against a vocabulary, per-request token masks (grammar worker thread)',
    imports: ['src/contracts', 'src/errors.ts'],
  },
  'src/threads': {
    holds:
      "starting a worker thread on a TypeScript (or compiled) entry; worker supervision, its restart policy and test-only fault injection; the main thread's event-loop turns; the compute threads' priority",
    imports: ['src/contracts', 'src/errors.ts'],
  },
  'src/runtime': {
    holds:
      'the only importer of onnxruntime-node and the only loader of the native paged-attention kernel (built from native/): sessions, ORT tensors, the kernel seam (attention and the decoder layer ops), the float32 initializers of an ONNX file; loaded by worker threads only, never by the main thread',
    imports: ['src/contracts', 'src/errors.ts'],
  },
  'src/instance-worker': {
    holds: "a classic model's instance worker thread (instance_group count N): one ONNX Runtime session, the batches the dynamic batcher sends",
    imports: ['src/contracts', 'src/runtime', 'src/threads'],
    entry: 'entry.ts',
  },
  'src/backend-api': {
    holds:
      "the TypeScript backend's public module for model authors (`conveyor/backend` in a model file): the model class, its requests and responses, BLS calls, tensor helpers, the server's encoder tokenizer",
    imports: ['src/contracts', 'src/tokenizer'],
  },
  'src/typescript-model-worker': {
    holds:
      "a TypeScript model's instance worker thread (backend typescript, instance_group count N): imports model.ts / model.js, runs initialize / execute / finalize, asks the main thread for its BLS calls",
    imports: ['src/contracts', 'src/backend-api', 'src/threads'],
    entry: 'entry.ts',
  },
  'src/runners': {
    holds: 'model runners: how a decoder consumes the KV cache (the ModelRunner seam and its factory)',
    imports: ['src/contracts', 'src/errors.ts', 'src/kv-cache', 'src/runtime', 'src/sampler', 'src/threads'],
  },
  'src/grammar-worker': {
    holds:
      "the grammar worker thread (one per engine that sees a constrained request): compiles and matchers, masks computed during the engine's forward pass; the compile probe thread that bounds each new grammar's compile",
    imports: ['src/contracts', 'src/errors.ts', 'src/grammar', 'src/threads'],
    entry: 'entry.ts',
  },
  'src/engine-worker': {
    holds: 'the engine worker thread: step loop, scheduler, request state, thinking blocks, the grammar worker client',
    imports: ['src/contracts', 'src/errors.ts', 'src/kv-cache', 'src/kv-events', 'src/runners', 'src/sampler', 'src/threads', 'src/grammar-worker'],
    entry: 'entry.ts',
  },
  'src/tokenizer': { holds: "a model's Hugging Face files and the tokenizer built from them (both threads)", imports: ['src/contracts', 'src/vocabulary'] },
  'src/tokenizer-worker': { holds: 'the tokenizer worker thread', imports: ['src/contracts', 'src/tokenizer'], entry: 'entry.ts' },
  'src/parse-worker': {
    holds: 'the parse worker thread: large request bodies and WebSocket messages parsed off the serving thread, by a job module the front end names',
    imports: ['src/errors.ts', 'src/threads'],
    entry: 'entry.ts',
  },
  'src/engine-client': {
    holds: 'main thread: input and output processors, detokenizer, the engine worker client',
    imports: ['src/contracts', 'src/errors.ts', 'src/config', 'src/vocabulary', 'src/tokenizer', 'src/threads', 'src/engine-worker', 'src/tokenizer-worker', 'src/reasoning'],
  },
  'src/tool-calls': { holds: 'tool calling on the text side: call formats per model family, whole and streaming parsers, the tool_choice grammar', imports: ['src/contracts', 'src/vocabulary'] },
  'src/reasoning': { holds: 'reasoning output on the text side: thinking-block formats per model family, whole and streaming split, reasoning-token count', imports: ['src/contracts'] },
  'src/assistant-output': {
    holds: "one choice's text read as an assistant turn (reasoning, then the answer's tool calls), whole and streaming, for every front end",
    imports: ['src/contracts', 'src/reasoning', 'src/tool-calls'],
  },
  'src/triton-llm': {
    holds:
      "Triton's LLM tensors ↔ generation, as Triton's vLLM backend reads and answers them: the request reader (tensors or generate JSON keys → a generation request) and the response shaping (generation events → text_output and the return_* outputs); read by the serving layer's LlmModel and the KServe front ends",
    imports: ['src/contracts', 'src/errors.ts', 'src/vocabulary'],
  },
  'src/batcher': { holds: "Triton's dynamic batcher and model statistics", imports: ['src/contracts', 'src/errors.ts'] },
  'src/metrics': { holds: 'the only importer of prom-client: metric definitions, collectors, the metrics port', imports: ['src/contracts', 'src/errors.ts', 'src/batcher', 'src/security'] },
  'src/repository': {
    holds: 'the model repository on disk: scan, versions, version policy, path confinement, variants, the one-model repository of --model',
    imports: ['src/contracts', 'src/errors.ts', 'src/config', 'src/tokenizer'],
  },
  'src/hub': {
    holds: 'the only importer of @huggingface/hub: models by name (ORG/NAME[@REVISION]) fetched into the shared Hugging Face cache, resumed and verified; converted checkpoints cached',
    imports: ['src/contracts', 'src/repository'],
  },
  'src/repository/config': { holds: 'config.pbtxt and JSON config: parser, schema, printer', imports: ['src/contracts', 'src/errors.ts', 'src/repository'] },
  'src/serving': {
    holds: 'served models behind the front ends: the model manager, the onnx, llm and typescript backends (their instances), ConveyorService',
    imports: [
      'src/contracts',
      'src/errors.ts',
      'src/config',
      'src/vocabulary',
      'src/batcher',
      'src/metrics',
      'src/repository',
      'src/repository/config',
      'src/threads',
      'src/instance-worker',
      'src/typescript-model-worker',
      'src/engine-client',
      'src/tokenizer',
      'src/tool-calls',
      'src/reasoning',
      'src/kv-events',
      'src/triton-llm',
    ],
  },
  // The protocol tier. Front ends are siblings: the API-compatibility packages top-level
  // (openai-compat/ per the design card, anthropic-compat/ beside it), the server's own protocols
  // one folder each under src/server/; what two or more share is in the kit.
  [KIT]: {
    holds:
      'front-end kit, owned by no front end: the HTTP app (access, connection limits, probe logging, model leases), transport (disconnects, content coding, stalled writes), one SseWriter, CORS, JSON bodies and body helpers, the n-choice fan-out, the tool plan, shared error wording, the parse-worker pool for large bodies',
    tier: 'front-end kit',
    imports: [...FRONT_END_BASE, 'src/security', 'src/tool-calls', 'src/assistant-output', 'src/threads', 'src/parse-worker'],
  },
  [GRPC_KIT]: {
    holds:
      'front-end kit, owned by no gRPC front end, and the seam to @grpc/grpc-js and @grpc/proto-loader (the only module loading them; the front ends import their types): the one gRPC server (both services on one port, drained on stop), the access interceptor and its RPC table, errors → gRPC status, grpc.health.v1, proto loading, flow control (the stalled-writes bound, from the kit)',
    tier: 'front-end kit',
    imports: ['src/contracts', 'src/errors.ts', 'src/serving', 'src/security', KIT],
  },
  [TRITON_GENERATION]: {
    holds:
      'front-end kit: the LLM lookup and a Triton LLM request run on the LLM it names (generate, ModelStreamInfer; the translation itself is src/triton-llm), shared by the KServe front ends and the WebSocket',
    tier: 'front-end kit',
    imports: [...FRONT_END_BASE, 'src/triton-llm'],
  },
  'openai-compat': {
    holds: "front end: OpenAI's API (chat / completions, embeddings, Responses, models) and vLLM's /tokenize, /detokenize, render and sleep routes",
    tier: 'front end',
    imports: [...FRONT_END_BASE, KIT, 'src/tool-calls', 'src/assistant-output'],
  },
  'anthropic-compat': { holds: "front end: Anthropic's Messages API (create / stream, count_tokens)", tier: 'front end', imports: [...FRONT_END_BASE, KIT, 'src/assistant-output'] },
  // The config endpoint prints ModelConfig as Triton does, from the schema the repository parses it with.
  'src/server/http': {
    holds: "front end: KServe v2 REST and Triton's extensions (generate / generate_stream, repository, statistics, settings), its tensor codecs",
    tier: 'front end',
    imports: [...FRONT_END_BASE, KIT, TRITON_GENERATION, 'src/triton-llm', 'src/repository/config'],
  },
  'src/server/grpc': {
    holds: "front end: KServe v2 gRPC (inference.GRPCInferenceService, ModelStreamInfer included), its tensor codecs, on the gRPC kit's server",
    tier: 'front end',
    imports: [...FRONT_END_BASE, GRPC_KIT, TRITON_GENERATION],
  },
  'src/server/grpc-generation': {
    holds: "front end: conveyor.v1.GenerationService/Generate (protos/generate.proto), server-streaming generation on the gRPC kit's server",
    tier: 'front end',
    imports: [...FRONT_END_BASE, GRPC_KIT, TRITON_GENERATION],
  },
  'src/server/websocket': { holds: 'front end: /v1/ws, many generations multiplexed on one socket', tier: 'front end', imports: [...FRONT_END_BASE, KIT, TRITON_GENERATION] },
  'src/server/ui': { holds: "front end: the built-in dashboard and playground's routes and the recent errors they show", tier: 'front end', imports: [...FRONT_END_BASE, KIT] },
  'src/server/metrics': { holds: 'front end: GET /metrics on the HTTP port (the metrics port itself is src/metrics)', tier: 'front end', imports: [KIT] },
  'src/shutdown.ts': { holds: 'the drain on shutdown: readiness off, in-flight work finishes, then final errors, then the front ends close', imports: ['src/errors.ts'] },
  'src/main.ts': {
    holds: "the composition root: options → repository → model manager → backends → front ends on their ports (the HTTP app; the gRPC server from both gRPC front ends' services) → metrics port",
    tier: 'composition root',
    imports: [
      'src/contracts',
      'src/errors.ts',
      'src/config',
      'src/security',
      'src/metrics',
      'src/repository',
      'src/serving',
      KIT,
      GRPC_KIT,
      TRITON_GENERATION,
      'openai-compat',
      'anthropic-compat',
      'src/server/http',
      'src/server/grpc',
      'src/server/grpc-generation',
      'src/server/websocket',
      'src/server/ui',
      'src/server/metrics',
      'src/shutdown.ts',
    ],
  },
  'src/cli.ts': { holds: '`conveyor serve …`, `conveyor convert …`, `conveyor pull …`', tier: 'composition root', imports: ['src/config', 'src/main.ts', 'src/shutdown.ts', 'src/hub', 'models'] },
  // Model builders and the default repository; their own boundaries are RULES in import-boundaries.test.ts.
  models: { holds: 'model builders and the default repository', imports: [] },
};

/**
 * Known edges that break the table, each removed by the change named beside it: the lead deletes
 * an entry when merging that change. The test fails on an entry that matches no import, so none
 * outlives its fix.
 */
export const PENDING: readonly { readonly file: string; readonly target: string; readonly until: string }[] = [];

/** The layer a repository-relative path belongs to, or undefined when none does. */
export function layerOf(path: string): string | undefined {
  let best: string | undefined;
  for (const key of Object.keys(LAYERS)) {
    if ((path === key || path.startsWith(`${key}/`)) && (best === undefined || key.length > best.length)) best = key;
  }
  return best;
}

export const layersOfTier = (tier: Tier): string[] => Object.keys(LAYERS).filter((name) => LAYERS[name]!.tier === tier);

/**
 * The top-level folder a layer lives in, for the cycle check between folders: `src/…` is `src`,
 * `openai-compat` is itself, and the composition root (src/main.ts, src/cli.ts) is a node of its
 * own: it imports every front end, and the top-level front ends import src/, so counted inside
 * src/ it would make every such import a cycle; counted apart, a cycle is one that something
 * else in src/ closes.
 */
export function rootFolderOf(layer: string): string {
  if (LAYERS[layer]?.tier === 'composition root') return 'composition root';
  return layer.split('/')[0]!;
}

/** Relative specifiers of static, type-only, dynamic and re-export imports, and worker-entry URLs. */
export function dependencySpecifiers(source: string): string[] {
  const pattern =
    /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|(?:^|[\s;])import\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|new\s+URL\(\s*['"]([^'"]+\.m?[jt]s)['"]\s*,\s*import\.meta\.url\s*\)/gm;
  return [...source.matchAll(pattern)].map((m) => m[1] ?? m[2] ?? m[3] ?? m[4]!).filter((s) => s.startsWith('.'));
}

/** The repository-relative file a relative specifier names (.js written for a .ts file maps back). */
export function resolveSpecifier(file: string, specifier: string): string {
  return normalize(join(dirname(file), specifier)).replace(/\.js$/, '.ts');
}

/** Why `file` may not import `specifier`, or null when the table allows it. */
export function layerViolation(file: string, specifier: string): string | null {
  const from = layerOf(file);
  const target = resolveSpecifier(file, specifier);
  const to = layerOf(target);
  const edge = `${file} → ${specifier}`;
  if (from === undefined) return `${edge}: ${file} belongs to no layer (add its folder to LAYERS)`;
  if (to === undefined) return `${edge}: ${target} belongs to no layer`;
  if (from === to) return null;
  if (!LAYERS[from]!.imports.includes(to)) return `${edge}: ${from} may not import ${to} (it may import: ${LAYERS[from]!.imports.join(', ') || 'nothing'})`;
  const entry = LAYERS[to]!.entry;
  if (entry !== undefined && target !== `${to}/${entry}`) return `${edge}: ${to} runs on its own thread; other layers import only ${to}/${entry}`;
  return null;
}

export interface Edge {
  readonly file: string;
  readonly specifier: string;
  readonly from: string;
  readonly to: string;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) return sourceFiles(path);
    return /\.(ts|mts|js|mjs)$/.test(name) ? [path] : [];
  });
}

/** The server's files: everything the table must place. */
export const layeredFiles = (): string[] => ['src', 'openai-compat', 'anthropic-compat'].flatMap(sourceFiles).map((f) => relative(ROOT, join(ROOT, f)));

/** Every import between two different layers (or into none), file by file. */
export function crossLayerImports(files: readonly string[] = layeredFiles()): Edge[] {
  return files.flatMap((file) =>
    dependencySpecifiers(readFileSync(join(ROOT, file), 'utf8')).flatMap((specifier) => {
      const from = layerOf(file) ?? file;
      const to = layerOf(resolveSpecifier(file, specifier)) ?? resolveSpecifier(file, specifier);
      return from === to ? [] : [{ file, specifier, from, to }];
    }),
  );
}

export const isPending = (edge: Edge): boolean => PENDING.some((p) => p.file === edge.file && p.target === resolveSpecifier(edge.file, edge.specifier));

/** Strongly connected components with more than one node (Tarjan): each one is a cycle. */
export function cycles(graph: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1) found.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

export function graphOf(edges: Iterable<{ readonly from: string; readonly to: string }>): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    if (!graph.has(from)) graph.set(from, new Set());
    graph.get(from)!.add(to);
  }
  return graph;
}

/** The table as docs/architecture.md shows it: each layer, what it holds, what it may import and what it does import today. */
export function layersMarkdown(edges: readonly Edge[] = crossLayerImports()): string {
  const used = graphOf(edges);
  const rows = Object.entries(LAYERS).map(([name, layer]) => {
    const today = [...(used.get(name) ?? [])].sort();
    const entry = layer.entry ? ` (entered only through ${layer.entry})` : '';
    return `| \`${name}\`${entry} | ${layer.holds} | ${layer.imports.join(', ') || '—'} | ${today.join(', ') || '—'} |`;
  });
  return ['| Layer | Holds | May import | Imports today |', '|---|---|---|---|', ...rows].join('\n');
}

/** docs/architecture.md keeps its layers table between these markers; the test checks it is this table. */
export const DOC_TABLE_MARKERS = ['<!-- layers table: generated by `npx tsx test/unit/architecture/layers.ts --doc` -->', '<!-- end of layers table -->'] as const;

/** The table docs/architecture.md shows: each layer, what it holds and what it may import (not today's imports, which churn). */
export function layersDocTable(): string {
  const rows = Object.entries(LAYERS).map(([name, layer]) => {
    const entry = layer.entry ? ` (entered only through \`${layer.entry}\`)` : '';
    return `| \`${name}\`${entry} | ${layer.holds} | ${layer.imports.map((i) => `\`${i}\``).join(', ') || '—'} |`;
  });
  return ['| layer | holds | may import |', '|---|---|---|', ...rows].join('\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const edges = crossLayerImports();
  if (process.argv.includes('--doc')) {
    console.log([DOC_TABLE_MARKERS[0], layersDocTable(), DOC_TABLE_MARKERS[1]].join('\n'));
    process.exit(0);
  }
  console.log(layersMarkdown(edges));
  console.log('\nFolder graph (importer → imported: number of imports):');
  const counts = new Map<string, number>();
  for (const e of edges) counts.set(`${e.from} → ${e.to}`, (counts.get(`${e.from} → ${e.to}`) ?? 0) + 1);
  for (const [edge, n] of [...counts].sort()) console.log(`  ${edge}: ${n}`);
}
