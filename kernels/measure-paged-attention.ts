// Measures the ONNX Runtime CPU formulations of decode attention over a long KV cache on the
// bench decoder's shapes (8 query heads, 2 kv heads, head_dim 64), so the paged graph's choice
// rests on numbers from this runtime and machine:
//   (a) Optimum: past_key_values fed as tensors, Concat into present (what model.onnx does);
//   (b) paged:   the block pool gathered by block tables (kernels/paged-attention.ts);
//   (c) GQA:     com.microsoft GroupQueryAttention with past and present sharing one buffer
//                (pre-allocated outputs aliasing the inputs): writes only the new position, but
//                needs one contiguous [kv_heads, max_len, head_dim] region per sequence — a slot
//                cache, not the block pool, so the block manager could not place blocks.
// Run: npx tsx kernels/measure-paged-attention.ts [past=2048] [batch=32]   (results go into kernels/README.md by hand)
//
// One layer's attention alone (no projections), warm-up runs, then rounds that run every
// candidate once in turn so drift and neighbours' load hit all alike; medians reported.

import * as ort from 'onnxruntime-node';
import { causalGqaAttention, causalMask } from './causal-gqa-attention.js';
import { GraphBuilder, MS_DOMAIN } from './onnx/graph-builder.js';
import { SeededRandom } from './onnx/random.js';
import { pagedAttention, pagedAttentionPlan } from './paged-attention.js';

const [HEADS, KV_HEADS, DIM, BLOCK] = [8, 2, 64, 16];
const PAST = Number(process.argv[2] ?? 2048);
const BATCH = Number(process.argv[3] ?? 32);
const THREADS = 2;
const ROUNDS = 15;

type Feeds = Record<string, ort.Tensor>;
interface Candidate {
  readonly name: string;
  readonly session: ort.InferenceSession;
  readonly feeds: Feeds;
  readonly fetches?: Record<string, ort.Tensor | null>;
}

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
  return { name: '(a) Optimum past + Concat', session: await open(g), feeds };
}

async function paged(): Promise<Candidate> {
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
  const numBlocks = BATCH * blocksPerSeq + 8;
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
  return { name: '(b) paged: pool gathered by block tables', session: await open(g), feeds };
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
  return { name: '(c) GroupQueryAttention, past/present one buffer', session: await open(g), feeds, fetches: { output: null, present_key: keyBuffer, present_value: valueBuffer } };
}

async function timeOnce(c: Candidate): Promise<number> {
  const started = performance.now();
  if (c.fetches) await c.session.run(c.feeds, c.fetches);
  else await c.session.run(c.feeds);
  return performance.now() - started;
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const candidates = [await optimum(), await paged(), await groupQuery()];
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
