// The sampler: one token per sequence from a float32 logits row, on the engine worker.
//
// One token, top to bottom (vLLM V1's order), all in `sample`:
//   0. the grammar mask (mask.ts), for constrained rows only: disallowed tokens to −∞;
//   1. logit processors (penalties.ts): banned tokens and logit_bias, then the repetition,
//      frequency and presence penalties, in place, touching only seen tokens;
//   2. greedy argmax when temperature < 1e-5, otherwise one random draw (draw.ts): temperature →
//      min_p → top_k → top_p → a draw from the request's own counter-based stream (rng.ts);
//   3. logprobs beside the draw (logprobs.ts).
//
// Cost model on a 151,936-token row: the penalties touch only seen tokens; greedy is one compare
// pass; a random draw is one compare pass that gathers the tokens near the maximum, exponentials
// for those only, and top_k / top_p by bounded heaps and partitioning, never a sort of the row.
// Tokens more than 30 nats below the best have probability < 1e-13 each and < 1.5e-8 together,
// under float32 logit resolution, so they count as zero.
//
// Logprobs are the log-softmax over the sampleable vocabulary of the logits after banned tokens,
// logit_bias and penalties, before temperature and truncation ("processed", the contract's
// definition: a greedy request still gets meaningful values). `logprobsMode: 'raw'` reports the
// model's unprocessed log-softmax instead, which is vLLM V1's default.

import type { SampledTokens, SamplingParams, TokenLogprob } from '../contracts/generate.js';
import { Drawer } from './draw.js';
import { LogprobTable, type LogprobBasis } from './logprobs.js';
import { applyTokenMask, maskedArgmax } from './mask.js';
import { hasLogitProcessors, LogitProcessors, type PenaltyInput } from './penalties.js';
import { draftKey, proposalKeys, seededKey, uniformAt, unseededKey, type StreamKey } from './rng.js';
import { checkAgainstDistribution, checkPointMass } from './acceptance.js';
import { argmax, topN } from './select.js';

/** Temperatures below this are greedy (vLLM's _SAMPLING_EPS). */
export const SAMPLING_EPS = 1e-5;

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
  /** One vocabSize-long row. The sampler overwrites it in place (mask, penalties and bias). */
  readonly logits: Float32Array;
  /** The grammar's allowed next tokens as a bitmask (mask.ts); absent or null: unconstrained. */
  readonly allowedTokens?: Int32Array | null;
  /** For a greedy row: also return its best this-many tokens (`SampleResult.candidates`), found in the pass that finds the argmax. */
  readonly greedyCandidates?: number;
}

export interface SampleResult {
  readonly tokenId: number;
  readonly logprob: TokenLogprob | null;
  /**
   * With `greedyCandidates`: the row's best tokens after the processors, best first, ties by
   * ascending id — argmax's order, so the first of these a mask allows is what resampleGreedy()
   * chooses under that mask. −∞ (banned) tokens are never candidates.
   */
  readonly candidates?: Int32Array;
}

/** A speculative proposal at one position: its token and the distribution it was drawn from (null: a point mass). */
interface Proposal {
  readonly tokenId: number;
  readonly q: ArrayLike<number> | null;
}

/** A sampled row's checked proposal (Sampler.verify). */
export interface VerifyInput extends SamplerRow {
  /** numDrafts + 1 vocabSize-long rows, row-major: the target's logits after the fed token and after each proposal. Overwritten. */
  readonly logits: Float32Array;
  readonly drafts: ArrayLike<number>;
  /** q for each proposal (Draft.probs); absent: point masses. */
  readonly draftProbs?: readonly ArrayLike<number>[] | undefined;
  /** bannedTokenIds apply while the output (proposals before the position included) is shorter than this: min_tokens. */
  readonly banUntil: number;
  /** A constrained row's grammar mask at each position (after i proposals); absent: unconstrained. */
  readonly masks?: readonly Int32Array[] | undefined;
}

export interface VerifyResult {
  /** The accepted proposals, then the token of the first position that did not accept one (absent when a grammar ended on the last accepted proposal). */
  readonly tokenIds: number[];
  readonly logprobs: TokenLogprob[] | null;
  readonly numAccepted: number;
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
  private readonly drawer: Drawer;
  private readonly logprobs = new LogprobTable();

  constructor(options: SamplerOptions) {
    this.vocabSize = options.vocabSize;
    this.sampleable = Math.min(options.sampleableVocabSize ?? options.vocabSize, options.vocabSize);
    this.mode = options.logprobsMode ?? 'processed';
    this.processors = new LogitProcessors(this.vocabSize);
    this.drawer = new Drawer(this.vocabSize);
  }

  /** Ids at or past this are never chosen (padded embedding rows past the tokenizer). */
  get sampleableVocab(): number {
    return this.sampleable;
  }

  /**
   * True when sample() would return the row's plain argmax over [0, sampleableVocab) and nothing
   * else: greedy, no logprobs, no processor (penalties, bias, banned ids). A model's greedy head
   * (ModelRunner.executeGreedy) gives exactly that token, so such a row needs no logits.
   */
  takesArgmax(row: SamplerRow): boolean {
    return row.params.temperature < SAMPLING_EPS && !row.params.logprobs && !hasLogitProcessors(row);
  }

  /** Samples one token for one request. The draw depends only on this row, the params and the output length. */
  sample(input: SamplerInput): SampleResult {
    return this.pick(input, null);
  }

  /**
   * Checks a speculative proposal (acceptance.ts) against the target's logits at each of its
   * positions, as decoding would see them there: position i's row is processed with the i
   * proposals before it counted as output (penalties, the draw's position, min_tokens' ban) and
   * under the grammar's mask for that position. Keeps the proposals up to the first rejection,
   * then the rejected position's token — or, when every proposal holds, one more drawn from the
   * last row — each with its logprob when asked. A constrained row stops without a token at a
   * position it has no mask for (its grammar ended on the proposal before).
   */
  verify(input: VerifyInput): VerifyResult {
    const { logits, drafts, draftProbs, masks, outputTokenIds, banUntil } = input;
    const v = this.vocabSize;
    const numDrafts = drafts.length;
    if (logits.length !== (numDrafts + 1) * v) throw new Error(`${logits.length / v} logits rows for ${numDrafts} proposals (expected one more)`);
    const tokenIds: number[] = [];
    const logprobs: TokenLogprob[] | null = input.params.logprobs ? [] : null;
    let numAccepted = 0;
    for (let i = 0; i <= numDrafts; i++) {
      if (masks && i >= masks.length) break;
      const output = i === 0 ? outputTokenIds : [...Array.from(outputTokenIds), ...Array.from(drafts).slice(0, i)];
      const position: SamplerInput = {
        ...input,
        logits: logits.subarray(i * v, (i + 1) * v),
        outputTokenIds: output,
        bannedTokenIds: output.length < banUntil ? input.bannedTokenIds : null,
        allowedTokens: masks ? masks[i]! : null,
      };
      const proposal = i < numDrafts ? { tokenId: drafts[i]!, q: draftProbs?.[i] ?? null } : null;
      const result = this.pick(position, proposal);
      tokenIds.push(result.tokenId);
      if (result.logprob) logprobs?.push(result.logprob);
      if (!result.accepted) break;
      numAccepted++;
    }
    return { tokenIds, logprobs, numAccepted };
  }

  /**
   * A draft model's proposal for a row (engine-worker/draft-model.ts): the row processed as
   * sample() processes it (mask, penalties, bias, banned ids), then for a greedy row its argmax
   * (a point mass, q null) and for a sampled one a token drawn from exactly the distribution
   * draw() would sample from there, returned as q (dense over the sampleable ids) for the
   * acceptance rule. The draw uses a stream of its own (rng.draftKey), so a seeded request's
   * proposals repeat and stay independent of the acceptance test's uniforms.
   */
  propose(input: SamplerInput): { readonly tokenId: number; readonly q: Float32Array | null } {
    const { logits: row, params } = input;
    const n = Math.min(row.length, this.sampleable);
    if (input.allowedTokens) applyTokenMask(row, input.allowedTokens);
    this.processors.apply(row, input);
    if (params.temperature < SAMPLING_EPS) return { tokenId: argmax(row, n), q: null };
    const { ids, probs } = this.drawer.distribution(row, n, params);
    const q = new Float32Array(n);
    for (let j = 0; j < ids.length; j++) q[ids[j]!] = probs[j]!;
    let rest = uniformAt(draftKey(streamKey(input.requestId, params)), input.outputTokenIds.length);
    for (let j = 0; j < ids.length; j++) {
      rest -= probs[j]!;
      if (rest < 0) return { tokenId: ids[j]!, q };
    }
    return { tokenId: ids[ids.length - 1]!, q };
  }

  /** sample(), or with `proposal` the acceptance rule's token at a proposed position. */
  private pick(input: SamplerInput, proposal: Proposal | null): SampleResult & { readonly accepted: boolean } {
    const { logits: row, params } = input;
    const n = Math.min(row.length, this.sampleable);
    const wantsLogprobs = params.logprobs;
    // Raw logprobs describe the row before any processor touches it.
    const raw = wantsLogprobs && this.mode === 'raw' ? this.logprobs.basis(row, n, row[argmax(row, n)]!, params.topLogprobs) : null;

    // The mask leaves allowed logits as they are, so the raw value of the sampled token survives it.
    if (input.allowedTokens) applyTokenMask(row, input.allowedTokens);
    const processed = this.processors.apply(row, input);

    const greedy = params.temperature < SAMPLING_EPS;
    const candidates = greedy && input.greedyCandidates ? this.bestTokens(row, n, input.greedyCandidates) : undefined;
    let tokenId: number;
    let accepted = false;
    if (proposal?.q && !greedy) {
      // A spread q: the explicit rule against the distribution the draw would sample from.
      const keys = proposalKeys(streamKey(input.requestId, params));
      const counter = input.outputTokenIds.length;
      ({ tokenId, accepted } = checkAgainstDistribution(this.drawer.distribution(row, n, params), proposal.tokenId, proposal.q, uniformAt(keys.accept, counter), uniformAt(keys.residual, counter)));
    } else {
      tokenId = candidates && candidates.length > 0 ? candidates[0]! : greedy ? argmax(row, n) : this.drawer.draw(row, n, params, streamKey(input.requestId, params), input.outputTokenIds.length);
      // A point mass (or a greedy row, whose p is one): the position's own draw decides.
      if (proposal) accepted = checkPointMass(proposal.tokenId, tokenId).accepted;
    }
    const logprob = !wantsLogprobs
      ? null
      : raw
        ? logprobOf(tokenId, processed ? this.processors.originalValue(row, tokenId) : row[tokenId]!, raw)
        : // Greedy and the draw both found the processed row's maximum already.
          logprobOf(tokenId, row[tokenId]!, this.logprobs.basis(row, n, greedy ? row[tokenId]! : this.drawer.max, params.topLogprobs));
    return candidates ? { tokenId, logprob, candidates, accepted } : { tokenId, logprob, accepted };
  }

  /**
   * The greedy choice under `mask` for a row sample() already processed in place (a greedy row
   * sampled unmasked first). Masking commutes with the processors — none raises a −∞ — so this is
   * the token sample() would have chosen had it been given the mask.
   */
  resampleGreedy(row: Float32Array, mask: Int32Array): number {
    return maskedArgmax(row, mask, Math.min(row.length, this.sampleable));
  }

  /** The `count` best finite logits of row[0, n), best first, ties by ascending id (topN's order, which is argmax's). */
  private bestTokens(row: Float32Array, n: number, count: number): Int32Array {
    const ids = new Int32Array(count);
    const found = topN(row, n, count, ids, new Float64Array(count));
    let usable = 0;
    while (usable < found && row[ids[usable]!]! > Number.NEGATIVE_INFINITY) usable++;
    return ids.subarray(0, usable);
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
}

function logprobOf(tokenId: number, logit: number, basis: LogprobBasis): TokenLogprob {
  return { tokenId, logprob: logit - basis.lse, top: basis.top };
}

function streamKey(requestId: string, params: SamplingParams): StreamKey {
  return params.seed === null ? unseededKey(requestId) : seededKey(params.seed);
}
