// Measures the ONNX Runtime CPU formulations of decode attention over a long KV cache on the
// bench decoder's shapes (8 query heads, 2 kv heads, head_dim 64), so the paged graph's choice
// rests on numbers from this runtime and machine:
//   (a) Optimum: past_key_values fed as tensors, Concat into present (what model.onnx does);
//   (b) paged:   the block pool gathered by block tables (kernels/paged-attention.ts);
//   (c) GQA:     com.microsoft GroupQueryAttention with past and present sharing one buffer
//                (pre-allocated outputs aliasing the inputs): writes only the new position, but
//                needs one contiguous [kv_heads, max_len, head_dim] region per sequence — a slot
//                cache, not the block pool, so the block manager could not place blocks;
//   (d) native:  the fused C kernel (src/runtime/native/paged-attention.c,
//                through src/runtime/paged-attention-kernel.ts; skipped where it cannot be built) reading
//                (b)'s pool in place, the new K/V written into the pool first; its output checked
//                against (b)'s.
// Run: npx tsx bench/kernels/measure-paged-attention.ts [past=2048] [batch=32]   (results go into kernels/README.md by hand)
//
// One layer's attention alone (no projections), warm-up runs, then rounds that run every
// candidate once in turn so drift and neighbours' load hit all alike; medians reported.

import * as ort from 'onnxruntime-node';
import { causalGqaAttention, causalMask } from '../../kernels/causal-gqa-attention.js';
import { GraphBuilder, MS_DOMAIN } from '../../kernels/onnx/graph-builder.js';
import { SeededRandom } from '../../kernels/onnx/random.js';
import { pagedAttention, pagedAttentionPlan } from '../../kernels/paged-attention.js';
import { loadPagedAttentionKernel } from '../../src/runtime/paged-attention-kernel.js';

const [HEADS, KV_HEADS, DIM, BLOCK] = [8, 2, 64, 16];
const PAST = Number(process.argv[2] ?? 2048);
const BATCH = Number(process.argv[3] ?? 32);
const THREADS = 2;
const ROUNDS = 15;

type Feeds = Record<string, ort.Tensor>;
interface Candidate {
  readonly name: string;
  readonly run: () => Promise<unknown>;
}

const ortCandidate = (name: string, session: ort.InferenceSession, feeds: Feeds, fetches?: Record<string, ort.Tensor | null>): Candidate => ({
  name,
  run: () => (fetches ? session.run(feeds, fetches) : session.run(feeds)),
});

const random = new SeededRandom(3);
const floats = (n: number): Float32Array => random.uniformWithStd(n, 1);
const ints = (values: readonly number[]): ort.Tensor => new ort.Tensor('int64', BigInt64Array.from(values, BigInt), [values.length]);
const open = (g: GraphBuilder): Promise<ort.InferenceSession> =>
  ort.InferenceSession.create(g.toModel({ opset: 17 }).toBytes(), { intraOpNumThreads: THREADS, interOpNumThreads: 1, graphOptimizationLevel: 'all' });

async function optimum(): Promise<Candidate> {
  const g = new GraphBuilder('optimum_attention', 'float32');
  const q = g.input('q', 'float32', [BATCH, HEADS, 1, DIM]);
  const k = g.input('k', 'float32', [BATCH, KV_HEADS, 1, DIM]);
  const v = g.input('v', 'float32', [BATCH, KV_HEADS, 1, DIM]);
  const pastKey = g.input('past_key', 'float32', [BATCH, KV_HEADS, 'past', DIM]);
  const pastValue = g.input('past_value', 'float32', [BATCH, KV_HEADS, 'past', DIM]);
  const mask = g.input('attention_mask', 'int64', [BATCH, 'total']);
  const ids = g.input('input_ids', 'int64', [BATCH, 1]);
  const out = causalGqaAttention(g, { query: q, key: k, value: v, pastKey, pastValue, mask: causalMask(g, mask, ids, HEADS / KV_HEADS), numHeads: HEADS, numKvHeads: KV_HEADS, headDim: DIM });
  g.output(out.output, 'output', 'float32', [BATCH, 1, HEADS * DIM]);
  g.output(out.presentKey, 'present_key', 'float32', [BATCH, KV_HEADS, 'total', DIM]);
  g.output(out.presentValue, 'present_value', 'float32', [BATCH, KV_HEADS, 'total', DIM]);
  const past = [BATCH, KV_HEADS, PAST, DIM];
  const feeds: Feeds = {
    q: new ort.Tensor('float32', floats(BATCH * HEADS * DIM), [BATCH, HEADS, 1, DIM]),
    k: new ort.Tensor('float32', floats(BATCH * KV_HEADS * DIM), [BATCH, KV_HEADS, 1, DIM]),
    v: new ort.Tensor('float32', floats(BATCH * KV_HEADS * DIM), [BATCH, KV_HEADS, 1, DIM]),
    past_key: new ort.Tensor('float32', floats(BATCH * KV_HEADS * PAST * DIM), past),
    past_value: new ort.Tensor('float32', floats(BATCH * KV_HEADS * PAST * DIM), past),
    attention_mask: new ort.Tensor('int64', new BigInt64Array(BATCH * (PAST + 1)).fill(1n), [BATCH, PAST + 1]),
    input_ids: new ort.Tensor('int64', new BigInt64Array(BATCH), [BATCH, 1]),
  };
  return ortCandidate('(a) Optimum past + Concat', await open(g), feeds);
}

async function paged(): Promise<Candidate & { native: () => Promise<Candidate | undefined> }> {
  const g = new GraphBuilder('paged_attention', 'float32');
  const q = g.input('q', 'float32', ['n', HEADS, DIM]);
  const k = g.input('k', 'float32', ['n', KV_HEADS, DIM]);
  const v = g.input('v', 'float32', ['n', KV_HEADS, DIM]);
  const keyCache = g.input('key_cache', 'float32', [KV_HEADS, 'num_blocks', 'block_size', DIM]);
  const valueCache = g.input('value_cache', 'float32', [KV_HEADS, 'num_blocks', 'block_size', DIM]);
  const [queryStarts, queryLengths, pastLengths] = ['query_starts', 'query_lengths', 'past_lengths'].map((name) => g.input(name, 'int64', ['s'])) as [string, string, string];
  const blockTables = g.input('block_tables', 'int64', ['s', 'max_blocks']);
  const ids = g.input('input_ids', 'int64', ['n']);
  const plan = pagedAttentionPlan(g, { queryStarts, queryLengths, pastLengths, blockTables, keyCache, flatTokens: ids, groups: HEADS / KV_HEADS });
  g.output(pagedAttention(g, { query: q, key: k, value: v, keyCache, valueCache, plan, numHeads: HEADS, numKvHeads: KV_HEADS, headDim: DIM }), 'output', 'float32', ['n', HEADS * DIM]);
  const blocksPerSeq = Math.ceil(PAST / BLOCK);
  // (d) writes each sequence's new position into the pool: one more block per sequence than (b) reads.
  const numBlocks = BATCH * (blocksPerSeq + 1) + 8;
  // Shuffled block ids, as a pool in use looks.
  const order = Array.from({ length: numBlocks }, (_, i) => i).sort(() => random.next() - 0.5);
  const pool = [KV_HEADS, numBlocks, BLOCK, DIM];
  const feeds: Feeds = {
    q: new ort.Tensor('float32', floats(BATCH * HEADS * DIM), [BATCH, HEADS, DIM]),
    k: new ort.Tensor('float32', floats(BATCH * KV_HEADS * DIM), [BATCH, KV_HEADS, DIM]),
    v: new ort.Tensor('float32', floats(BATCH * KV_HEADS * DIM), [BATCH, KV_HEADS, DIM]),
    key_cache: new ort.Tensor('float32', floats(KV_HEADS * numBlocks * BLOCK * DIM), pool),
    value_cache: new ort.Tensor('float32', floats(KV_HEADS * numBlocks * BLOCK * DIM), pool),
    query_starts: ints(Array.from({ length: BATCH }, (_, i) => i)),
    query_lengths: ints(new Array<number>(BATCH).fill(1)),
    past_lengths: ints(new Array<number>(BATCH).fill(PAST)),
    block_tables: new ort.Tensor('int64', BigInt64Array.from(order.slice(0, BATCH * blocksPerSeq), BigInt), [BATCH, blocksPerSeq]),
    input_ids: new ort.Tensor('int64', new BigInt64Array(BATCH), [BATCH]),
  };
  const session = await open(g);
  return { ...ortCandidate('(b) paged: pool gathered by block tables', session, feeds), native: () => nativeCandidate(session, feeds, numBlocks, blocksPerSeq) };
}

/** (d): the fused kernel on (b)'s inputs (the new K/V written into the pool, then attention over it), or undefined (with the reason printed) where it cannot be had. */
async function nativeCandidate(session: ort.InferenceSession, feeds: Feeds, numBlocks: number, blocksPerSeq: number): Promise<Candidate | undefined> {
  const availability = await loadPagedAttentionKernel();
  if ('unavailable' in availability) {
    console.log(`(d) skipped: the native kernel is unavailable (${availability.unavailable})`);
    return undefined;
  }
  const { kernel } = availability;
  const data = (name: string) => feeds[name]!.data as Float32Array;
  // (b)'s tables plus a last column naming a block of the pool's tail for the new position.
  const readTables = feeds.block_tables!.data as BigInt64Array;
  const maxBlocks = blocksPerSeq + 1;
  const blockTables = new Int32Array(BATCH * maxBlocks);
  const used = new Set(Array.from(readTables, Number));
  const spare = Array.from({ length: numBlocks }, (_, i) => i).filter((i) => !used.has(i));
  for (let s = 0; s < BATCH; s++) {
    for (let b = 0; b < blocksPerSeq; b++) blockTables[s * maxBlocks + b] = Number(readTables[s * blocksPerSeq + b]);
    blockTables[s * maxBlocks + blocksPerSeq] = spare[s]!;
  }
  const layout = { blockTables, queryStarts: Int32Array.from({ length: BATCH }, (_, i) => i), queryLengths: new Int32Array(BATCH).fill(1), pastLengths: new Int32Array(BATCH).fill(PAST) };
  const shape = { numSeqs: BATCH, numHeads: HEADS, numKvHeads: KV_HEADS, headDim: DIM, numBlocks, blockSize: BLOCK, maxBlocks, activationType: 'float32', kvType: 'float32' } as const;
  const out = new Float32Array(BATCH * HEADS * DIM);
  const run = async () => {
    kernel.write(shape, layout, data('k'), data('v'), data('key_cache'), data('value_cache'));
    kernel.attend(shape, layout, data('q'), data('key_cache'), data('value_cache'), out, THREADS);
  };
  const expected = (await session.run(feeds)).output!.data as Float32Array;
  await run();
  let worst = 0;
  for (let i = 0; i < out.length; i++) worst = Math.max(worst, Math.abs(out[i]! - expected[i]!));
  console.log(`(d) native kernel vs (b): max |difference| ${worst.toExponential(2)} over ${out.length} outputs`);
  if (!(worst < 1e-4)) throw new Error('the native kernel disagrees with the ORT paged graph');
  return { name: '(d) native fused kernel, pool read in place', run };
}

async function groupQuery(): Promise<Candidate> {
  const g = new GraphBuilder('gqa_attention', 'float32');
  const maxLen = PAST + 64;
  const q = g.input('q', 'float32', [BATCH, 1, HEADS * DIM]);
  const k = g.input('k', 'float32', [BATCH, 1, KV_HEADS * DIM]);
  const v = g.input('v', 'float32', [BATCH, 1, KV_HEADS * DIM]);
  const pastKey = g.input('past_key', 'float32', [BATCH, KV_HEADS, maxLen, DIM]);
  const pastValue = g.input('past_value', 'float32', [BATCH, KV_HEADS, maxLen, DIM]);
  const seqlens = g.input('seqlens_k', 'int32', [BATCH]);
  const total = g.input('total_sequence_length', 'int32', []);
  const [output, presentKey, presentValue] = g.op(
    'GroupQueryAttention',
    [q, k, v, pastKey, pastValue, seqlens, total],
    { num_heads: HEADS, kv_num_heads: KV_HEADS },
    { outputs: 3, domain: MS_DOMAIN },
  ) as [string, string, string];
  g.output(output, 'output', 'float32', [BATCH, 1, HEADS * DIM]);
  g.output(presentKey, 'present_key', 'float32', [BATCH, KV_HEADS, maxLen, DIM]);
  g.output(presentValue, 'present_value', 'float32', [BATCH, KV_HEADS, maxLen, DIM]);
  const cache = [BATCH, KV_HEADS, maxLen, DIM];
  const keyBuffer = new ort.Tensor('float32', floats(BATCH * KV_HEADS * maxLen * DIM), cache);
  const valueBuffer = new ort.Tensor('float32', floats(BATCH * KV_HEADS * maxLen * DIM), cache);
  const feeds: Feeds = {
    q: new ort.Tensor('float32', floats(BATCH * HEADS * DIM), [BATCH, 1, HEADS * DIM]),
    k: new ort.Tensor('float32', floats(BATCH * KV_HEADS * DIM), [BATCH, 1, KV_HEADS * DIM]),
    v: new ort.Tensor('float32', floats(BATCH * KV_HEADS * DIM), [BATCH, 1, KV_HEADS * DIM]),
    past_key: keyBuffer,
    past_value: valueBuffer,
    // Every row has PAST cached positions and adds one: total length PAST + 1, seqlens_k = total − 1.
    seqlens_k: new ort.Tensor('int32', new Int32Array(BATCH).fill(PAST), [BATCH]),
    total_sequence_length: new ort.Tensor('int32', Int32Array.of(PAST + 1), []),
  };
  return ortCandidate('(c) GroupQueryAttention, past/present one buffer', await open(g), feeds, { output: null, present_key: keyBuffer, present_value: valueBuffer });
}

async function timeOnce(c: Candidate): Promise<number> {
  const started = performance.now();
  await c.run();
  return performance.now() - started;
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const pagedForm = await paged();
const native = await pagedForm.native();
const candidates: Candidate[] = [await optimum(), pagedForm, await groupQuery(), ...(native ? [native] : [])];
for (const c of candidates) for (let i = 0; i < 3; i++) await timeOnce(c);
const times = new Map(candidates.map((c) => [c.name, [] as number[]]));
for (let round = 0; round < ROUNDS; round++) {
  for (let i = 0; i < candidates.length; i++) {
    const c = candidates[(round + i) % candidates.length]!;
    times.get(c.name)!.push(await timeOnce(c));
  }
}
console.log(`decode attention, one layer: batch ${BATCH}, past ${PAST}, ${HEADS} heads / ${KV_HEADS} kv heads × ${DIM}, block ${BLOCK}, ${THREADS} threads, median of ${ROUNDS}`);
const base = median(times.get(candidates[0]!.name)!);
for (const c of candidates) {
  const m = median(times.get(c.name)!);
  console.log(`  ${c.name.padEnd(52)} ${m.toFixed(2).padStart(8)} ms  (${(base / m).toFixed(2)}× of (a))`);
}
