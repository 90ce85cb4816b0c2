// Logit processors that touch a few tokens of a row in place: banned tokens, logit_bias and the
// repetition / frequency / presence penalties. Work is proportional to the prompt, the output and
// the bias map, never to the vocabulary: "which tokens were seen" is tracked with epoch stamps in
// vocab-sized arrays that are never cleared.

import type { SamplingParams } from '../contracts/generate.js';

/** logit_bias compiled once per SamplingParams object (the worker reuses it every step). */
interface CompiledBias {
  readonly ids: Int32Array;
  readonly values: Float32Array;
}

const BIAS_LIMIT = 100;
const compiledBiases = new WeakMap<object, CompiledBias>();

function compileBias(bias: Readonly<Record<number, number>>): CompiledBias {
  let cached = compiledBiases.get(bias);
  if (cached) return cached;
  const keys = Object.keys(bias);
  const ids = new Int32Array(keys.length);
  const values = new Float32Array(keys.length);
  keys.forEach((key, i) => {
    ids[i] = Number(key);
    // Validation rejects out-of-range values; clamping keeps internal callers within OpenAI's range.
    values[i] = Math.max(-BIAS_LIMIT, Math.min(BIAS_LIMIT, bias[Number(key)] ?? 0));
  });
  cached = { ids, values };
  compiledBiases.set(bias, cached);
  return cached;
}

export interface PenaltyInput {
  readonly params: SamplingParams;
  readonly promptTokenIds: ArrayLike<number>;
  readonly outputTokenIds: ArrayLike<number>;
  /** Tokens forced to −∞ (EOS and stop ids while min_tokens is unmet); null for none. */
  readonly bannedTokenIds: ArrayLike<number> | null;
}

/** True when `apply` would change anything. */
export function hasLogitProcessors(input: PenaltyInput): boolean {
  const p = input.params;
  return (input.bannedTokenIds !== null && input.bannedTokenIds.length > 0) || p.logitBias !== null || p.repetitionPenalty !== 1 || p.frequencyPenalty !== 0 || p.presencePenalty !== 0;
}

export class LogitProcessors {
  private readonly counts: Uint32Array;
  private readonly countStamp: Uint32Array;
  private readonly seenStamp: Uint32Array;
  private readonly origStamp: Uint32Array;
  /** Distinct output tokens of the current call (valid up to numDistinct). */
  private readonly distinct: Int32Array;
  private numDistinct = 0;
  /** First-modification log, for reporting raw (unprocessed) logprobs afterwards. */
  private readonly origIds: Int32Array;
  private readonly origValues: Float32Array;
  private numOrig = 0;
  private epoch = 0;

  constructor(private readonly vocabSize: number) {
    this.counts = new Uint32Array(vocabSize);
    this.countStamp = new Uint32Array(vocabSize);
    this.seenStamp = new Uint32Array(vocabSize);
    this.origStamp = new Uint32Array(vocabSize);
    this.distinct = new Int32Array(vocabSize);
    this.origIds = new Int32Array(vocabSize);
    this.origValues = new Float32Array(vocabSize);
  }

  /**
   * Applies, in vLLM V1's order: banned tokens and logit_bias (the logits processors), then the
   * repetition penalty (HF: positive logits ÷ p, negative × p, over prompt ∪ output), then the
   * frequency and presence penalties (OpenAI: − f·count − p·[count > 0], over the output only).
   * Returns false, touching nothing, when the request has none of them.
   */
  apply(row: Float32Array, input: PenaltyInput): boolean {
    if (!hasLogitProcessors(input)) return false;
    this.nextEpoch();
    const { params, bannedTokenIds } = input;
    if (bannedTokenIds) {
      for (let i = 0; i < bannedTokenIds.length; i++) this.set(row, bannedTokenIds[i]!, -Infinity);
    }
    if (params.logitBias) {
      const { ids, values } = compileBias(params.logitBias);
      for (let i = 0; i < ids.length; i++) this.set(row, ids[i]!, row[ids[i]!]! + values[i]!);
    }
    const needCounts = params.frequencyPenalty !== 0 || params.presencePenalty !== 0 || params.repetitionPenalty !== 1;
    if (!needCounts) return true;
    this.countOutput(input.outputTokenIds);
    if (params.repetitionPenalty !== 1) this.applyRepetition(row, input.promptTokenIds, params.repetitionPenalty);
    if (params.frequencyPenalty !== 0 || params.presencePenalty !== 0) {
      for (let i = 0; i < this.numDistinct; i++) {
        const t = this.distinct[i]!;
        this.set(row, t, row[t]! - params.frequencyPenalty * this.counts[t]! - params.presencePenalty);
      }
    }
    return true;
  }

  /** The row's value for `tokenId` before the last `apply` touched it. */
  originalValue(row: Float32Array, tokenId: number): number {
    if (this.origStamp[tokenId] !== this.epoch) return row[tokenId]!;
    for (let i = 0; i < this.numOrig; i++) if (this.origIds[i] === tokenId) return this.origValues[i]!;
    return row[tokenId]!;
  }

  private nextEpoch(): void {
    // Stamps are compared for equality only; on wrap-around clear them once so stale ones can't match.
    if (this.epoch === 0xffffffff) {
      this.countStamp.fill(0);
      this.seenStamp.fill(0);
      this.origStamp.fill(0);
      this.epoch = 0;
    }
    this.epoch++;
    this.numDistinct = 0;
    this.numOrig = 0;
  }

  private set(row: Float32Array, tokenId: number, value: number): void {
    if (!(tokenId >= 0 && tokenId < this.vocabSize)) return;
    if (this.origStamp[tokenId] !== this.epoch) {
      this.origStamp[tokenId] = this.epoch;
      this.origIds[this.numOrig] = tokenId;
      this.origValues[this.numOrig++] = row[tokenId]!;
    }
    row[tokenId] = value;
  }

  private countOutput(output: ArrayLike<number>): void {
    const epoch = this.epoch;
    for (let i = 0; i < output.length; i++) {
      const t = output[i]!;
      if (!(t >= 0 && t < this.vocabSize)) continue;
      if (this.countStamp[t] !== epoch) {
        this.countStamp[t] = epoch;
        this.counts[t] = 0;
        this.distinct[this.numDistinct++] = t;
      }
      this.counts[t] = this.counts[t]! + 1;
    }
  }

  private applyRepetition(row: Float32Array, prompt: ArrayLike<number>, penalty: number): void {
    for (let i = 0; i < prompt.length; i++) this.penalizeOnce(row, prompt[i]!, penalty);
    for (let i = 0; i < this.numDistinct; i++) this.penalizeOnce(row, this.distinct[i]!, penalty);
  }

  private penalizeOnce(row: Float32Array, t: number, penalty: number): void {
    if (!(t >= 0 && t < this.vocabSize) || this.seenStamp[t] === this.epoch) return;
    this.seenStamp[t] = this.epoch;
    const x = row[t]!;
    this.set(row, t, x > 0 ? x / penalty : x * penalty);
  }
}
