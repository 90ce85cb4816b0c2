// Measures the ONNX Runtime CPU formulations of a weight-quantized MatMul on the bench decoder's
// shapes, so the choice in quantized-matmul.ts rests on numbers from this runtime and machine.
// Run: npx tsx kernels/measure-quantized-matmul.ts   (results go into kernels/README.md by hand)
//
// Method: one session per candidate and weight shape (a dynamic row count, so M = 1, 8, 32 share
// it), warm-up runs, then rounds that run every candidate once in turn (A,B,C, B,C,A, …) so drift
// and neighbours' load hit all candidates alike; medians and per-round speed-ups are reported.

import os from 'node:os';
import * as ort from 'onnxruntime-node';
import { GraphBuilder, MS_DOMAIN } from './onnx/graph-builder.js';
import { SeededRandom } from './onnx/random.js';
import { blockCount, quantizeRows } from './quantized-matmul.js';

const THREADS = 2;
const ROWS = [1, 8, 32] as const;

/** (K in, N out) of the bench decoder's projections; lm_head dominates a decode step. */
const SHAPES: readonly { name: string; k: number; n: number }[] = [
  { name: 'q/o 512→512', k: 512, n: 512 },
  { name: 'k/v 512→128', k: 512, n: 128 },
  { name: 'gate/up 512→1408', k: 512, n: 1408 },
  { name: 'down 1408→512', k: 1408, n: 512 },
  { name: 'lm_head 512→151936', k: 512, n: 151936 },
];

interface Candidate {
  readonly name: string;
  build(g: GraphBuilder, x: string, w: Float32Array, k: number, n: number): string;
}

/** Per-output-column symmetric int8 of a [k, n] weight (the layout of (a), (b), (c)). */
function perColumnInt8(w: Float32Array, k: number, n: number): { q: Int8Array; scales: Float32Array } {
  const scales = new Float32Array(n);
  for (let i = 0; i < k; i++) for (let j = 0; j < n; j++) scales[j] = Math.max(scales[j]!, Math.abs(w[i * n + j]!));
  for (let j = 0; j < n; j++) scales[j] = scales[j]! > 0 ? scales[j]! / 127 : 1;
  const q = new Int8Array(k * n);
  for (let i = 0; i < k; i++) for (let j = 0; j < n; j++) q[i * n + j] = Math.round(w[i * n + j]! / scales[j]!);
  return { q, scales };
}

function transpose(w: Float32Array, k: number, n: number): Float32Array {
  const t = new Float32Array(w.length);
  for (let i = 0; i < k; i++) for (let j = 0; j < n; j++) t[j * k + i] = w[i * n + j]!;
  return t;
}

function int8Initializers(g: GraphBuilder, w: Float32Array, k: number, n: number): { q: string; scales: string; zero: string } {
  const { q, scales } = perColumnInt8(w, k, n);
  return {
    q: g.initializer('w_q', { dtype: 'int8', dims: [k, n], data: q }),
    scales: g.initializer('w_scale', { dtype: 'float32', dims: [n], data: scales }),
    zero: g.initializer('w_zero', { dtype: 'int8', dims: [n], data: new Int8Array(n) }),
  };
}

function matMulNBits(block: number, accuracyLevel: number): Candidate {
  return {
    name: `MatMulNBits8 b${block} acc${accuracyLevel}`,
    build(g, x, w, k, n) {
      const q = quantizeRows(transpose(w, k, n), n, k, block);
      const b = g.initializer('w_q', { dtype: 'uint8', dims: [n, blockCount(q), block], data: q.values });
      const s = g.initializer('w_scale', { dtype: 'float32', dims: [n, blockCount(q)], data: q.scales });
      const attrs = { K: k, N: n, bits: 8, block_size: block, accuracy_level: accuracyLevel };
      return g.op1('MatMulNBits', [x, b, s], attrs, { domain: MS_DOMAIN });
    },
  };
}

// At load, ORT 1.30 rewrites (a) into MatMulNBits (bits 8, block 32, accuracy_level 4) and (b)
// into DynamicQuantizeMatMul with a zero-point input, so (a) ≈ "b32 acc4" and (b) ≈ (c).
const CANDIDATES: readonly Candidate[] = [
  { name: 'fp32 MatMul', build: (g, x, w, k, n) => g.op1('MatMul', [x, g.weight('w', [k, n], w)]) },
  {
    name: '(a) DequantizeLinear→MatMul',
    build(g, x, w, k, n) {
      const { q, scales, zero } = int8Initializers(g, w, k, n);
      return g.op1('MatMul', [x, g.op1('DequantizeLinear', [q, scales, zero], { axis: 1 })]);
    },
  },
  {
    name: '(b) DynQuantLinear→MatMulInteger',
    build(g, x, w, k, n) {
      const { q, scales, zero } = int8Initializers(g, w, k, n);
      const [xq, xScale, xZero] = g.op('DynamicQuantizeLinear', [x], {}, { outputs: 3 });
      const acc = g.op1('MatMulInteger', [xq!, q, xZero!, zero]);
      return g.op1('Mul', [g.op1('Cast', [acc], { to: 1 }), g.op1('Mul', [xScale!, scales])]);
    },
  },
  {
    name: '(c) DynamicQuantizeMatMul',
    build(g, x, w, k, n) {
      const { q, scales } = int8Initializers(g, w, k, n);
      return g.op1('DynamicQuantizeMatMul', [x, q, scales], {}, { domain: MS_DOMAIN });
    },
  },
  // accuracy_level 0 (fp32 compute) is left out: it runs as if it dequantized the whole weight on
  // every call (1.2–1.6 s per lm_head call in a first run), so it is no contender.
  matMulNBits(32, 4),
  matMulNBits(128, 4),
  matMulNBits(256, 4),
];

async function session(candidate: Candidate, w: Float32Array, k: number, n: number): Promise<ort.InferenceSession> {
  const g = new GraphBuilder('measure');
  const x = g.input('x', 'float32', ['rows', k]);
  g.output(candidate.build(g, x, w, k, n), 'y', 'float32', ['rows', n]);
  return ort.InferenceSession.create(g.toModel().toBytes(), { intraOpNumThreads: THREADS, interOpNumThreads: 1, logSeverityLevel: 3 });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * Interleaved rounds until the time budget or the round cap; each round starts at the next
 * candidate so none always runs right after a given neighbour. Returns the median ms per
 * candidate and the median of its per-round speed-up over candidate 0 (fp32): a round's runs are
 * milliseconds apart, so the ratio cancels load that drifts over seconds, which medians alone
 * do not on this shared machine.
 */
async function timeRows(sessions: ort.InferenceSession[], x: ort.Tensor, budgetMs: number): Promise<{ ms: number; speedUp: number }[]> {
  const feeds = { x };
  for (let i = 0; i < 3; i++) for (const s of sessions) await s.run(feeds);
  const samples = sessions.map(() => [] as number[]);
  const start = performance.now();
  for (let round = 0; round < 400 && (round < 7 || performance.now() - start < budgetMs); round++) {
    for (let j = 0; j < sessions.length; j++) {
      const c = (round + j) % sessions.length;
      const t0 = performance.now();
      await sessions[c]!.run(feeds);
      samples[c]!.push(performance.now() - t0);
    }
  }
  return samples.map((times) => ({ ms: median(times), speedUp: median(times.map((t, round) => samples[0]![round]! / t)) }));
}

function relativeError(actual: Float32Array, reference: Float32Array): number {
  let maxDiff = 0;
  let maxRef = 1e-30;
  for (let i = 0; i < reference.length; i++) {
    maxDiff = Math.max(maxDiff, Math.abs(actual[i]! - reference[i]!));
    maxRef = Math.max(maxRef, Math.abs(reference[i]!));
  }
  return maxDiff / maxRef;
}

async function runAll(sessions: ort.InferenceSession[], x: Float32Array, rows: number, k: number): Promise<Float32Array[]> {
  const outputs: Float32Array[] = [];
  for (const s of sessions) outputs.push((await s.run({ x: new ort.Tensor('float32', x, [rows, k]) })).y!.data as Float32Array);
  return outputs;
}

/**
 * Per candidate: "error / drift / outlier error". Error: against the fp32 MatMul (candidate 0) on
 * a batch of rows of different sizes. Drift: how far row 0 moves when it runs alone instead of in
 * that batch (per-tensor activation quantization makes a sequence's logits depend on its batch
 * neighbours). Outlier error: the same batch with one channel ×30 in every row, the systematic
 * outlier features trained LLMs have.
 */
async function accuracy(sessions: ort.InferenceSession[], x: Float32Array, rows: number, k: number): Promise<string[]> {
  const batch = await runAll(sessions, x, rows, k);
  const alone = await runAll(sessions, x.slice(0, k), 1, k);
  const outlier = x.map((v, i) => (i % k === 7 ? v * 30 : v));
  const withOutlier = await runAll(sessions, outlier, rows, k);
  return batch.map((y, c) => {
    const error = relativeError(y, batch[0]!);
    const drift = relativeError(alone[c]!, y.subarray(0, alone[c]!.length));
    const outlierError = relativeError(withOutlier[c]!, withOutlier[0]!);
    return [error, drift, outlierError].map((e) => e.toExponential(1)).join(' / ');
  });
}

async function measureShape(shape: (typeof SHAPES)[number], random: SeededRandom): Promise<{ times: string[]; errors: string }> {
  const w = random.uniformWithStd(shape.k * shape.n, 0.02);
  const sessions: ort.InferenceSession[] = [];
  for (const c of CANDIDATES) sessions.push(await session(c, w, shape.k, shape.n));
  const times: string[] = [];
  const budgetMs = shape.n > 100_000 ? 20_000 : 1_500;
  for (const rows of ROWS) {
    const x = new ort.Tensor('float32', random.uniformWithStd(rows * shape.k, 1), [rows, shape.k]);
    const cells = (await timeRows(sessions, x, budgetMs)).map(({ ms, speedUp }) => `${ms.toFixed(3)} ×${speedUp.toFixed(2)}`);
    times.push(`| ${shape.name} | ${rows} | ${cells.join(' | ')} |`);
    console.error(times.at(-1));
  }
  // Rows of different sizes, as the hidden states of different tokens are.
  const rows = 32;
  const x = random.uniformWithStd(rows * shape.k, 1).map((v, i) => v * (1 + (Math.floor(i / shape.k) % 4)));
  const errors = `| ${shape.name} | ${(await accuracy(sessions, x, rows, shape.k)).join(' | ')} |`;
  await Promise.all(sessions.map((s) => s.release()));
  return { times, errors };
}

async function main(): Promise<void> {
  const random = new SeededRandom(20261129);
  const started = performance.now();
  const names = CANDIDATES.map((c) => c.name).join(' | ');
  const rule = CANDIDATES.map(() => '---').join('|');
  const times = [`| shape | M | ${names} |`, `|---|---|${rule}|`];
  const errors = [`| shape (M = 32) | ${names} |`, `|---|${rule}|`];
  for (const shape of SHAPES) {
    const result = await measureShape(shape, random);
    times.push(...result.times);
    errors.push(result.errors);
  }
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  console.log(`onnxruntime-node 1.30, ${cpu}, ${os.cpus().length} cores, intraOpNumThreads ${THREADS}, ${new Date().toISOString().slice(0, 10)}`);
  console.log('median ms per run() (includes the binding overhead) ×median per-round speed-up over fp32\n');
  console.log(times.join('\n'));
  console.log('\nerror vs fp32 / drift of row 0 alone vs in the batch / error with an outlier channel (max |diff| / max |ref|)\n');
  console.log(errors.join('\n'));
  console.log(`\ntotal ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

await main();
