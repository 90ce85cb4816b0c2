// A step's tokens once its forward pass is posted: the inputs each sampled row's sampling reads
// (fixed before the pass), then every row's tokens — from the model's greedy head where each row
// is a plain argmax, else from its logits through the sampler: a grammar row under its mask (a
// speculative greedy one trying its best unmasked candidates first), a checked proposal by the
// acceptance rule (spec-decode.ts). EngineCore runs the pass and applies what this returns.

import type { SampledTokens, ScheduledRequest, StepPlan } from '../contracts/generate.js';
import { lastLogitsRow, type ModelRunner, type StepGreedyTokens } from '../runners/model-runner.js';
import type { SampleResult, Sampler, SamplerRow } from '../sampler/sampler.js';
import type { ConstrainedRows } from './constrained-rows.js';
import type { RequestState } from './request-state.js';
import { acceptGreedy } from './spec-decode.js';
import type { StepConstraints } from './step-constraints.js';

/**
 * Best tokens a speculative grammar row tries before its mask (step-constraints.ts). Where the
 * costly masks are (nearly every token allowed), the bench decoder's masked choice was among its
 * top 8 in 96% and its top 16 in every case measured; where few tokens are allowed the 16 tries
 * miss, but they and the mask after them are cheap there (~0.1 ms a row on the grammar worker).
 */
const GREEDY_CANDIDATES = 16;

/** A planned row's tokens from the model's greedy head: its next token, or what its checked proposal yields. */
function greedyTokensOf(tokens: StepGreedyTokens, entry: ScheduledRequest): number[] {
  const row = tokens.get(entry.requestId);
  if (row === undefined || row.length === 0) throw new Error(`the runner returned no greedy token for planned request ${entry.requestId}`);
  return verifiedTokens(entry, row);
}

/** The tokens a sampled row yields from its greedy tokens (one per logits row): the last, or for a checked proposal what acceptGreedy keeps. */
function verifiedTokens(entry: ScheduledRequest, targets: ArrayLike<number>): number[] {
  const numDrafts = entry.numDraftTokens ?? 0;
  if (numDrafts === 0) return [targets[targets.length - 1]!];
  return acceptGreedy(entry.tokenIds.slice(entry.tokenIds.length - numDrafts), targets);
}

export class StepSampling {
  constructor(
    private readonly sampler: Sampler,
    private readonly rows: ConstrainedRows,
    private readonly runner: ModelRunner,
    /** A scheduled request's state (every planned row has one). */
    private readonly requestOf: (requestId: string) => Readonly<RequestState> | undefined,
  ) {}

  /** Every row the plan samples, with the inputs its sampling reads, fixed before the forward pass. */
  contexts(plan: StepPlan): SamplerRow[] {
    return plan.scheduled
      .filter((entry) => entry.sample)
      .map((entry) => {
        const { request, tokenIds, numPromptTokens } = this.requestOf(entry.requestId)!;
        const outputTokenIds = tokenIds.slice(numPromptTokens);
        // A constrained row's EOS is the grammar's to allow: banning it could mask the grammar's only way to end.
        const banned = outputTokenIds.length < request.stop.minTokens && !this.rows.has(entry.requestId) ? [...request.stop.eosTokenIds, ...request.stop.stopTokenIds] : null;
        return { requestId: entry.requestId, params: request.sampling, promptTokenIds: request.promptTokenIds, outputTokenIds, bannedTokenIds: banned };
      });
  }

  /**
   * True when the model's greedy head can pick every sampled row's token (ModelRunner.executeGreedy):
   * each row takes its plain argmax (Sampler.takesArgmax) with no grammar or thinking block, and
   * no row wants its prompt positions' logits. All or nothing: a step that needs logits for one
   * row fetches them for all, since the logits of every sampled row come out of one tensor anyway.
   */
  picksOnModel(plan: StepPlan, contexts: readonly SamplerRow[], constraints: StepConstraints): boolean {
    if (!this.runner.executeGreedy || plan.scheduled.some((entry) => entry.allLogits)) return false;
    return contexts.every((context) => this.sampler.takesArgmax(context) && !constraints.constrains(context.requestId));
  }

  /** Samples every row; greedy grammar rows sampled unmasked take the best candidate their grammar allows or, where it allows none of them, are chosen again under their mask. */
  async fromLogits(contexts: readonly SamplerRow[], logits: ReadonlyMap<string, Float32Array>, constraints: StepConstraints, plan: StepPlan): Promise<SampledTokens[]> {
    const vocabSize = this.runner.info.shape.vocabSize;
    const rowOf = (requestId: string): Float32Array => {
      const row = logits.get(requestId);
      if (!row) throw new Error(`the runner returned no logits for planned request ${requestId}`);
      return lastLogitsRow(row, vocabSize);
    };
    const sample = (context: SamplerRow): SampleResult => {
      const speculative = constraints.isSpeculative(context.requestId);
      const result = this.sampler.sample({
        ...context,
        logits: rowOf(context.requestId),
        allowedTokens: constraints.maskFor(context.requestId),
        greedyCandidates: speculative ? GREEDY_CANDIDATES : 0,
      });
      if (speculative && result.candidates) constraints.offer(context.requestId, result.candidates);
      return result;
    };
    // Checked proposals (spec-decode.ts): the sampler's acceptance rule over each of their positions.
    const verified = new Map<string, SampledTokens>();
    const byId = new Map(contexts.map((context) => [context.requestId, context]));
    for (const entry of plan.scheduled) {
      if (!entry.numDraftTokens || !entry.sample) continue;
      const row = logits.get(entry.requestId);
      if (!row) throw new Error(`the runner returned no logits for planned request ${entry.requestId}`);
      verified.set(entry.requestId, this.verifyDrafts(entry, byId.get(entry.requestId)!, row, constraints));
    }
    // Speculative grammar rows first: their candidates are tried on the grammar worker while the rest are sampled.
    const results = new Map<string, SampleResult>();
    for (const context of contexts) if (constraints.isSpeculative(context.requestId)) results.set(context.requestId, sample(context));
    for (const context of contexts) if (!results.has(context.requestId) && !verified.has(context.requestId)) results.set(context.requestId, sample(context));
    const choices = await constraints.verify();
    return contexts.map((context): SampledTokens => {
      const checked = verified.get(context.requestId);
      if (checked) return checked;
      const result = results.get(context.requestId)!;
      const choice = choices.get(context.requestId);
      // The row was processed in place by its first sample: only the mask and the argmax remain.
      const tokenId = choice === undefined ? result.tokenId : 'token' in choice ? choice.token : this.sampler.resampleGreedy(rowOf(context.requestId), choice.mask);
      const logprob = result.logprob;
      const tokens = { requestId: context.requestId, tokenIds: [tokenId], logprobs: logprob ? [logprob] : null };
      return constraints.endsGrammar(context.requestId, tokenId) ? { ...tokens, grammarEnded: true } : tokens;
    });
  }

  /**
   * A checked proposal's tokens (Sampler.verify): the sampling inputs at its first position are
   * the row's `context`; at later ones the proposals before count as output, and min_tokens' ban
   * of the stop ids lifts where the output reaches it.
   */
  private verifyDrafts(entry: ScheduledRequest, context: SamplerRow, logits: Float32Array, constraints: StepConstraints): SampledTokens {
    const numDrafts = entry.numDraftTokens!;
    const { requestId } = entry;
    const { stop } = this.requestOf(requestId)!.request;
    const banned = this.rows.has(requestId) ? null : [...stop.eosTokenIds, ...stop.stopTokenIds];
    // A constrained row is checked under its grammar's mask at each position (StepConstraints.masksAlong).
    const masks = constraints.masksAlong(requestId);
    const result = this.sampler.verify({
      ...context,
      logits,
      bannedTokenIds: banned,
      banUntil: stop.minTokens,
      drafts: entry.tokenIds.slice(entry.tokenIds.length - numDrafts),
      draftProbs: entry.draftProbs,
      masks: masks ?? undefined,
    });
    const tokens = { requestId, tokenIds: result.tokenIds, logprobs: result.logprobs };
    const last = result.tokenIds.length - 1;
    return masks && constraints.endsGrammarUnder(requestId, result.tokenIds[last]!, masks[last]!) ? { ...tokens, grammarEnded: true } : tokens;
  }

  /** Each row's tokens from the greedy head's picks (picksOnModel held): its next token, or what its checked proposal keeps. */
  fromGreedyHead(plan: StepPlan, contexts: readonly SamplerRow[], tokens: StepGreedyTokens): SampledTokens[] {
    const entries = new Map(plan.scheduled.map((entry) => [entry.requestId, entry]));
    return contexts.map(({ requestId }) => ({ requestId, tokenIds: greedyTokensOf(tokens, entries.get(requestId)!), logprobs: null }));
  }
}
