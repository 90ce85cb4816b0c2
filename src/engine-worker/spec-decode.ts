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
// about what another row's token does, so there a sequence proposes only while nearly every token
// it proposes holds (LARGE_BATCH_MIN_ACCEPTANCE of its recent proposed tokens), after one probe
// draft where it has none yet: a model that copies its context keeps speculation's gain at 32
// streams (measured 1.3–1.9× on the copier, bench/scenarios/engine/make_copier.py) where one
// that rarely does (stories260K, ~0.4 of proposed tokens held) stays off.

import type { NgramSpeculativeConfig } from '../contracts/engine-messages.js';
import { proposeNgram } from './ngram-proposer.js';
import type { RequestState } from './request-state.js';

/** Longest pause, in the sequence's tokens, after proposals that all failed. */
export const MAX_DRAFT_BACKOFF_TOKENS = 32;
/** Past disable_by_batch_size: the share of its recently proposed tokens a sequence must have had accepted to keep proposing. */
export const LARGE_BATCH_MIN_ACCEPTANCE = 0.8;
/** How much of a sequence's earlier tally each new draft keeps (so the last few drafts decide). */
const TALLY_DECAY = 0.75;

/** A sequence's proposed and accepted tokens, earlier drafts decayed by TALLY_DECAY each. */
interface Tally {
  proposed: number;
  accepted: number;
}

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
 * Which sequences propose this step, and the back-off after proposals that all failed: the policy
 * every DraftSource (n-gram lookup, a draft model) applies the same way.
 */
export class ProposalGate {
  /** Keyed by the request's record, so a finished request's entry goes with it. */
  private readonly backoff = new WeakMap<Readonly<RequestState>, Backoff>();

  constructor(
    /** Past this many running sequences (disable_by_batch_size), only sequences whose proposals nearly all hold propose. */
    private readonly disableByBatchSize: number,
  ) {}

  /** Recent proposed and accepted tokens, per sequence. */
  private readonly tally = new WeakMap<Readonly<RequestState>, Tally>();

  /** True when `state` may propose this step, with `numRunning` sequences running. */
  allows(state: Readonly<RequestState>, numRunning: number): boolean {
    if (!this.proposesFor(state)) return false;
    const paused = this.backoff.get(state);
    if (paused && state.numOutputTokens < paused.resumeAt) return false;
    return numRunning <= this.disableByBatchSize || this.holdsInLargeBatch(state);
  }

  /** Past the batch limit: a sequence with no draft yet probes once; one with drafts goes on while nearly all its proposed tokens hold. */
  private holdsInLargeBatch(state: Readonly<RequestState>): boolean {
    const tally = this.tally.get(state);
    return tally === undefined || tally.accepted >= LARGE_BATCH_MIN_ACCEPTANCE * tally.proposed;
  }

  /** False for a row whose tokens are decided a token at a time outside the sampler (see the file comment). */
  private proposesFor(state: Readonly<RequestState>): boolean {
    return !state.request.thinking;
  }

  verified(state: Readonly<RequestState>, numDrafts: number, numAccepted: number): void {
    if (numDrafts > 0) {
      const tally = this.tally.get(state);
      this.tally.set(state, { proposed: (tally?.proposed ?? 0) * TALLY_DECAY + numDrafts, accepted: (tally?.accepted ?? 0) * TALLY_DECAY + numAccepted });
    }
    if (numAccepted > 0 || numDrafts === 0) {
      this.backoff.delete(state);
      return;
    }
    const pause = this.backoff.get(state)?.pause ?? 1;
    this.backoff.set(state, { resumeAt: state.numOutputTokens + pause, pause: Math.min(pause * 2, MAX_DRAFT_BACKOFF_TOKENS) });
  }
}

/** N-gram (prompt lookup) proposals: the tokens that followed the sequence's latest few tokens where they last occurred. */
export class NgramDrafts implements DraftSource {
  private readonly gate: ProposalGate;

  constructor(private readonly config: NgramSpeculativeConfig) {
    this.gate = new ProposalGate(config.disableByBatchSize);
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
