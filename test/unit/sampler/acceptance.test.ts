// Speculative decoding's acceptance rule is distribution-preserving: χ² tests of its output
// against the target distribution over many seeded draws on an 8-token vocabulary. The expected
// distributions come from a plain reference of the sampler's pipeline written here (processors,
// temperature, min_p, top_k, top_p), not from the sampler itself.
//
// - The pure rule (checkAgainstDistribution) on one position, for a spread q, and a deliberately
//   wrong rule (a rejection drawn from p instead of the residual) that the same test refuses.
// - Sampler.verify end to end: the first two tokens of a sequence decoded by checked proposals
//   (k = 3, point-mass and spread q) follow p(a)·p(b | a) under penalties, logit bias, top_k,
//   top_p, min_p and min_tokens' ban — the second position's penalties and ban count the accepted
//   proposal before it; a proposer that lies about its q is refused.
// - Point-mass proposals reproduce decoding without speculation token for token (seeded).
// Everything is seeded: the verdicts are fixed, the test is not flaky.

import { describe, expect, it } from 'vitest';
import { GREEDY_SAMPLING, type SamplingParams } from '../../../src/contracts/generate.js';
import { checkAgainstDistribution, type ProposalVerdict } from '../../../src/sampler/acceptance.js';
import type { TokenDistribution } from '../../../src/sampler/draw.js';
import { Sampler } from '../../../src/sampler/sampler.js';
import { rng } from '../../support/fake-model.js';

const V = 8;
const EOS = 7;
const PROMPT = [1, 4, 4, 2];
const sampler = new Sampler({ vocabSize: V });

/** The fake target model: logits of the next token after `context`, spread over a few nats. */
function targetLogits(context: readonly number[]): Float32Array {
  const row = new Float32Array(V);
  let h = 0x9e3779b1;
  for (const t of context) h = Math.imul(h ^ (t + 1), 0x85ebca6b) >>> 0;
  for (let j = 0; j < V; j++) row[j] = ((Math.imul(h ^ (j * 0x27d4eb2f), 0xc2b2ae35) >>> 0) / 2 ** 32) * 3;
  return row;
}

/** The draft's q after `context`: a distribution that differs from the target's. */
function draftProbs(context: readonly number[]): Float32Array {
  const logits = targetLogits([...context, 3]);
  const q = new Float32Array(V);
  let total = 0;
  for (let j = 0; j < V; j++) total += q[j] = Math.exp(logits[j]!);
  for (let j = 0; j < V; j++) q[j]! /= total;
  return q;
}

/** Reference: the distribution the sampler draws from at `output`'s next position, written plainly. */
function reference(params: SamplingParams, output: readonly number[], banned: boolean): number[] {
  const x = Array.from(targetLogits([...PROMPT, ...output]));
  if (banned) x[EOS] = -Infinity;
  for (const [id, bias] of Object.entries(params.logitBias ?? {})) x[Number(id)]! += bias;
  for (const t of new Set([...PROMPT, ...output])) x[t] = x[t]! > 0 ? x[t]! / params.repetitionPenalty : x[t]! * params.repetitionPenalty;
  const counts = new Map<number, number>();
  for (const t of output) counts.set(t, (counts.get(t) ?? 0) + 1);
  for (const [t, c] of counts) x[t] = x[t]! - params.frequencyPenalty * c - params.presencePenalty;
  const max = Math.max(...x);
  let p = x.map((v) => Math.exp((v - max) / params.temperature));
  const pMax = Math.max(...p);
  p = p.map((v) => (v >= params.minP * pMax ? v : 0));
  const order = [...p.keys()].sort((a, b) => p[b]! - p[a]!);
  if (params.topK > 0) for (const j of order.slice(params.topK)) p[j] = 0;
  const total = p.reduce((a, b) => a + b, 0);
  let before = 0;
  for (const j of order) {
    if (before >= params.topP * total) p[j] = 0;
    before += p[j]!;
  }
  const kept = p.reduce((a, b) => a + b, 0);
  return p.map((v) => v / kept);
}

/** The χ² statistic of `observed` counts against `expected` probabilities; a count where p = 0 is infinite. */
function chiSquare(observed: readonly number[], expected: readonly number[], n: number): { chi2: number; df: number } {
  let chi2 = 0;
  let df = -1;
  observed.forEach((o, i) => {
    const e = expected[i]! * n;
    if (e === 0) chi2 += o === 0 ? 0 : Infinity;
    else {
      chi2 += (o - e) ** 2 / e;
      df++;
    }
  });
  return { chi2, df };
}

/** The χ² value a true hypothesis exceeds with probability 1e-4 (Wilson–Hilferty). */
function critical(df: number): number {
  const z = 3.719;
  return df * (1 - 2 / (9 * df) + z * Math.sqrt(2 / (9 * df))) ** 3;
}

const asDistribution = (p: readonly number[]): TokenDistribution => {
  const ids = [...p.keys()].filter((j) => p[j]! > 0);
  return { ids: Int32Array.from(ids), probs: Float64Array.from(ids.map((j) => p[j]!)) };
};

/** A draw from probabilities `q` with the uniform `u`. */
function drawFrom(q: ArrayLike<number>, u: number): number {
  let acc = 0;
  for (let j = 0; j < q.length; j++) {
    acc += q[j]!;
    if (u < acc) return j;
  }
  return q.length - 1;
}

const SAMPLED: SamplingParams = { ...GREEDY_SAMPLING, temperature: 0.8, topK: 6, topP: 0.92, minP: 0.02, repetitionPenalty: 1.3, frequencyPenalty: 0.6, presencePenalty: 0.3, logitBias: { 2: 1.5 } };

describe('the acceptance rule against a spread q (one position)', () => {
  /** A deliberately wrong rule: accepts as the right one does, but resamples a rejection from p itself, not the residual max(0, p − q). */
  const resamplesFromP = (p: TokenDistribution, x: number, q: ArrayLike<number>, uAccept: number, uResidual: number): ProposalVerdict => {
    const right = checkAgainstDistribution(p, x, q, uAccept, uResidual);
    return right.accepted ? right : { tokenId: p.ids[drawFrom(p.probs, uResidual)]!, accepted: false };
  };

  function frequencies(rule: typeof checkAgainstDistribution, p: readonly number[], q: Float32Array, n: number): number[] {
    const next = rng(12345);
    const counts = new Array<number>(V).fill(0);
    const target = asDistribution(p);
    for (let i = 0; i < n; i++) {
      const x = drawFrom(q, next(2 ** 30) / 2 ** 30);
      counts[rule(target, x, q, next(2 ** 30) / 2 ** 30, next(2 ** 30) / 2 ** 30).tokenId]!++;
    }
    return counts;
  }

  it('gives tokens distributed as p (top_k, top_p and penalties applied), and the test refuses a rule that resamples from p', () => {
    const p = reference(SAMPLED, [2, 5], false);
    const q = draftProbs([9]);
    const n = 40_000;
    const right = chiSquare(frequencies(checkAgainstDistribution, p, q, n), p, n);
    expect(right.chi2).toBeLessThan(critical(right.df));
    const wrong = chiSquare(frequencies(resamplesFromP, p, q, n), p, n);
    expect(wrong.chi2).toBeGreaterThan(critical(wrong.df));
  });

  it('accepts with probability min(1, p(x) / q(x))', () => {
    const p = asDistribution([0.5, 0.3, 0.2, 0, 0, 0, 0, 0]);
    const q = Float32Array.of(0.25, 0.6, 0, 0.15, 0, 0, 0, 0);
    expect(checkAgainstDistribution(p, 0, q, 0.999, 0).accepted).toBe(true);
    expect(checkAgainstDistribution(p, 1, q, 0.49, 0).accepted).toBe(true);
    expect(checkAgainstDistribution(p, 1, q, 0.51, 0).accepted).toBe(false);
    // A token p cannot take is always rejected; the residual max(0, p − q) is {0: 0.25, 2: 0.2}.
    expect(checkAgainstDistribution(p, 3, q, 0, 0.5)).toEqual({ tokenId: 0, accepted: false });
    expect(checkAgainstDistribution(p, 3, q, 0, 0.6)).toEqual({ tokenId: 2, accepted: false });
  });
});

describe('Sampler.verify (checked proposals end to end)', () => {
  const K = 3;
  type Proposer = (context: readonly number[], next: (n: number) => number) => { tokens: number[]; probs?: Float32Array[] };

  /** A point-mass proposer: a fixed function of the context, often but not always the target's likely token. */
  const pointMass: Proposer = (context) => {
    const tokens: number[] = [];
    for (let i = 0; i < K; i++) tokens.push((context.length * 3 + (context.at(-1) ?? 0) + i) % V);
    return { tokens };
  };
  /** A sampling draft: each token drawn from q given the context so far, q passed along. */
  const spread =
    (claimed: 'honest' | 'lies'): Proposer =>
    (context, next) => {
      const tokens: number[] = [];
      const probs: Float32Array[] = [];
      for (let i = 0; i < K; i++) {
        const q = draftProbs([...context, ...tokens]);
        tokens.push(drawFrom(q, next(2 ** 30) / 2 ** 30));
        // A lying proposer claims a uniform q it did not draw from.
        probs.push(claimed === 'honest' ? q : new Float32Array(V).fill(1 / V));
      }
      return { tokens, probs };
    };

  /** The first `length` tokens of a seeded request decoded by checked proposals; min_tokens 1 bans EOS at the first position only. */
  function decode(params: SamplingParams, seed: number, proposer: Proposer | null, length: number): number[] {
    const next = rng(seed ^ 0x5bd1e995);
    const output: number[] = [];
    while (output.length < length) {
      const context = [...PROMPT, ...output];
      const draft = proposer ? proposer(context, next) : { tokens: [] };
      const logits = new Float32Array((draft.tokens.length + 1) * V);
      for (let i = 0; i <= draft.tokens.length; i++) logits.set(targetLogits([...context, ...draft.tokens.slice(0, i)]), i * V);
      const result = sampler.verify({
        requestId: 'r',
        params: { ...params, seed },
        promptTokenIds: PROMPT,
        outputTokenIds: [...output],
        bannedTokenIds: [EOS],
        banUntil: 1,
        logits,
        drafts: draft.tokens,
        draftProbs: draft.probs,
      });
      expect(result.tokenIds).toHaveLength(result.numAccepted + 1);
      expect(result.tokenIds.slice(0, result.numAccepted)).toEqual(draft.tokens.slice(0, result.numAccepted));
      output.push(...result.tokenIds);
    }
    return output.slice(0, length);
  }

  /** χ² of the first two tokens' joint frequencies against p(a) · p(b | a). */
  function jointChiSquare(params: SamplingParams, proposer: Proposer, n: number): { chi2: number; df: number } {
    const counts = new Array<number>(V * V).fill(0);
    for (let seed = 1; seed <= n; seed++) {
      const [a, b] = decode(params, seed, proposer, 2);
      counts[a! * V + b!]!++;
    }
    const first = reference(params, [], true);
    const expected = counts.map((_, cell) => first[Math.floor(cell / V)]! * reference(params, [Math.floor(cell / V)], false)[cell % V]!);
    return chiSquare(counts, expected, n);
  }

  it.each([
    ['point-mass proposals', pointMass],
    ['proposals drawn from a spread q', spread('honest')],
  ])('%s: the first two tokens follow the target (penalties, bias, top_k / top_p / min_p, min_tokens)', (_, proposer) => {
    const { chi2, df } = jointChiSquare(SAMPLED, proposer, 8_000);
    expect(df).toBeGreaterThan(20);
    expect(chi2).toBeLessThan(critical(df));
  });

  it('refuses a proposer whose q is not what it drew from', () => {
    const { chi2, df } = jointChiSquare(SAMPLED, spread('lies'), 8_000);
    expect(chi2).toBeGreaterThan(critical(df));
  });

  it('point-mass proposals give a seeded request exactly the tokens decoding without them gives', () => {
    for (let seed = 1; seed <= 200; seed++) expect(decode(SAMPLED, seed, pointMass, 12)).toEqual(decode(SAMPLED, seed, null, 12));
    const greedy = { ...GREEDY_SAMPLING, frequencyPenalty: 0.5 };
    expect(decode(greedy, 1, pointMass, 12)).toEqual(decode(greedy, 1, null, 12));
  });

  it('reports the target’s logprob at each accepted position', () => {
    const params = { ...SAMPLED, logprobs: true, topLogprobs: 2 };
    const context = [...PROMPT];
    const drafts = [3, 5];
    const logits = new Float32Array(3 * V);
    for (let i = 0; i <= 2; i++) logits.set(targetLogits([...context, ...drafts.slice(0, i)]), i * V);
    // Seed found by search to accept both: the check needs a case that gets past position 0.
    const result = Array.from({ length: 500 }, (_, seed) =>
      sampler.verify({ requestId: 'r', params: { ...params, seed }, promptTokenIds: PROMPT, outputTokenIds: [], bannedTokenIds: null, banUntil: 0, logits: logits.slice(), drafts }),
    ).find((r) => r.numAccepted >= 1)!;
    expect(result.logprobs).toHaveLength(result.tokenIds.length);
    result.tokenIds.forEach((token, i) => {
      const p = reference(params, drafts.slice(0, i), false);
      // Logprobs are of the processed row before temperature and truncation: check against the penalized softmax.
      const processed = reference({ ...params, temperature: 1, topK: 0, topP: 1, minP: 0 }, drafts.slice(0, i), false);
      expect(p[token]).toBeGreaterThan(0);
      expect(result.logprobs![i]!.tokenId).toBe(token);
      expect(result.logprobs![i]!.logprob).toBeCloseTo(Math.log(processed[token]!), 4);
    });
  });
});
