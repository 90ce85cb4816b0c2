// `conveyor convert` held to Hugging Face transformers itself: tiny random checkpoints built by
// each family's own transformers class (test/support/hf/make_checkpoints.py), in the config.json
// layout transformers 5 writes (rope_parameters) and in the 4.x one (rope_theta, rope_scaling...),
// converted (fp32, with the paged graphs) and served from one real server on every attention
// backend. For each prompt (1 to 300 token ids) the 24 greedy tokens must be transformers' own and
// the first token's top-5 logprobs within 1e-4 of its log-softmax. When both layouts convert to
// the same bytes the export is served once; when they differ, each is served and checked.
// ASSERTED lists the case/layout entries held to that; the others (architectures and config
// keys the converter does not read yet) are converted and served where they can be and reported.
// fp16 / int8 / q4 conversions of two cases are served too and their agreement reported (fp16's
// first token must match where transformers' lead is clear; the others must only run).
import { execFile } from 'node:child_process';
import { readdir, readFile, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WeightPrecision } from '../../kernels/linear.js';
import { convertCheckpoint } from '../../models/convert/convert.js';
import { MODEL_METADATA_FILES } from '../../src/hub/select.js';
import { hfPython } from '../support/hf-python.js';
import { loadModel, startTestServer, type TestServer } from '../support/server.js';

/** Every checkpoint make_checkpoints.py builds, each in both config.json layouts. */
const ALL_CASES = ['llama', 'llama-tied', 'llama3-scaled', 'mistral', 'qwen2', 'qwen3', 'gemma3', 'phi3', 'phi3-longrope', 'smollm3', 'granite', 'olmo2'] as const;
const LAYOUTS = ['v5', 'v4'] as const;
/**
 * The `case/layout` entries this test asserts. Commented out: what `conveyor convert` does not
 * convert (or not as transformers computes) yet, with today's result; enable each as it lands.
 * Those are still converted, served and reported (not asserted), so the output shows when one
 * starts to agree.
 */
const ASSERTED: readonly string[] = [
  ...['llama', 'llama-tied', 'llama3-scaled', 'mistral', 'qwen2', 'qwen3', 'gemma3', 'phi3', 'smollm3', 'granite', 'olmo2'].flatMap((c) => LAYOUTS.map((layout) => `${c}/${layout}`)),
  // 'phi3-longrope/v5', 'phi3-longrope/v4': converts with the short factors only and serves a 64-token context (its note): prompts to 40 agree, the 130-token one is refused where transformers switches to the long factors
];
/** The repository name's suffix for each attention backend. */
const BACKENDS = { pkv: 'past_key_values', paged: 'paged', 'paged-onnx': 'paged_onnx' } as const;
/** Reduced-precision conversions (of entries that agree in fp32): served on the Optimum graph, agreement reported. */
const QUANTIZED_ENTRIES = ['llama/v4', 'qwen3/v4'] as const;
const QUANTIZED: readonly WeightPrecision[] = ['fp16', 'int8', 'q4'];
const LOGPROB_TOLERANCE = 1e-4;

interface Run {
  readonly prompt: number[];
  readonly tokens: number[];
  readonly top_ids: number[];
  readonly top_logprobs: number[];
  /** transformers' narrowest top-1 lead (logits) over the 24 steps. */
  readonly min_margin: number;
}
interface Reference {
  readonly transformers: string;
  readonly cases: Record<string, { readonly architecture: string; readonly runs: Run[] }>;
}
interface Served {
  readonly tokens: number[];
  readonly top: Map<number, number>;
  /** Why the request failed (then no tokens). */
  readonly error?: string;
}
/** One converted export: the case, the layouts it stands for (one, or both when they converted to the same bytes), served as `${name}-${backend tag}`. */
interface Export {
  readonly name: string;
  readonly caseName: string;
  readonly layouts: readonly string[];
  readonly dir: string;
}

const run = promisify(execFile);
const py = await hfPython();
const root = await mkdtemp(join(tmpdir(), 'convert-hf-parity-'));
let server: TestServer | undefined;
let reference: Reference;
const exports: Export[] = [];
/** `case/layout` → why it did not convert (no export made). */
const convertErrors = new Map<string, string>();
const report: string[] = [];
const started = Date.now();

afterAll(async () => {
  await server?.stop();
  await rm(root, { recursive: true, force: true });
  if (report.length > 0) console.log(`convert vs transformers ${reference?.transformers} (${((Date.now() - started) / 1000).toFixed(1)} s):\n${report.sort().join('\n')}`);
});

/** Every file under onnx/, by relative path: two conversions are the same export when these are equal. */
async function onnxFiles(dir: string): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  for (const entry of await readdir(join(dir, 'onnx'), { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    files.set(relative(dir, path), await readFile(path));
  }
  return files;
}

function sameFiles(a: Map<string, Buffer>, b: Map<string, Buffer>): boolean {
  return a.size === b.size && [...a].every(([path, bytes]) => b.get(path)?.equals(bytes) === true);
}

function modelConfig(name: string, backend: string, precision: WeightPrecision): string {
  return `name: "${name}"
backend: "llm"
max_batch_size: 0
model_transaction_policy { decoupled: true }
instance_group [ { count: 1 kind: KIND_CPU } ]
parameters: { key: "precision" value: { string_value: "${precision}" } }
parameters: { key: "attention_backend" value: { string_value: "${backend}" } }
parameters: { key: "intra_op_thread_count" value: { string_value: "1" } }
parameters: { key: "kv_cache_bytes" value: { string_value: "8388608" } }
parameters: { key: "max_num_seqs" value: { string_value: "8" } }
`;
}

/** A repository entry whose version 1 is the converted directory. */
async function addExport(repository: string, name: string, dir: string, backend: string, precision: WeightPrecision = 'fp32'): Promise<void> {
  await mkdir(join(repository, name), { recursive: true });
  await writeFile(join(repository, name, 'config.pbtxt'), modelConfig(name, backend, precision));
  await symlink(dir, join(repository, name, '1'), 'dir');
}

/** The id a token's text names: the tokenizer's words are t0..t511. */
function idOf(text: string): number {
  const match = /^\s*t(\d+)$/.exec(text);
  if (!match) throw new Error(`token text ${JSON.stringify(text)} is not one of t0..t511`);
  return Number(match[1]);
}

async function complete(model: string, prompt: readonly number[]): Promise<Served> {
  const response = await fetch(`${server!.http}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, prompt, max_tokens: 24, temperature: 0, logprobs: 5, ignore_eos: true }),
  });
  const body = (await response.json()) as { choices?: { logprobs: { tokens: string[]; top_logprobs: Record<string, number>[] } }[]; error?: { message: string } };
  if (!response.ok || !body.choices) throw new Error(`${model}: HTTP ${response.status} ${body.error?.message ?? ''}`);
  const { tokens, top_logprobs } = body.choices[0]!.logprobs;
  return { tokens: tokens.map(idOf), top: new Map(Object.entries(top_logprobs[0] ?? {}).map(([text, lp]) => [idOf(text), lp])) };
}

/** Where served and transformers part: equal leading tokens, and the first token's largest logprob gap over transformers' top 5. */
function compare(served: Served, expected: Run): { equal: number; gap: number } {
  let equal = 0;
  while (equal < expected.tokens.length && served.tokens[equal] === expected.tokens[equal]) equal++;
  let gap = 0;
  expected.top_ids.forEach((id, i) => (gap = Math.max(gap, Math.abs((served.top.get(id) ?? Number.NEGATIVE_INFINITY) - expected.top_logprobs[i]!))));
  return { equal, gap };
}

beforeAll(async () => {
  if ('skip' in py) return;
  const hf = join(root, 'hf');
  await run(py.python, [join(import.meta.dirname, '../support/hf/make_checkpoints.py'), hf], { timeout: 180_000, maxBuffer: 16 << 20 });
  reference = JSON.parse(await readFile(join(hf, 'reference.json'), 'utf8')) as Reference;
  const repository = join(root, 'repository');
  await mkdir(repository);
  for (const caseName of ALL_CASES) {
    const converted = new Map<string, { dir: string; files: Map<string, Buffer> }>();
    for (const layout of LAYOUTS) {
      const dir = join(root, 'out', `${caseName}-${layout}`);
      try {
        await convertCheckpoint(join(hf, caseName, layout), dir, { metadataFiles: MODEL_METADATA_FILES, paged: true });
        converted.set(layout, { dir, files: await onnxFiles(dir) });
      } catch (error) {
        convertErrors.set(`${caseName}/${layout}`, (error as Error).message);
      }
    }
    // Both layouts converted to the same bytes: one export stands for both.
    const [v5, v4] = [converted.get('v5'), converted.get('v4')];
    const same = v5 !== undefined && v4 !== undefined && sameFiles(v5.files, v4.files);
    const served = same ? [{ layouts: ['v5', 'v4'], dir: v5.dir, suffix: '' }] : [...converted].map(([layout, c]) => ({ layouts: [layout], dir: c.dir, suffix: `-${layout}` }));
    for (const { layouts, dir, suffix } of served) {
      exports.push({ name: `${caseName}${suffix}`, caseName, layouts, dir });
      for (const [tag, backend] of Object.entries(BACKENDS)) await addExport(repository, `${caseName}${suffix}-${tag}`, dir, backend);
    }
  }
  for (const entry of QUANTIZED_ENTRIES) {
    for (const precision of QUANTIZED) {
      const dir = join(root, 'out', `${entry.replace('/', '-')}-${precision}`);
      await convertCheckpoint(join(hf, entry), dir, { metadataFiles: MODEL_METADATA_FILES, precision });
      await addExport(repository, quantizedName(entry, precision), dir, 'past_key_values', precision);
    }
  }
  server = await startTestServer(repository, ['--model-control-mode', 'explicit']);
}, 300_000);

const caseOf = (entry: string): string => entry.split('/')[0]!;
const quantizedName = (entry: string, precision: WeightPrecision): string => `${entry.replace('/', '-')}-${precision}`;
const tagged = (layouts: readonly string[], caseName: string): string => `${caseName}/${layouts.join('=')}`.padEnd(20);

/** Loads `model` (once, however many tests ask) and answers every prompt of `caseName`, all at once. */
const answers = new Map<string, Promise<Served[]>>();
function answersOf(model: string, caseName: string): Promise<Served[]> {
  let pending = answers.get(model);
  if (!pending) {
    pending = loadModel(server!, model).then(({ status, error }) => {
      if (status !== 200) throw new Error(`load failed (${status}): ${error}`);
      // A refused prompt (past the served context, say) is an answer of no tokens, reported with its reason.
      return Promise.all(reference.cases[caseName]!.runs.map((r) => complete(model, r.prompt).catch((error: Error): Served => ({ tokens: [], top: new Map(), error: error.message }))));
    });
    answers.set(model, pending);
  }
  return pending;
}

/** Serves `caseName`'s exports on one backend and reports each; the problems of exports standing for an asserted entry. */
async function checkBackend(caseName: string, tag: string): Promise<string[]> {
  const problems: string[] = [];
  for (const e of exports.filter((x) => x.caseName === caseName)) {
    const asserted = e.layouts.some((layout) => ASSERTED.includes(`${caseName}/${layout}`));
    const note = asserted ? '' : ' (not asserted)';
    const model = `${e.name}-${tag}`;
    const runs = reference.cases[caseName]!.runs;
    let served: Served[];
    try {
      served = await answersOf(model, caseName);
    } catch (error) {
      report.push(`${tagged(e.layouts, caseName)} ${tag.padEnd(11)} FAILED${note}: ${(error as Error).message}`);
      if (asserted) problems.push(`${model}: ${(error as Error).message}`);
      continue;
    }
    const results = runs.map((r, i) => ({ ...compare(served[i]!, r), length: r.prompt.length, margin: r.min_margin, error: served[i]!.error }));
    const bad = results.filter((r) => r.equal < 24 || r.gap > LOGPROB_TOLERANCE);
    const detail = results.map((r) => `${r.length}:${r.error ? `refused (${r.error})` : `${r.equal}${r.gap > LOGPROB_TOLERANCE ? ` Δ${r.gap.toExponential(1)}` : ''}`}`).join(' ');
    const maxGap = Math.max(...results.map((r) => r.gap));
    report.push(
      `${tagged(e.layouts, caseName)} ${tag.padEnd(11)} ${bad.length === 0 ? 'agrees' : 'DIFFERS'}${note}: max Δlogprob ${maxGap.toExponential(1)}, equal tokens per prompt length ${detail}`,
    );
    if (asserted)
      for (const r of bad)
        problems.push(
          `${model}, prompt of ${r.length}: ${r.error ?? `${r.equal}/24 tokens equal`}, first-token logprob gap ${r.gap.toExponential(2)} (transformers' narrowest lead ${r.margin.toFixed(4)})`,
        );
  }
  return problems;
}

const assertedCases = [...new Set(ASSERTED.map(caseOf))];
const reportedCases = ALL_CASES.filter((c) => !assertedCases.includes(c));

describe.skipIf('skip' in py)('conveyor convert agrees with Hugging Face transformers', () => {
  if ('skip' in py) console.log(`skipped: ${py.skip}`);

  it.each(ASSERTED)('%s converts', (entry) => {
    expect(convertErrors.get(entry), entry).toBeUndefined();
  });

  // One test per case and backend, all started together: loads and requests overlap.
  it.concurrent.each(assertedCases.flatMap((c) => Object.keys(BACKENDS).map((tag) => [c, tag] as const)))(
    '%s on %s: 24 greedy tokens and top-5 logprobs as transformers',
    async (caseName, tag) => {
      const problems = await checkBackend(caseName, tag);
      expect(problems, problems.join('\n')).toEqual([]);
    },
    240_000,
  );

  it.concurrent('the cases not asserted yet: converted and served where they can be, reported', async () => {
    for (const [entry, error] of convertErrors) if (!ASSERTED.includes(entry)) report.push(`${entry.padEnd(20)} convert FAILED (not asserted): ${error}`);
    await Promise.all(reportedCases.flatMap((c) => Object.keys(BACKENDS).map((tag) => checkBackend(c, tag))));
  }, 240_000);

  it.concurrent.each(QUANTIZED_ENTRIES.flatMap((e) => QUANTIZED.map((p) => [e, p] as const)))(
    '%s at %s: runs and mostly agrees (reported)',
    async (entry, precision) => {
      const runs = reference.cases[caseOf(entry)]!.runs;
      const served = await answersOf(quantizedName(entry, precision), caseOf(entry));
      const results = runs.map((r, i) => ({ ...compare(served[i]!, r), first: served[i]!.tokens[0] === r.tokens[0], lead: r.top_logprobs[0]! - r.top_logprobs[1]! }));
      const same = results.reduce((n, _, i) => n + served[i]!.tokens.filter((t, j) => t === runs[i]!.tokens[j]).length, 0);
      report.push(
        `${entry.padEnd(20)} ${precision.padEnd(11)} (reported): ${same}/${24 * runs.length} tokens equal, equal prefixes ${results.map((r) => r.equal).join(',')}, first token ${results.filter((r) => r.first).length}/${runs.length}, max Δlogprob ${Math.max(...results.map((r) => r.gap)).toExponential(1)}`,
      );
      expect(served.every((s) => s.tokens.length === 24)).toBe(true);
      // fp16's logits move by ~1e-3: its first token is transformers' wherever transformers' lead is clear of that.
      if (precision === 'fp16') for (const r of results) if (r.lead > 0.01) expect(r.first).toBe(true);
    },
    240_000,
  );
});
