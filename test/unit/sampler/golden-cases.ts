// The sampler's golden cases: fixed (logits row, params, seed) inputs whose outputs were recorded
// from the sampler as it stood before the flattening of issue 10, so a restructuring must keep
// every token and every logprob bit-identical. `npx tsx test/unit/sampler/golden-cases.ts`
// prints the current outputs as the contents of golden-expected.ts; rewrite that file only for a
// deliberate change of sampling behaviour, and say so in the commit.

import type { SamplingParams } from '../../../src/contracts/generate.js';
import { Drawer } from '../../../src/sampler/draw.js';
import { seededKey, unseededKey, uniformAt, redrawKey } from '../../../src/sampler/rng.js';
import { Sampler, type LogprobsMode, type SampleResult } from '../../../src/sampler/sampler.js';

const VOCAB = 151_936;
const SAMPLEABLE = 151_669;

const BASE: SamplingParams = {
  temperature: 1,
  topK: 0,
  topP: 1,
  minP: 0,
  repetitionPenalty: 1,
  frequencyPenalty: 0,
  presencePenalty: 0,
  logitBias: null,
  logprobs: false,
  topLogprobs: 0,
  seed: 1234,
};
const p = (over: Partial<SamplingParams>): SamplingParams => ({ ...BASE, ...over });

type Shape = 'peaked' | 'flat' | 'ties' | 'far-tail';

/** Deterministic Qwen3-sized rows: a trained model's peaked look, a random model's flat one, quantized ties, and a bulk 19 nats down. */
function makeRow(shape: Shape, seed: number): Float32Array {
  let s = seed >>> 0;
  const next = (): number => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296;
  const row = new Float32Array(VOCAB);
  for (let i = 0; i < VOCAB; i++) {
    const g = Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
    row[i] = shape === 'ties' ? Math.round(g * 4) / 4 : shape === 'flat' ? g : shape === 'far-tail' ? -19 + 0.3 * g : 2.5 * g;
  }
  if (shape === 'peaked') for (let j = 0; j < 20; j++) row[Math.floor(next() * SAMPLEABLE)] = 18 + 6 * next();
  if (shape === 'far-tail') for (let j = 0; j < 4; j++) row[Math.floor(next() * SAMPLEABLE)] = -j * 0.5;
  return row;
}

interface RowCase {
  readonly params: SamplingParams;
  readonly prompt?: readonly number[];
  readonly output?: readonly number[];
  readonly banned?: readonly number[];
  readonly mode?: LogprobsMode;
  /** Output positions sampled (the draw counter); outputs beyond `output`'s own length are padded with 0. */
  readonly positions: number;
}

const PROMPT = Array.from({ length: 300 }, (_, i) => (i * 7919) % SAMPLEABLE);
const OUTPUT = Array.from({ length: 40 }, (_, i) => (i * 104729) % 997);

const BIG_CASES: Record<string, RowCase> = {
  greedy: { params: p({ temperature: 0 }), positions: 2 },
  'greedy T 1e-6': { params: p({ temperature: 1e-6 }), positions: 2 },
  'temperature 1': { params: p({}), positions: 6 },
  'temperature 0.7': { params: p({ temperature: 0.7 }), positions: 6 },
  'temperature 1.5': { params: p({ temperature: 1.5 }), positions: 6 },
  'top_k 1': { params: p({ topK: 1 }), positions: 3 },
  'top_k 20': { params: p({ topK: 20 }), positions: 6 },
  'top_k 50 T 2': { params: p({ topK: 50, temperature: 2 }), positions: 6 },
  'top_k 256': { params: p({ topK: 256 }), positions: 4 },
  'top_k 300': { params: p({ topK: 300 }), positions: 4 },
  'top_k 5000 T 3': { params: p({ topK: 5000, temperature: 3 }), positions: 4 },
  'top_p 0.9': { params: p({ topP: 0.9 }), positions: 6 },
  'top_p 0.5 T 0.7': { params: p({ topP: 0.5, temperature: 0.7 }), positions: 6 },
  'top_p 0.99 T 2': { params: p({ topP: 0.99, temperature: 2 }), positions: 4 },
  'min_p 0.05': { params: p({ minP: 0.05 }), positions: 6 },
  'min_p 0.2 T 1.3': { params: p({ minP: 0.2, temperature: 1.3 }), positions: 6 },
  'Qwen3 defaults': { params: p({ temperature: 0.6, topK: 20, topP: 0.95 }), positions: 6 },
  'top_k 50 top_p 0.9 min_p 0.05': { params: p({ topK: 50, topP: 0.9, minP: 0.05 }), positions: 6 },
  'top_k 400 top_p 0.8': { params: p({ topK: 400, topP: 0.8 }), positions: 4 },
  'seed negative': { params: p({ seed: -987654321 }), positions: 4 },
  'seed large': { params: p({ seed: 2 ** 52 + 12345 }), positions: 4 },
  penalties: {
    params: p({ repetitionPenalty: 1.1, frequencyPenalty: 0.5, presencePenalty: 0.5, topP: 0.9 }),
    prompt: PROMPT,
    output: OUTPUT,
    positions: 4,
  },
  'repetition below 1, greedy': { params: p({ temperature: 0, repetitionPenalty: 0.8 }), prompt: PROMPT, output: OUTPUT, positions: 2 },
  'negative frequency and presence': { params: p({ frequencyPenalty: -1.5, presencePenalty: -0.7 }), output: OUTPUT, positions: 4 },
  'logit bias': { params: p({ logitBias: { 5: 100, 17: 25.5, 99: -100, 1000: 3, 151000: 40, 151935: 50 } }), positions: 4 },
  'logit bias greedy clamped': { params: p({ temperature: 0, logitBias: { 3: 250, 4: -7 } }), positions: 2 },
  'banned (min_tokens)': { params: p({ topK: 20 }), banned: [0, 1, 2, 3], positions: 4 },
  'greedy + logprobs 5': { params: p({ temperature: 0, logprobs: true, topLogprobs: 5 }), positions: 2 },
  'logprobs 0': { params: p({ logprobs: true }), positions: 3 },
  'top_p 0.9 + logprobs 20': { params: p({ topP: 0.9, logprobs: true, topLogprobs: 20 }), positions: 2 },
  'penalties + bias + logprobs 5': {
    params: p({ repetitionPenalty: 1.2, frequencyPenalty: 0.3, logitBias: { 7: 30, 8: -2 }, logprobs: true, topLogprobs: 5 }),
    prompt: PROMPT,
    output: OUTPUT,
    banned: [9],
    positions: 3,
  },
  'raw logprobs 5': { params: p({ topP: 0.9, logprobs: true, topLogprobs: 5 }), mode: 'raw', positions: 3 },
  'raw logprobs + penalties + bias': {
    params: p({ temperature: 0, repetitionPenalty: 1.3, logitBias: { 11: 60 }, logprobs: true, topLogprobs: 4 }),
    prompt: PROMPT,
    output: OUTPUT,
    mode: 'raw',
    positions: 2,
  },
};

/** Which shapes each big case runs on: all four unless the case is cheap enough to matter only on two. */
const BIG_SHAPES: readonly Shape[] = ['peaked', 'flat', 'ties', 'far-tail'];

interface SmallCase extends RowCase {
  readonly logits: readonly number[];
  readonly sampleable?: number;
}

const TAIL = [0, -0.4, -0.9, -1.3, -2, -2.6, -3.1, -4, -5, -6.5];

const SMALL_CASES: Record<string, SmallCase> = {
  'ties greedy': { logits: [1, 3, 2, 3, 0], params: p({ temperature: 0 }), positions: 1 },
  'padding rows never sampled': { logits: [0, 0, 0, 0, 5, 5], sampleable: 4, params: p({}), positions: 40 },
  'softmax T 1': { logits: TAIL, params: p({ seed: 3 }), positions: 64 },
  'softmax T 0.5 logprobs 3': { logits: TAIL, params: p({ temperature: 0.5, seed: 3, logprobs: true, topLogprobs: 3 }), positions: 16 },
  'top_k 2 T 3': { logits: [5, 4, 3, 2, 1], params: p({ topK: 2, temperature: 3, seed: 1 }), positions: 32 },
  'top_k ties': { logits: [5, 4, 4, 4, 1], params: p({ topK: 2, temperature: 3, seed: 1 }), positions: 32 },
  'top_p 0.6': { logits: TAIL, params: p({ topP: 0.6, seed: 5 }), positions: 32 },
  'min_p 0.3 T 2': { logits: TAIL, params: p({ minP: 0.3, temperature: 2, seed: 6 }), positions: 32 },
  'all banned': { logits: [1, 2, 3], banned: [0, 1, 2], params: p({}), positions: 2 },
  'all banned + logprobs': { logits: [1, 2, 3], banned: [0, 1, 2], params: p({ logprobs: true, topLogprobs: 2 }), positions: 1 },
  'infinite logit': { logits: [1, Infinity, 3, Infinity], params: p({ topP: 0.5 }), positions: 2 },
  'NaN logit': { logits: [1, Number.NaN, 3, 2], params: p({ logprobs: true, topLogprobs: 4 }), positions: 8 },
  'banned out of range': { logits: [1, 2, 3], banned: [-1, 7, 2], params: p({ logprobs: true, topLogprobs: 3 }), positions: 4 },
  'raw logprobs, chosen token biased': { logits: [1, 2, 3, 0], params: p({ temperature: 0, logitBias: { 3: 10 }, logprobs: true, topLogprobs: 2 }), mode: 'raw', positions: 1 },
  'top_logprobs past the vocabulary': { logits: [0.5, -1, 2], params: p({ temperature: 0, logprobs: true, topLogprobs: 5 }), positions: 1 },
};

/** The token id alone, or with logprobs: [token id, its logprob, [top id, top logprob]...]. */
export type GoldenToken = number | readonly [number, number, ...(readonly [number, number])[]];

function record(result: SampleResult): GoldenToken {
  const lp = result.logprob;
  return lp ? [result.tokenId, lp.logprob, ...lp.top.map((t) => [t.tokenId, t.logprob] as const)] : result.tokenId;
}

function runRow(sampler: Sampler, source: Float32Array, c: RowCase): GoldenToken[] {
  const out: GoldenToken[] = [];
  const base = c.output ?? [];
  for (let pos = 0; pos < c.positions; pos++) {
    const outputTokenIds = base.concat(new Array<number>(pos).fill(0));
    const logits = Float32Array.from(source);
    const result = sampler.sample({
      requestId: 'golden',
      logits,
      params: c.params,
      promptTokenIds: c.prompt ?? [],
      outputTokenIds,
      bannedTokenIds: c.banned ?? null,
    });
    out.push(record(result));
  }
  return out;
}

/** The draw alone with a 1-nat head, so the rare tail and rejection paths run often. */
function runTailDraws(params: SamplingParams, draws: number): number[] {
  const drawer = new Drawer(TAIL.length, 1);
  const row = Float32Array.from(TAIL);
  const key = seededKey(params.seed ?? 0);
  const tokens: number[] = [];
  for (let i = 0; i < draws; i++) tokens.push(drawer.draw(row, row.length, params, key, i));
  return tokens;
}

const TAIL_DRAWS: Record<string, SamplingParams> = {
  'T 1': p({ seed: 11 }),
  'T 0.7': p({ temperature: 0.7, seed: 11 }),
  'top_p 0.9': p({ topP: 0.9, seed: 12 }),
  'top_p 0.3': p({ topP: 0.3, seed: 13 }),
  'min_p 0.1': p({ minP: 0.1, seed: 14 }),
  'top_k 6': p({ topK: 6, seed: 15 }),
  'top_k 300 top_p 0.95': p({ topK: 300, topP: 0.95, seed: 16 }),
};

export interface GoldenOutputs {
  readonly big: Record<string, GoldenToken[]>;
  readonly small: Record<string, GoldenToken[]>;
  readonly tail: Record<string, number[]>;
  readonly step: { requestId: string; tokens: GoldenToken[] }[];
  readonly rng: number[];
}

export function runGoldenCases(): GoldenOutputs {
  const big: Record<string, GoldenToken[]> = {};
  for (const shape of BIG_SHAPES) {
    const source = makeRow(shape, 7);
    for (const [name, c] of Object.entries(BIG_CASES)) {
      const sampler = new Sampler({ vocabSize: VOCAB, sampleableVocabSize: SAMPLEABLE, logprobsMode: c.mode ?? 'processed' });
      big[`${shape}: ${name}`] = runRow(sampler, source, c);
    }
  }
  const small: Record<string, GoldenToken[]> = {};
  for (const [name, c] of Object.entries(SMALL_CASES)) {
    const sampler = new Sampler({ vocabSize: c.logits.length, sampleableVocabSize: c.sampleable, logprobsMode: c.mode ?? 'processed' });
    small[name] = runRow(sampler, Float32Array.from(c.logits), c);
  }
  const tail: Record<string, number[]> = {};
  for (const [name, params] of Object.entries(TAIL_DRAWS)) tail[name] = runTailDraws(params, 400);
  return { big, small, tail, step: runStep(), rng: rngValues() };
}

/** sampleStep over a row-major batch of three rows with different params. */
function runStep(): GoldenOutputs['step'] {
  const v = 8;
  const logits = Float32Array.from([0, 1, 2, 3, 2, 1, 0, -1, 5, 5, 4, 0, 0, 0, 0, 9, -3, -2, -1, 0, 1, 2, 3, 4]);
  const sampler = new Sampler({ vocabSize: v, sampleableVocabSize: 7 });
  const rows = [
    { requestId: 'a', params: p({ temperature: 0, logprobs: true, topLogprobs: 2 }), promptTokenIds: [3], outputTokenIds: [], bannedTokenIds: null },
    { requestId: 'b', params: p({ seed: 42, topK: 3 }), promptTokenIds: [], outputTokenIds: [1, 1], bannedTokenIds: [0] },
    { requestId: 'c', params: p({ seed: 7, frequencyPenalty: 1, logprobs: true, topLogprobs: 1 }), promptTokenIds: [], outputTokenIds: [6, 6, 5], bannedTokenIds: null },
  ];
  return sampler.sampleStep(logits, rows).map((s) => ({
    requestId: s.requestId,
    tokens: s.tokenIds.map((tokenId, i) => record({ tokenId, logprob: s.logprobs?.[i] ?? null })),
  }));
}

/** The counter-based stream itself: seeded, salted-unseeded and redraw keys. */
function rngValues(): number[] {
  const keys = [seededKey(0), seededKey(1234), seededKey(-1), seededKey(2 ** 53 - 1), unseededKey('req-1', 0), unseededKey('req-1', 99), redrawKey(seededKey(5))];
  return keys.flatMap((key) => [0, 1, 2, 1000, 2 ** 31].map((c) => uniformAt(key, c)));
}

function literal(value: unknown, top = true): string {
  if (typeof value === 'number') return Object.is(value, -0) ? '-0' : String(value);
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v) => literal(v, false)).join(', ')}]`;
  const entries = Object.entries(value as Record<string, unknown>);
  if (!top) return `{ ${entries.map(([k, v]) => `${k}: ${literal(v, false)}`).join(', ')} }`;
  return `{\n${entries.map(([k, v]) => `  ${JSON.stringify(k)}: ${literal(v, false)},`).join('\n')}\n}`;
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/\\/g, '/'))) {
  const outputs = runGoldenCases();
  const body = Object.entries(outputs)
    .map(([k, v]) => `export const ${k} = ${literal(v)};`)
    .join('\n\n');
  console.log(`// Generated by golden-cases.ts from the sampler before issue 10's flattening. Do not edit by hand.\n\n${body}`);
}
