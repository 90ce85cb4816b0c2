// The sampler: one token per sequence from a float32 logits row, on the engine worker.
//
// Pipeline (vLLM V1's order): banned tokens and logit_bias → repetition, frequency and presence
// penalties → greedy argmax when temperature < 1e-5, otherwise temperature → min_p → top_k →
// top_p → one draw from the request's own counter-based stream (sampler-rng.ts).
//
// Cost model on a 151,936-token row: the penalties touch only seen tokens; sampling makes one
// compare-only pass that gathers the tokens within 30 nats (after temperature) of the maximum,
// exponentiates only those, and selects top_k / top_p by partitioning, never by sorting the row.
// Tokens more than 30 nats below the best have probability < 1e-13 each and < 1.5e-8 together,
// under float32 logit resolution, so treating them as zero changes no observable distribution.
//
// Logprobs are the log-softmax over the sampleable vocabulary of the logits after banned tokens,
// logit_bias and penalties, before temperature and truncation ("processed", the contract's
// definition: a greedy request still gets meaningful values). `logprobsMode: 'raw'` reports the
// model's unprocessed log-softmax instead, which is vLLM V1's default.

import type { SampledTokens, SamplingParams, TokenLogprob, TopLogprob } from '../contracts/generate.js';
import { LogitProcessors, hasLogitProcessors, type PenaltyInput } from './sampler-penalties.js';
import { seededKey, uniformAt, unseededKey, type StreamKey } from './sampler-rng.js';
import { argmax, gatherAtLeast, gatherNearMax, keepAtLeast, kthLargest, topN } from './sampler-select.js';
import { CandidateTruncation, NEGLIGIBLE_NATS, logSumExpNear } from './sampler-truncate.js';

/** Temperatures below this are greedy (vLLM's _SAMPLING_EPS). */
export const SAMPLING_EPS = 1e-5;

/** Up to this k, top_k runs as a bounded heap over the row instead of over gathered candidates. */
const SMALL_TOP_K = 256;

export type LogprobsMode = 'processed' | 'raw';

export interface SamplerOptions {
  /** Length of a logits row (config.json vocab_size, e.g. 151,936). */
  readonly vocabSize: number;
  /**
   * Ids at or above this are never sampled nor reported: the padding rows of an embedding past
   * the tokenizer's last id (Qwen3: 151,669) decode to nothing. Defaults to vocabSize.
   */
  readonly sampleableVocabSize?: number;
  readonly logprobsMode?: LogprobsMode;
}

export interface SamplerInput extends PenaltyInput {
  readonly requestId: string;
  /** One vocabSize-long row. The sampler overwrites it in place (penalties and bias). */
  readonly logits: Float32Array;
}

export interface SampleResult {
  readonly tokenId: number;
  readonly logprob: TokenLogprob | null;
}

/** One row of a step's logits batch, in row order. */
export interface SamplerRow extends PenaltyInput {
  readonly requestId: string;
}

export class Sampler {
  private readonly vocabSize: number;
  private readonly sampleable: number;
  private readonly mode: LogprobsMode;
  private readonly processors: LogitProcessors;
  private readonly truncation: CandidateTruncation;
  // Candidate scratch: token ids and their logits, then their unnormalized probabilities.
  private readonly candIds: Int32Array;
  private readonly candVals: Float64Array;
  private readonly heapIds = new Int32Array(SMALL_TOP_K);
  private readonly heapVals = new Float64Array(SMALL_TOP_K);
  private topIds = new Int32Array(32);
  private topVals = new Float64Array(32);
  private readonly gathered = { max: -Infinity };
  /** The logit floor of the current draw (window, min_p, small top_k). */
  private floor = -Infinity;

  constructor(options: SamplerOptions) {
    this.vocabSize = options.vocabSize;
    this.sampleable = Math.min(options.sampleableVocabSize ?? options.vocabSize, options.vocabSize);
    this.mode = options.logprobsMode ?? 'processed';
    this.processors = new LogitProcessors(this.vocabSize);
    this.truncation = new CandidateTruncation(this.vocabSize);
    this.candIds = new Int32Array(this.vocabSize);
    this.candVals = new Float64Array(this.vocabSize);
  }

  /** Samples one token for one request. The draw depends only on this row, the params and the output length. */
  sample(input: SamplerInput): SampleResult {
    const { logits: row, params } = input;
    const n = Math.min(row.length, this.sampleable);
    let raw: { lse: number; top: TopLogprob[] } | null = null;
    if (params.logprobs && this.mode === 'raw') raw = this.logprobBasis(row, n, row[argmax(row, n)]!, params.topLogprobs);
    const processed = hasLogitProcessors(input);
    if (processed) this.processors.apply(row, input);

    let tokenId: number;
    let max: number;
    if (params.temperature < SAMPLING_EPS) {
      tokenId = argmax(row, n);
      max = row[tokenId]!;
    } else {
      tokenId = this.draw(row, n, params, streamKey(input.requestId, params), input.outputTokenIds.length);
      max = this.gathered.max;
    }
    if (!params.logprobs) return { tokenId, logprob: null };
    if (raw) {
      const chosen = processed ? this.processors.originalValue(row, tokenId) : row[tokenId]!;
      return { tokenId, logprob: { tokenId, logprob: chosen - raw.lse, top: raw.top } };
    }
    const basis = this.logprobBasis(row, n, max, params.topLogprobs);
    return { tokenId, logprob: { tokenId, logprob: row[tokenId]! - basis.lse, top: basis.top } };
  }

  /**
   * Samples every row of a step's logits, `logits` being [rows.length, vocabSize] row-major (the
   * runner's output for the sampled positions). Rows are overwritten.
   */
  sampleStep(logits: Float32Array, rows: readonly SamplerRow[]): SampledTokens[] {
    const v = this.vocabSize;
    if (logits.length < rows.length * v) throw new Error(`logits hold ${logits.length / v} rows of ${v}, ${rows.length} needed`);
    return rows.map((row, i) => {
      const { tokenId, logprob } = this.sample({ ...row, logits: logits.subarray(i * v, (i + 1) * v) });
      return { requestId: row.requestId, tokenIds: [tokenId], logprobs: logprob ? [logprob] : null };
    });
  }

  /** Temperature → min_p → top_k → top_p → one draw; `gathered.max` is left as the row's maximum. */
  private draw(row: Float32Array, n: number, params: SamplingParams, key: StreamKey, counter: number): number {
    const t = params.temperature;
    const ids = this.candIds;
    const vals = this.candVals;
    let count = this.gatherCandidates(row, n, params);
    const max = this.gathered.max;
    // Everything banned, or an infinite logit: no distribution to draw from, only a best token.
    if (count === 0 || !Number.isFinite(max)) return argmax(row, n);
    if (params.topK > SMALL_TOP_K) count = this.truncation.topK(ids, vals, count, params.topK, max, t);
    count = this.truncation.weigh(ids, vals, count, max, t, this.floor);
    let total = this.truncation.total;
    if (params.topP < 1 && count > 1) {
      count = this.truncation.topP(ids, vals, count, params.topP * total);
      total = 0;
      for (let j = 0; j < count; j++) total += vals[j]!;
    }
    const target = uniformAt(key, counter) * total;
    let acc = 0;
    for (let j = 0; j < count; j++) {
      acc += vals[j]!;
      if (target < acc) return ids[j]!;
    }
    return ids[count - 1]!;
  }

  /**
   * Collects the tokens that survive the 30-nat window, min_p and (for a small k) top_k into the
   * candidate arrays as logits; sets `gathered.max`. A small top_k finds its k-th value with a
   * bounded heap, so only about k tokens are ever gathered.
   */
  private gatherCandidates(row: Float32Array, n: number, params: SamplingParams): number {
    const t = params.temperature;
    const smallK = params.topK > 0 && params.topK <= SMALL_TOP_K;
    let count = 0;
    let floorK = -Infinity;
    if (smallK) floorK = kthLargest(row, n, params.topK, this.heapIds, this.heapVals, this.gathered);
    else count = gatherNearMax(row, n, NEGLIGIBLE_NATS * t, this.candIds, this.candVals, this.gathered);
    const max = this.gathered.max;
    if (!Number.isFinite(max)) return 0;
    // min_p keeps p ≥ min_p · p_max, i.e. logit ≥ max + T·ln(min_p): no exponentials needed.
    const floorP = params.minP > 0 ? max + t * Math.log(params.minP) : -Infinity;
    const floor = Math.max(max - NEGLIGIBLE_NATS * t, floorP, floorK);
    this.floor = floor;
    if (smallK) return gatherAtLeast(row, n, floor, this.candIds, this.candVals);
    // A large top_k counts candidates, so the floor must apply first; otherwise weigh() applies it.
    return params.topK > SMALL_TOP_K ? keepAtLeast(this.candIds, this.candVals, count, floor) : count;
  }

  private logprobBasis(row: Float32Array, n: number, max: number, numTop: number): { lse: number; top: TopLogprob[] } {
    const lse = logSumExpNear(row, n, max);
    if (numTop > this.topIds.length) {
      this.topIds = new Int32Array(numTop);
      this.topVals = new Float64Array(numTop);
    }
    const found = topN(row, n, numTop, this.topIds, this.topVals);
    const top: TopLogprob[] = new Array(found);
    for (let i = 0; i < found; i++) top[i] = { tokenId: this.topIds[i]!, logprob: this.topVals[i]! - lse };
    return { lse, top };
  }
}

function streamKey(requestId: string, params: SamplingParams): StreamKey {
  return params.seed === null ? unseededKey(requestId) : seededKey(params.seed);
}
