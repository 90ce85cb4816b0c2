// Speculative decoding's policy (the speculative_config parameter): which decoding sequences
// propose tokens this step, how many, and what a checked proposal yields. The scheduler asks
// propose() while it hands out the step's token budget (so proposals count against it and get
// their KV blocks like any token), and tells verified() what the check found; the engine checks
// proposals at every proposed position: a plain greedy row on the model's greedy tokens
// (acceptGreedy), any other with the sampler's acceptance rule (src/sampler/acceptance.ts,
// Sampler.verify), which keeps greedy output the target model's own token for token and sampled
// output distributed as the target's under every sampling parameter, the target's logprobs
// reported at each accepted position. A seeded row given point-mass proposals (n-gram) yields
// exactly its tokens without speculation.
//
// A grammar-constrained row's proposals are checked under its grammar's mask at each position
// (computed on the grammar worker during the forward pass, MaskJob.drafts): a proposal the grammar
// refuses has probability 0 there, so it ends the accepted run. A row with a thinking block never
// proposes: the block's forced closing tokens are decided a token at a time (thinking-block.ts).
//
// Adaptive: a sequence whose proposals all fail pauses proposing for a number of its tokens that
// doubles with each such failure (reset by any accepted token). While more than
// disableByBatchSize sequences run, a step is nearer compute-bound and a checked position costs
// about what another row's token does, so there (n-gram lookup only: a draft model's own steps
// are not weighed, so it stays off there) a sequence whose drafts give fewer than
// LARGE_BATCH_MIN_ACCEPTANCE × num_speculative_tokens accepted tokens (a running mean over its
// last few drafts) pauses 8, 16, … 128 of its tokens, reset once they give that many. A sequence
// copying its context keeps speculation's gain at 8 and 32 streams (the copier,
// bench/scenarios/engine/make_copier.py: 1.25–2.16×); one whose drafts give a token or two
// (stories260K: 1.1–1.7 a draft, where going on proposing cost 0.83–0.96×) probes now and then
// and otherwise stays off (0.90–1.00×).
//
// Within the limit or past it, a sequence also proposes only while its drafts pay for their rows
// on this engine (StepCosts, step-costs.ts: what a step of n rows costs here, learned from the
// steps run): 1 + its mean accepted tokens against the cost of a step with every running
// sequence's draft over one without. A verify step's price is the model's and the machine's, not
// the config's: 1.25–1.3× a decode step on the copier, 1.4–2.2× on stories260K, and several times
// past the native layers' 8 rows.

import type { NgramSpeculativeConfig } from '../contracts/engine-messages.js';
import { proposeNgram } from './ngram-proposer.js';
import type { RequestState } from './request-state.js';
import type { StepCosts } from './step-costs.js';

/** Longest pause, in the sequence's tokens, after proposals that all failed. */
export const MAX_DRAFT_BACKOFF_TOKENS = 32;
/** Past disable_by_batch_size: the share of num_speculative_tokens a sequence's drafts must be giving (accepted tokens, a running mean) for it to go on proposing without a pause. */
export const LARGE_BATCH_MIN_ACCEPTANCE = 0.75;
/** The running mean's weight on the latest draft: the last two or three decide. */
const LATEST_DRAFT_WEIGHT = 0.5;
/** Drafts a sequence's yield is measured over before its cost is weighed (one draft's outcome says little). */
const DRAFTS_BEFORE_WEIGHING = 4;
/** Past the limit, the first and the longest pause, tokens: fewer probes where drafts give little (a probe costs every row there). */
const LARGE_BATCH_PAUSES = { first: 8, longest: 128 } as const;

interface Backoff {
  /** The output length from which the sequence proposes again. */
  resumeAt: number;
  /** The pause after the next failed draft, tokens. */
  pause: number;
}

/**
 * One sequence's proposal for a step. The check keeps a prefix of `tokens` (the sampler's
 * acceptance rule): for a greedy row, the proposals its target argmax
 * agrees with; for a sampled row, each proposal with probability min(1, p(x) / q(x)), p being
 * the distribution the sampler would draw from there, a rejection resampled from the residual.
 */
export interface Draft {
  readonly tokens: readonly number[];
  /**
   * q: for each proposed token, the probabilities the proposer drew it from, indexed by token id
   * (ids past the array's end have probability 0; the values sum to 1) — a draft model's
   * distribution under the request's own sampling parameters. Absent: each token is a point mass
   * (n-gram lookup, or a draft model decoding greedily), which the check accepts with
   * probability p(x). Only sampled rows read it; greedy rows compare argmaxes.
   */
  readonly probs?: readonly Float32Array[];
}

/** What the scheduler asks of speculation (an absent one: no proposals). */
export interface DraftSource {
  /** Up to `maxTokens` proposed tokens to follow `state`'s sequence, checked this step; null (or no tokens) for none. */
  propose(state: Readonly<RequestState>, numRunning: number, maxTokens: number): Draft | null;
  /** How a proposal of `numDrafts` tokens went: `numAccepted` of them held. */
  verified(state: Readonly<RequestState>, numDrafts: number, numAccepted: number): void;
}

/**
 * Which sequences propose this step, and the back-offs after proposals that failed (all of a
 * draft; past the batch limit, drafts giving little): the policy every DraftSource (n-gram
 * lookup, a draft model) applies the same way.
 */
export class ProposalGate {
  /** The pause after drafts that all failed; keyed by the request's record, so a finished request's entry goes with it. */
  private readonly backoff = new WeakMap<Readonly<RequestState>, Backoff>();
  /** The pause past the batch limit while drafts give few tokens (none within it). */
  private readonly largeBatchBackoff = new WeakMap<Readonly<RequestState>, Backoff>();
  /** Accepted tokens a draft, a running mean per sequence. */
  private readonly meanAccepted = new WeakMap<Readonly<RequestState>, number>();
  /** Drafts checked per sequence. */
  private readonly draftsChecked = new WeakMap<Readonly<RequestState>, number>();

  constructor(
    /** Past this many running sequences (disable_by_batch_size), only sequences whose drafts give most of a full draft propose (n-gram lookup only). */
    private readonly disableByBatchSize: number,
    /** A full draft's length (num_speculative_tokens): what drafts give is measured against it, so short drafts count as the little they give. */
    private readonly numSpeculativeTokens: number,
    /**
     * Whether proposing costs nothing but the checked positions (n-gram lookup), so past the
     * limit the drafts' yield decides; a draft model's own k steps a sequence are not weighed
     * there, so it never proposes past the limit (measured on the copier's pair: 0.84–1.08× at 32
     * streams, where n-gram lookup gave 1.25–1.61×).
     */
    private readonly proposingIsFree: boolean,
    /** What steps cost on this engine (step-costs.ts); absent: proposals are taken to cost nothing past their yield. */
    private readonly costs?: StepCosts,
  ) {}

  /** The pause of a sequence whose drafts do not pay for their rows, and whether its next draft is the probe that re-measures its yield. */
  private readonly costBackoff = new WeakMap<Readonly<RequestState>, Backoff & { probing?: boolean }>();

  /** True when `state` may propose this step, with `numRunning` sequences running. */
  allows(state: Readonly<RequestState>, numRunning: number): boolean {
    if (!this.proposesFor(state) || pausedAt(this.backoff.get(state), state)) return false;
    if (numRunning > this.disableByBatchSize && (!this.proposingIsFree || pausedAt(this.largeBatchBackoff.get(state), state))) return false;
    return this.paysForItself(state, numRunning);
  }

  /**
   * Whether the sequence's drafts yield more than their rows cost, as measured on this engine: a
   * step where each of the `numRunning` sequences also checks a full draft (k more rows each)
   * against a step without, and 1 + the sequence's mean accepted tokens a draft against that
   * ratio. Unknown costs or yield (fewer than DRAFTS_BEFORE_WEIGHING drafts checked) count as
   * paying: the first drafts measure them. A sequence that does not pay pauses 8, 16, … 128 of
   * its tokens (as past the batch limit), then probes with one draft, whose outcome updates its
   * mean before the next weighing. Past the batch limit, where the step with the drafts costs more
   * than 1 + k times one without, no draft can pay, and none is made (stories260K at 8 streams: a
   * 40-row step leaves the native layers for ONNX Runtime, several times an 8-row step); within
   * it a new sequence still makes its first drafts, a few verify steps at most.
   */
  private paysForItself(state: Readonly<RequestState>, numRunning: number): boolean {
    if (!this.costs) return true;
    const ratio = this.costs.ratio(numRunning * (1 + this.numSpeculativeTokens), numRunning);
    // Past the batch limit, where even a full draft, every token accepted, would not pay, none can:
    // no draft, no probe (every sequence probing at once makes the costliest steps there).
    if (ratio !== undefined && numRunning > this.disableByBatchSize && 1 + this.numSpeculativeTokens < ratio) return false;
    const pause = this.costBackoff.get(state);
    if (pause && pausedAt(pause, state)) return false;
    if (pause && !pause.probing) {
      pause.probing = true;
      return true;
    }
    const mean = (this.draftsChecked.get(state) ?? 0) >= DRAFTS_BEFORE_WEIGHING ? this.meanAccepted.get(state) : undefined;
    const pays = mean === undefined || ratio === undefined || 1 + mean >= ratio;
    lengthen(this.costBackoff, state, !pays, LARGE_BATCH_PAUSES);
    return pays;
  }

  /** False for a row whose tokens are decided a token at a time outside the sampler (see the file comment). */
  private proposesFor(state: Readonly<RequestState>): boolean {
    return !state.request.thinking;
  }

  verified(state: Readonly<RequestState>, numDrafts: number, numAccepted: number): void {
    if (numDrafts > 0) {
      const previous = this.meanAccepted.get(state);
      const mean = previous === undefined ? numAccepted : previous + LATEST_DRAFT_WEIGHT * (numAccepted - previous);
      this.meanAccepted.set(state, mean);
      this.draftsChecked.set(state, (this.draftsChecked.get(state) ?? 0) + 1);
      lengthen(this.largeBatchBackoff, state, mean < LARGE_BATCH_MIN_ACCEPTANCE * this.numSpeculativeTokens, LARGE_BATCH_PAUSES);
    }
    lengthen(this.backoff, state, numAccepted === 0 && numDrafts > 0);
  }
}

const pausedAt = (pause: Backoff | undefined, state: Readonly<RequestState>): boolean => pause !== undefined && state.numOutputTokens < pause.resumeAt;

/** After a failed draft: the sequence pauses first, twice that, … up to longest of its tokens (1 … MAX_DRAFT_BACKOFF_TOKENS by default); after one that held, it goes on. */
function lengthen(pauses: WeakMap<Readonly<RequestState>, Backoff>, state: Readonly<RequestState>, failed: boolean, { first, longest } = { first: 1, longest: MAX_DRAFT_BACKOFF_TOKENS }): void {
  if (!failed) {
    pauses.delete(state);
    return;
  }
  const pause = pauses.get(state)?.pause ?? first;
  pauses.set(state, { resumeAt: state.numOutputTokens + pause, pause: Math.min(pause * 2, longest) });
}

/** N-gram (prompt lookup) proposals: the tokens that followed the sequence's latest few tokens where they last occurred. */
export class NgramDrafts implements DraftSource {
  private readonly gate: ProposalGate;

  constructor(
    private readonly config: NgramSpeculativeConfig,
    costs?: StepCosts,
  ) {
    this.gate = new ProposalGate(config.disableByBatchSize, config.numSpeculativeTokens, true, costs);
  }

  propose(state: Readonly<RequestState>, numRunning: number, maxTokens: number): Draft | null {
    if (!this.gate.allows(state, numRunning)) return null;
    const { promptLookupMin, promptLookupMax, numSpeculativeTokens } = this.config;
    const tokens = proposeNgram(state.tokenIds, promptLookupMin, promptLookupMax, Math.min(numSpeculativeTokens, maxTokens));
    return tokens.length > 0 ? { tokens } : null;
  }

  verified(state: Readonly<RequestState>, numDrafts: number, numAccepted: number): void {
    this.gate.verified(state, numDrafts, numAccepted);
  }
}

/**
 * The tokens a checked proposal yields: the proposals up to the first one the target's greedy
 * token disagrees with, then the target's own token there. `targets[i]` is the target model's
 * greedy token after the fed token and the first i proposals (drafts.length + 1 of them).
 */
export function acceptGreedy(drafts: ArrayLike<number>, targets: ArrayLike<number>): number[] {
  if (targets.length !== drafts.length + 1) throw new Error(`${targets.length} target tokens for ${drafts.length} proposals (expected one more)`);
  const tokens: number[] = [];
  let i = 0;
  while (i < drafts.length && targets[i] === drafts[i]) tokens.push(drafts[i++]!);
  tokens.push(targets[i]!);
  return tokens;
}
