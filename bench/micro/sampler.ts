// Micro-benchmark of the sampler on a Qwen3-sized row: `npx tsx bench/micro/sampler.ts`.
// Prints µs per token for greedy, top_p 0.9, top_k 50 and logprobs 5 on two logit shapes:
// "peaked" (a trained model's look: a few tokens far above a broad bulk) and "flat" (a random-
// weight model's look: everything within a few nats, the worst case for the 30-nat window).

import { GREEDY_SAMPLING, type SamplingParams } from '../../src/contracts/generate.js';
import { Sampler } from '../../src/sampler/sampler.js';

const VOCAB = 151_936;
const SAMPLEABLE = 151_669;
const BATCH = 50;
const ROUNDS = 9;

const BASE: SamplingParams = { ...GREEDY_SAMPLING, temperature: 1, seed: 1234 };

const CASES: Record<string, SamplingParams> = {
  greedy: { ...BASE, temperature: 0 },
  'temperature 1': BASE,
  'temperature 0.7, top_p 0.9': { ...BASE, temperature: 0.7, topP: 0.9 },
  'top_p 0.9': { ...BASE, topP: 0.9 },
  'top_k 50': { ...BASE, topK: 50 },
  'Qwen3 defaults (T 0.6, top_k 20, top_p 0.95)': { ...BASE, temperature: 0.6, topK: 20, topP: 0.95 },
  'greedy + logprobs 5': { ...BASE, temperature: 0, logprobs: true, topLogprobs: 5 },
  'top_p 0.9 + logprobs 5': { ...BASE, topP: 0.9, logprobs: true, topLogprobs: 5 },
  'top_p 0.9 + penalties (1k prompt, 200 out)': { ...BASE, topP: 0.9, repetitionPenalty: 1.1, frequencyPenalty: 0.5, presencePenalty: 0.5 },
};

function gaussian(next: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
}

function makeRow(shape: 'peaked' | 'flat', seed: number): Float32Array {
  let s = seed >>> 0;
  const next = (): number => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296;
  const row = new Float32Array(VOCAB);
  for (let i = 0; i < VOCAB; i++) row[i] = shape === 'peaked' ? 2.5 * gaussian(next) : gaussian(next);
  if (shape === 'peaked') for (let j = 0; j < 20; j++) row[Math.floor(next() * SAMPLEABLE)] = 18 + 6 * next();
  return row;
}

function measure(shape: 'peaked' | 'flat', params: SamplingParams): number {
  const sampler = new Sampler({ vocabSize: VOCAB, sampleableVocabSize: SAMPLEABLE });
  const source = makeRow(shape, 7);
  const row = new Float32Array(VOCAB);
  const prompt = Array.from({ length: 1000 }, (_, i) => (i * 7919) % SAMPLEABLE);
  const output = Array.from({ length: 200 }, (_, i) => (i * 104729) % SAMPLEABLE);
  const input = { requestId: 'bench', logits: row, params, promptTokenIds: prompt, outputTokenIds: output, bannedTokenIds: null };
  // CPU time, not wall time: these cores are shared, and a preempted call would count the wait.
  const cpuMicros = (withSample: boolean): number => {
    const start = process.cpuUsage();
    for (let i = 0; i < BATCH; i++) {
      row.set(source); // each call consumes its row
      if (withSample) sampler.sample(input);
    }
    const used = process.cpuUsage(start);
    return (used.user + used.system) / BATCH;
  };
  const rounds: number[] = [];
  for (let r = 0; r < ROUNDS + 2; r++) rounds.push(cpuMicros(true) - cpuMicros(false));
  // The first rounds warm the JIT up; the median resists the rest of the noise.
  return rounds.slice(2).sort((a, b) => a - b)[ROUNDS >> 1]!;
}

for (const shape of ['peaked', 'flat'] as const) {
  console.log(`\n${shape} logits, vocab ${VOCAB}:`);
  for (const [name, params] of Object.entries(CASES)) console.log(`  ${name.padEnd(44)} ${measure(shape, params).toFixed(1).padStart(8)} µs/token`);
}
