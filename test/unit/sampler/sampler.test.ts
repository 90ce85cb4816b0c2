import { describe, expect, it } from 'vitest';
import type { SamplingParams } from '../../../src/contracts/generate.js';
import { Sampler, type SamplerInput } from '../../../src/sampler/sampler.js';
import { Drawer } from '../../../src/sampler/draw.js';
import { LogitProcessors } from '../../../src/sampler/penalties.js';
import { seededKey, uniformAt, unseededKey } from '../../../src/sampler/rng.js';
import { GREEDY_SAMPLING } from '../../support/sampling.js';

const GREEDY = GREEDY_SAMPLING;
const params = (over: Partial<SamplingParams>): SamplingParams => ({ ...GREEDY, temperature: 1, ...over });

function input(logits: ArrayLike<number>, p: SamplingParams, over: Partial<SamplerInput> = {}): SamplerInput {
  return { requestId: 'r', logits: Float32Array.from(logits), params: p, promptTokenIds: [], outputTokenIds: [], bannedTokenIds: null, ...over };
}

/** Token frequencies over `draws` samples, each at a different output position of one stream. */
function frequencies(logits: number[], p: SamplingParams, draws = 4000): number[] {
  const sampler = new Sampler({ vocabSize: logits.length });
  const counts: number[] = new Array<number>(logits.length).fill(0);
  const output: number[] = [];
  for (let i = 0; i < draws; i++) {
    output.length = i; // only the length matters: it is the draw counter
    const { tokenId } = sampler.sample(input(logits, p, { outputTokenIds: output }));
    counts[tokenId]!++;
  }
  return counts.map((c) => c / draws);
}

const support = (freq: number[]): number[] => freq.flatMap((f, i) => (f > 0 ? [i] : []));
const logs = (probs: number[]): number[] => probs.map((q) => Math.log(q));

function logSoftmax(row: ArrayLike<number>): number[] {
  const values = Array.from(row);
  const max = values.reduce((a, b) => Math.max(a, b), -Infinity);
  const lse = max + Math.log(values.reduce((s, x) => s + Math.exp(x - max), 0));
  return values.map((x) => x - lse);
}

describe('greedy', () => {
  it('picks the argmax, lowest id on ties, and needs no seed', () => {
    const sampler = new Sampler({ vocabSize: 5 });
    expect(sampler.sample(input([1, 3, 2, 3, 0], GREEDY)).tokenId).toBe(1);
    expect(sampler.sample(input([1, 3, 2, 9, 0], { ...GREEDY, temperature: 1e-6 })).tokenId).toBe(3);
  });

  it('never picks ids past the sampleable vocabulary (embedding padding rows)', () => {
    const sampler = new Sampler({ vocabSize: 6, sampleableVocabSize: 4 });
    expect(sampler.sample(input([0, 1, 2, 0, 50, 60], GREEDY)).tokenId).toBe(2);
    const freq = frequencies([0, 0, 0, 0, 5, 5], params({}), 500);
    expect(support(freq).every((id) => id < 6)).toBe(true);
    const bounded = new Sampler({ vocabSize: 6, sampleableVocabSize: 4 });
    for (let i = 0; i < 300; i++) expect(bounded.sample(input([0, 0, 0, 0, 5, 5], params({}), { outputTokenIds: new Array<number>(i) })).tokenId).toBeLessThan(4);
  });
});

describe('random sampling', () => {
  it('matches softmax(logits / T) in distribution', () => {
    const probs = [0.5, 0.25, 0.15, 0.1];
    const freq = frequencies(logs(probs), params({ seed: 3 }), 20000);
    probs.forEach((q, i) => expect(Math.abs(freq[i]! - q)).toBeLessThan(0.015));
    // T = 0.5 squares the probabilities before renormalizing.
    const sq = probs.map((q) => q * q);
    const z = sq.reduce((a, b) => a + b);
    const cold = frequencies(logs(probs), params({ temperature: 0.5, seed: 3 }), 20000);
    sq.forEach((q, i) => expect(Math.abs(cold[i]! - q / z)).toBeLessThan(0.015));
  });

  it('top_k keeps exactly the k best, plus ties with the k-th', () => {
    expect(support(frequencies([5, 4, 3, 2, 1], params({ topK: 2, temperature: 3, seed: 1 }), 2000))).toEqual([0, 1]);
    expect(support(frequencies([3, 2, 2, 1], params({ topK: 2, temperature: 3, seed: 1 }), 2000))).toEqual([0, 1, 2]);
    expect(support(frequencies([1, 2, 3, 4], params({ topK: 1, seed: 1 }), 200))).toEqual([3]);
  });

  it('top_p keeps the smallest prefix whose mass reaches p', () => {
    const probs = logs([0.5, 0.3, 0.15, 0.05]);
    expect(support(frequencies(probs, params({ topP: 0.4, seed: 2 }), 1000))).toEqual([0]);
    expect(support(frequencies(probs, params({ topP: 0.75, seed: 2 }), 3000))).toEqual([0, 1]);
    expect(support(frequencies(probs, params({ topP: 0.85, seed: 2 }), 3000))).toEqual([0, 1, 2]);
    // Renormalized over the kept set: 0.5 / 0.8 and 0.3 / 0.8.
    const kept = frequencies(probs, params({ topP: 0.75, seed: 2 }), 20000);
    expect(Math.abs(kept[0]! - 0.625)).toBeLessThan(0.015);
  });

  it('top_p applies to the distribution left by top_k', () => {
    // After top_k 3 the masses are 0.5, 0.3, 0.15 out of 0.95: 0.5/0.95 < 0.6, so two tokens stay.
    expect(support(frequencies(logs([0.5, 0.3, 0.15, 0.05]), params({ topK: 3, topP: 0.6, seed: 4 }), 3000))).toEqual([0, 1]);
  });

  it('min_p drops tokens below min_p times the top probability, after temperature', () => {
    const probs = logs([0.5, 0.3, 0.15, 0.05]);
    expect(support(frequencies(probs, params({ minP: 0.5, seed: 5 }), 3000))).toEqual([0, 1]);
    expect(support(frequencies(probs, params({ minP: 0.2, seed: 5 }), 3000))).toEqual([0, 1, 2]);
    // At T = 2 the ratios flatten: 0.05 / 0.5 = 0.1 becomes sqrt(0.1) ≈ 0.32 ≥ 0.3.
    expect(support(frequencies(probs, params({ minP: 0.3, temperature: 2, seed: 5 }), 4000))).toEqual([0, 1, 2, 3]);
  });

  it('never samples a banned token', () => {
    const sampler = new Sampler({ vocabSize: 3 });
    for (let i = 0; i < 200; i++) {
      const out = sampler.sample(input([5, 5, 0], params({}), { outputTokenIds: new Array<number>(i), bannedTokenIds: [0] }));
      expect(out.tokenId).not.toBe(0);
    }
  });
});

describe('seeds and streams', () => {
  /** Per-step logits for a request, identical whatever shares the batch. */
  const rowFor = (request: number, step: number): number[] => Array.from({ length: 50 }, (_, i) => Math.sin(request * 31 + step * 7 + i * 1.3) * 3);

  function generate(sampler: Sampler, batch: { id: string; request: number; seed: number | null }[], steps: number): Map<string, number[]> {
    const outputs = new Map(batch.map((b) => [b.id, [] as number[]]));
    for (let step = 0; step < steps; step++) {
      for (const b of batch) {
        const out = outputs.get(b.id)!;
        out.push(
          sampler.sample({
            requestId: b.id,
            logits: Float32Array.from(rowFor(b.request, step)),
            params: params({ seed: b.seed, topP: 0.95 }),
            promptTokenIds: [1, 2],
            outputTokenIds: out,
            bannedTokenIds: null,
          }).tokenId,
        );
      }
    }
    return outputs;
  }

  it('a seeded request gives the same tokens whatever else is in the batch, in any order', () => {
    const alone = generate(new Sampler({ vocabSize: 50 }), [{ id: 'a', request: 1, seed: 42 }], 40).get('a');
    const crowded = generate(
      new Sampler({ vocabSize: 50 }),
      [
        { id: 'x', request: 2, seed: null },
        { id: 'a2', request: 1, seed: 42 },
        { id: 'y', request: 3, seed: 7 },
      ],
      40,
    ).get('a2');
    expect(crowded).toEqual(alone);
    const other = generate(new Sampler({ vocabSize: 50 }), [{ id: 'a', request: 1, seed: 43 }], 40).get('a');
    expect(other).not.toEqual(alone);
  });

  it('unseeded requests draw from their own streams', () => {
    const out = generate(
      new Sampler({ vocabSize: 50 }),
      [
        { id: 'p', request: 5, seed: null },
        { id: 'q', request: 5, seed: null },
      ],
      40,
    );
    expect(out.get('p')).not.toEqual(out.get('q'));
  });

  it('the counter-based stream is uniform and seed-sensitive', () => {
    const key = seededKey(12345);
    const bins = new Array<number>(10).fill(0);
    let sum = 0;
    let outside = 0;
    const n = 100_000;
    for (let i = 0; i < n; i++) {
      const u = uniformAt(key, i);
      if (!(u >= 0 && u < 1)) outside++;
      bins[Math.floor(u * 10)]!++;
      sum += u;
    }
    expect(outside).toBe(0);
    expect(Math.abs(sum / n - 0.5)).toBeLessThan(0.005);
    const chi2 = bins.reduce((s, c) => s + (c - n / 10) ** 2 / (n / 10), 0);
    expect(chi2).toBeLessThan(30); // 9 degrees of freedom: p < 0.001
    expect(uniformAt(seededKey(-1), 0)).not.toBe(uniformAt(seededKey(1), 0));
    expect(uniformAt(seededKey(2 ** 40), 0)).not.toBe(uniformAt(seededKey(0), 0));
    expect(uniformAt(unseededKey('a', 1), 0)).toBe(uniformAt(unseededKey('a', 1), 0));
    expect(uniformAt(unseededKey('a', 1), 0)).not.toBe(uniformAt(unseededKey('b', 1), 0));
  });
});

describe('penalties and logit_bias', () => {
  it('applies repetition (prompt ∪ output), then frequency and presence (output only)', () => {
    const row = Float32Array.from([2, -2, 4, -1, 3]);
    const p = params({ repetitionPenalty: 2, frequencyPenalty: 0.5, presencePenalty: 0.25 });
    new LogitProcessors(5).apply(row, { params: p, promptTokenIds: [0, 1, 1], outputTokenIds: [2, 2, 3], bannedTokenIds: null });
    expect(Array.from(row)).toEqual([
      1, // prompt: positive ÷ 2
      -4, // prompt: negative × 2 (once, though seen twice)
      4 / 2 - 0.5 * 2 - 0.25, // output twice
      -1 * 2 - 0.5 - 0.25, // output once
      3, // unseen
    ]);
  });

  it('adds logit_bias before the penalties and clamps it to ±100', () => {
    const row = Float32Array.from([1, 1, 1]);
    const p = params({ logitBias: { 0: 3, 2: -1000 }, repetitionPenalty: 2 });
    new LogitProcessors(3).apply(row, { params: p, promptTokenIds: [0], outputTokenIds: [], bannedTokenIds: null });
    expect(Array.from(row)).toEqual([2, 1, -99]);
    const sampler = new Sampler({ vocabSize: 3 });
    expect(sampler.sample(input([5, 0, 0], { ...GREEDY, logitBias: { 1: 100 } })).tokenId).toBe(1);
    expect(sampler.sample(input([5, 0, 0], { ...GREEDY, logitBias: { 0: -100 } })).tokenId).toBe(1);
  });

  it('a repeated greedy token loses to an unseen one under a frequency penalty', () => {
    const sampler = new Sampler({ vocabSize: 3 });
    const p = { ...GREEDY, frequencyPenalty: 1 };
    expect(sampler.sample(input([3, 2.5, 0], p, { outputTokenIds: [0] })).tokenId).toBe(1);
    expect(sampler.sample(input([3, 2.5, 0], p, { promptTokenIds: [0, 0, 0] })).tokenId).toBe(0);
  });
});

describe('logprobs', () => {
  it('reports the log-softmax of the processed logits, with the top alternatives best first', () => {
    const logits = [1.5, -0.5, 3.25, 3.25, 0, 2];
    const p: SamplingParams = { ...GREEDY, logprobs: true, topLogprobs: 3, presencePenalty: 1 };
    const out = new Sampler({ vocabSize: 6 }).sample(input(logits, p, { outputTokenIds: [3] }));
    const expected = logSoftmax([1.5, -0.5, 3.25, 2.25, 0, 2]);
    expect(out.tokenId).toBe(2);
    expect(out.logprob!.logprob).toBeCloseTo(expected[2]!, 6);
    expect(out.logprob!.top.map((t) => t.tokenId)).toEqual([2, 3, 5]);
    out.logprob!.top.forEach((t) => expect(t.logprob).toBeCloseTo(expected[t.tokenId]!, 6));
  });

  it('ignores temperature and truncation, and can report the raw model distribution instead', () => {
    const logits = [0.3, 1.1, -2, 0.7];
    const p = params({ logprobs: true, topLogprobs: 2, temperature: 0.7, topK: 2, frequencyPenalty: 2, seed: 9 });
    const processed = new Sampler({ vocabSize: 4 }).sample(input(logits, p, { outputTokenIds: [1] }));
    const expected = logSoftmax([0.3, -0.9, -2, 0.7]);
    expect(processed.logprob!.logprob).toBeCloseTo(expected[processed.tokenId]!, 6);
    const raw = new Sampler({ vocabSize: 4, logprobsMode: 'raw' }).sample(input(logits, p, { outputTokenIds: [1] }));
    const rawExpected = logSoftmax(logits);
    expect(raw.tokenId).toBe(processed.tokenId);
    expect(raw.logprob!.logprob).toBeCloseTo(rawExpected[raw.tokenId]!, 6);
    expect(raw.logprob!.top.map((t) => t.tokenId)).toEqual([1, 3]);
  });

  it('matches a float64 log-softmax on a Qwen3-sized row', () => {
    const vocab = 151_936;
    const logits = new Float32Array(vocab);
    for (let i = 0; i < vocab; i++) logits[i] = Math.sin(i * 0.37) * 4 + ((i * 7919) % 1000) / 250;
    const expected = logSoftmax(logits);
    const out = new Sampler({ vocabSize: vocab }).sample(input(logits, params({ logprobs: true, topLogprobs: 5, seed: 1 })));
    expect(out.logprob!.logprob).toBeCloseTo(expected[out.tokenId]!, 6);
    const ranked = expected.map((v, i) => [v, i] as const).sort((a, b) => b[0] - a[0] || a[1] - b[1]);
    expect(out.logprob!.top.map((t) => t.tokenId)).toEqual(ranked.slice(0, 5).map(([, i]) => i));
    out.logprob!.top.forEach((t) => expect(t.logprob).toBeCloseTo(expected[t.tokenId]!, 6));
  });

  it('returns null when not requested, and sampleStep splits a row-major batch', () => {
    const sampler = new Sampler({ vocabSize: 3 });
    const batch = Float32Array.from([0, 9, 0, 7, 0, 0]);
    const rows = [
      { requestId: 'a', params: GREEDY, promptTokenIds: [], outputTokenIds: [], bannedTokenIds: null },
      { requestId: 'b', params: { ...GREEDY, logprobs: true }, promptTokenIds: [], outputTokenIds: [], bannedTokenIds: null },
    ];
    const out = sampler.sampleStep(batch, rows);
    expect(out.map((s) => [s.requestId, s.tokenIds])).toEqual([
      ['a', [1]],
      ['b', [0]],
    ]);
    expect(out[0]!.logprobs).toBeNull();
    expect(out[1]!.logprobs![0]!.top).toEqual([]);
  });
});

describe('head-and-tail draw (rejection against a bounded tail)', () => {
  // A 1-nat head makes the tail heavy enough to observe; production uses 18 nats.
  const logits = [0, -0.4, -0.9, -1.3, -2, -2.6, -3.1, -4, -5, -6.5];
  const softmax = (xs: number[], t: number): number[] => {
    const e = xs.map((x) => Math.exp(x / t));
    const z = e.reduce((a, b) => a + b);
    return e.map((v) => v / z);
  };

  function drawFrequencies(p: SamplingParams, draws = 30000): number[] {
    const drawer = new Drawer(logits.length, 1);
    const row = Float32Array.from(logits);
    const counts = new Array<number>(logits.length).fill(0);
    const key = seededKey(p.seed ?? 0);
    for (let i = 0; i < draws; i++) counts[drawer.draw(row, row.length, p, key, i)]!++;
    return counts.map((c) => c / draws);
  }

  it('matches softmax(logits / T) exactly, tail included', () => {
    for (const t of [1, 0.7]) {
      const freq = drawFrequencies(params({ temperature: t, seed: 11 }));
      softmax(logits, t).forEach((q, i) => expect(Math.abs(freq[i]! - q)).toBeLessThan(0.01));
    }
  });

  it('keeps top_p, min_p and top_k exact when the nucleus reaches the tail', () => {
    const probs = softmax(logits, 1);
    // top_p 0.9: the smallest prefix reaching 0.9 of the mass.
    let above = 0;
    let keep = 0;
    while (above < 0.9) above += probs[keep++]!;
    const nucleus = drawFrequencies(params({ topP: 0.9, seed: 12 }));
    expect(support(nucleus)).toEqual(Array.from({ length: keep }, (_, i) => i));
    probs.slice(0, keep).forEach((q, i) => expect(Math.abs(nucleus[i]! - q / above)).toBeLessThan(0.01));
    expect(support(drawFrequencies(params({ topP: 0.3, seed: 13 }), 3000))).toEqual([0]);
    // min_p 0.1 keeps logits ≥ ln 0.1 ≈ −2.3; top_k 5 keeps five.
    expect(support(drawFrequencies(params({ minP: 0.1, seed: 14 }), 10000))).toEqual([0, 1, 2, 3, 4]);
    expect(support(drawFrequencies(params({ topK: 6, seed: 15 }), 10000))).toEqual([0, 1, 2, 3, 4, 5]);
  });
});
