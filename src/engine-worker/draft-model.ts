// Draft-model speculative decoding (speculative_config method draft_model): a smaller decoder
// sharing the target's tokenizer runs in this engine worker with its own runner and KV cache, and
// proposes the next numSpeculativeTokens tokens of every decoding sequence allowed to propose:
// a greedy row its draft's greedy continuation (point masses), a sampled row tokens drawn from the
// draft's own distribution under the row's sampling parameters, passed with that distribution (q)
// to the target's acceptance rule (src/sampler/acceptance.ts).
//
// Before each step is planned the engine calls prepare() with the running requests. The draft
// first rolls each sequence's draft KV back to what still agrees with the target's tokens (what
// the target rejected last step goes), then runs k forward passes batched across the proposing
// sequences: the first feeds the tokens the draft has not seen (the target's accepted tokens and
// its own token; a sequence new to the draft takes its prompt in over several steps, at most
// max_num_batched_tokens a step across sequences, proposing once caught up), each later one the
// token the pass before proposed. The scheduler then takes the proposals through propose() (DraftSource) as
// it hands out the budget, and the target checks them in its normal step (the verify path).
//
// The draft's blocks are its own pool (KvCacheManager, no prefix caching: its KV is never shared),
// sized in positions from the target's, so it never preempts: a sequence the pool cannot hold
// does not propose that step. A finished, aborted or preempted request's draft blocks are freed
// (release()), so an idle engine holds none.

import type { EngineWorkerData } from '../contracts/engine-messages.js';
import type { ScheduledRequest, StepPlan } from '../contracts/generate.js';
import { KvCacheManager } from '../kv-cache/kv-cache-manager.js';
import { openModelRunner } from '../runners/create-runner.js';
import { lastLogitsRow, type ModelRunner, type RunnerInfo } from '../runners/model-runner.js';
import { Sampler, type SamplerRow } from '../sampler/sampler.js';
import type { RequestState } from './request-state.js';
import type { Draft, DraftSource, ProposalGate } from './spec-decode.js';

/**
 * The draft model's runner where speculative_config names one and the target can check
 * proposals (not past_key_values: the engine then turns speculation off), else undefined. Opened
 * like the target's, on the same threads and block size, with a pool holding as many positions as
 * the target's plus every running sequence's proposals (the draft's KV is never shared, so
 * without it a draft could run out of blocks where the target's prefix cache did not).
 */
export async function openDraftRunner(config: EngineWorkerData, target: RunnerInfo): Promise<ModelRunner | undefined> {
  const spec = config.speculative;
  if (spec?.method !== 'draft_model' || target.kind === 'past-key-values') return undefined;
  const blocksPerSequence = Math.ceil(spec.numSpeculativeTokens / target.blockSize) + 1;
  const { device, intraOpNumThreads, intraOpSpinning, kvCacheBytes, kvCacheDtype, blockSize } = config;
  return openModelRunner({
    modelPath: spec.draftModelPath,
    device,
    intraOpNumThreads,
    ...(intraOpSpinning !== undefined ? { intraOpSpinning } : {}),
    // The draft's pool in kv_cache_dtype too: the memory budget sizes it as the target's pool scaled by the two models' KV per position.
    ...(kvCacheDtype !== undefined ? { kvCacheDtype } : {}),
    kvCacheBytes,
    blockSize,
    kvCacheBlocks: target.numBlocks + config.maxNumSeqs * blocksPerSequence,
  });
}

export interface DraftModelSettings {
  readonly numSpeculativeTokens: number;
  /** The target's context length: no proposal reaches past it. */
  readonly maxModelLen: number;
  /**
   * Tokens the first pass of a step may feed across sequences to catch the draft up (the target's
   * max_num_batched_tokens): a long prompt new to the draft is fed in chunks over several steps,
   * proposing once caught up, so it never makes one step's draft pass a whole prefill.
   */
  readonly maxCatchUpTokens: number;
  /** Ids the target may sample (the tokenizer's): the draft proposes none above them. */
  readonly sampleableVocab: number;
}

/** What the draft holds for one sequence: the tokens whose KV its cache has, in order. */
interface DraftSequence {
  readonly tokens: number[];
  /** True until the sequence is next fed to the draft runner (after admission to the draft, or a reset). */
  isNew: boolean;
}

/** One proposing sequence during prepare(). */
interface Row {
  readonly state: Readonly<RequestState>;
  readonly sequence: DraftSequence;
  /** Proposals this sequence makes this step: 0 while it only catches up (a chunk of a long prompt). */
  readonly numProposals: number;
  /** Tokens the first pass feeds: those the draft has not seen, or a chunk of them. */
  readonly feed: number;
  readonly proposals: number[];
  /** The row's sampling inputs before its first proposal; null for a plain greedy row (its token is the draft's greedy head's). */
  readonly context: SamplerRow | null;
  /** q of each proposal, for a sampled row (a greedy row's proposals are point masses: none). */
  readonly probs: Float32Array[];
}

export class DraftModelProposer implements DraftSource {
  private readonly kv: KvCacheManager;
  private readonly sequences = new Map<string, DraftSequence>();
  /** This step's proposals, by request id (prepare() fills them, propose() hands them out). */
  private readonly proposals = new Map<string, Draft>();
  /** The draft's own sampler: a row's proposals are processed and drawn as the target's sampler would there. */
  private readonly sampler: Sampler;
  /** Requests freed since the draft runner's last plan: it drops their per-request state. */
  private released: string[] = [];
  private nextStepId = 0;

  constructor(
    private readonly runner: ModelRunner,
    private readonly settings: DraftModelSettings,
    private readonly policy: ProposalGate,
  ) {
    const { numBlocks, blockSize } = runner.info;
    this.kv = new KvCacheManager({ numBlocks, blockSize, enablePrefixCaching: false });
    this.sampler = new Sampler({ vocabSize: runner.info.shape.vocabSize, sampleableVocabSize: settings.sampleableVocab });
  }

  /**
   * Proposes for every request in `running` that is decoding (one token not yet computed) and
   * that the policy lets propose: rolls its draft KV back to the tokens the target kept, then runs
   * the draft's passes. Rejects only when the draft model's call fails (the engine treats that as
   * fatal, as it does the target's).
   */
  async prepare(running: readonly Readonly<RequestState>[]): Promise<void> {
    this.proposals.clear();
    const candidates = running.filter((state) => state.status === 'running' && state.numTokens - state.numComputedTokens === 1 && this.policy.allows(state, running.length));
    const unseen = new Map(candidates.map((state) => [state, state.numTokens - this.keptPrefix(state)]));
    // Short catch-ups (a sequence's tokens accepted last step) first: a long prompt's catch-up never costs the others their proposals.
    candidates.sort((a, b) => unseen.get(a)! - unseen.get(b)!);
    const rows: Row[] = [];
    let budget = this.settings.maxCatchUpTokens;
    for (const state of candidates) {
      const row = budget > 0 ? this.rowFor(state, budget) : null;
      if (!row) continue;
      rows.push(row);
      budget -= row.feed;
    }
    if (rows.length === 0) return;
    // Pass 1 catches each sequence up to the target's tokens; pass i > 1 feeds proposal i − 1.
    let feeding = rows;
    for (let pass = 0; feeding.length > 0; pass++) {
      await this.pass(feeding, pass);
      feeding = feeding.filter((row) => row.proposals.length < row.numProposals);
    }
    for (const row of rows) {
      if (row.proposals.length > 0) this.proposals.set(row.state.id, row.probs.length > 0 ? { tokens: row.proposals, probs: row.probs } : { tokens: row.proposals });
    }
  }

  /**
   * How many of the sequence's tokens the draft's KV holds that the target kept: what it computed
   * up to the first token the target does not have (last step's rejected proposals). The target's
   * last token is never among them (nothing has computed it), so a sequence always feeds one.
   */
  private keptPrefix(state: Readonly<RequestState>): number {
    const seen = this.sequences.get(state.id)?.tokens ?? [];
    const target = state.tokenIds;
    const limit = Math.min(seen.length, target.length - 1);
    let kept = 0;
    while (kept < limit && seen[kept] === target[kept]) kept++;
    return kept;
  }

  /**
   * The sequence's row for this step, its draft KV rolled back to what the target kept and its
   * blocks taken, feeding at most `budget` tokens first (fewer than it has not seen: it only
   * catches up this step); null when it does not propose or the draft's pool cannot hold it.
   */
  private rowFor(state: Readonly<RequestState>, budget: number): Row | null {
    // The target's own token follows the proposals, within max_tokens and the context.
    const remaining = Math.min(state.request.stop.maxTokens - state.numOutputTokens, this.settings.maxModelLen - state.numTokens);
    const numWanted = Math.min(this.settings.numSpeculativeTokens, remaining - 1);
    if (numWanted < 1) return null;
    const sequence = this.sequences.get(state.id) ?? { tokens: [], isNew: true };
    const target = state.tokenIds;
    const valid = this.keptPrefix(state);
    sequence.tokens.length = valid;
    const feed = Math.min(target.length - valid, budget);
    const numProposals = valid + feed === target.length ? numWanted : 0;
    // The KV the passes write: the target's tokens (or a chunk of them), then every proposal but the last.
    const numPositions = numProposals > 0 ? target.length + numProposals - 1 : valid + feed;
    if (this.kv.has(state.id)) {
      this.kv.truncate(state.id, valid);
      if (!this.kv.allocate(state.id, numPositions)) return null;
    } else if (!this.kv.allocate(state.id, numPositions, this.kv.lookupPrefix([], null))) {
      return null;
    }
    this.sequences.set(state.id, sequence);
    return { state, sequence, numProposals, feed, proposals: [], context: this.samplingContext(state), probs: [] };
  }

  /** The row's sampling inputs as the engine gives them to the target's sampler; null where its token is the plain argmax. */
  private samplingContext(state: Readonly<RequestState>): SamplerRow | null {
    const { request } = state;
    const { stop } = request;
    const outputTokenIds = state.tokenIds.slice(state.numPromptTokens);
    const banned = outputTokenIds.length < stop.minTokens ? [...stop.eosTokenIds, ...stop.stopTokenIds] : null;
    const context: SamplerRow = { requestId: state.id, params: request.sampling, promptTokenIds: request.promptTokenIds, outputTokenIds, bannedTokenIds: banned };
    return this.sampler.takesArgmax(context) ? null : context;
  }

  /** One batched forward pass of the draft: appends each row's next proposal (and its q, for a sampled row). */
  private async pass(rows: readonly Row[], pass: number): Promise<void> {
    let numScheduledTokens = 0;
    const scheduled = rows.map(({ state, sequence, proposals, feed, numProposals }): ScheduledRequest => {
      const start = sequence.tokens.length;
      const tokenIds = pass === 0 ? state.tokenIds.slice(start, start + feed) : [proposals[proposals.length - 1]!];
      const entry: ScheduledRequest = { requestId: state.id, tokenIds, numComputedTokens: start, blockTable: [...this.kv.blockTable(state.id)], sample: numProposals > 0, isNew: sequence.isNew };
      sequence.isNew = false;
      sequence.tokens.push(...tokenIds);
      numScheduledTokens += tokenIds.length;
      return entry;
    });
    const plan: StepPlan = { stepId: this.nextStepId++, scheduled, numScheduledTokens, releasedRequestIds: this.released, blocksToCopy: [] };
    this.released = [];
    const { sampleableVocab } = this.settings;
    const proposing = rows.filter((row) => row.numProposals > 0);
    // Plain greedy rows only: the draft's greedy head gives their tokens without the logits.
    if (this.runner.executeGreedy && proposing.every((row) => !row.context)) {
      const tokens = await this.runner.executeGreedy(plan, sampleableVocab);
      for (const row of proposing) row.proposals.push(tokens.get(row.state.id)!.at(-1)!);
      return;
    }
    const logits = await this.runner.execute(plan);
    const { vocabSize } = this.runner.info.shape;
    for (const row of proposing) {
      const last = lastLogitsRow(logits.get(row.state.id)!, vocabSize);
      if (!row.context) {
        row.proposals.push(argmax(last, Math.min(sampleableVocab, vocabSize)));
        continue;
      }
      // The proposals so far count as output here, as they do where the target checks them (Sampler.verify).
      const outputTokenIds = [...Array.from(row.context.outputTokenIds), ...row.proposals];
      const banned = outputTokenIds.length < row.state.request.stop.minTokens ? row.context.bannedTokenIds : null;
      const { tokenId, q } = this.sampler.propose({ ...row.context, logits: last, outputTokenIds, bannedTokenIds: banned });
      row.proposals.push(tokenId);
      if (q) row.probs.push(q);
    }
  }

  propose(state: Readonly<RequestState>, _numRunning: number, maxTokens: number): Draft | null {
    const draft = this.proposals.get(state.id);
    if (!draft || draft.tokens.length === 0) return null;
    if (draft.tokens.length <= maxTokens) return draft;
    return draft.probs ? { tokens: draft.tokens.slice(0, maxTokens), probs: draft.probs.slice(0, maxTokens) } : { tokens: draft.tokens.slice(0, maxTokens) };
  }

  verified(state: Readonly<RequestState>, numDrafts: number, numAccepted: number): void {
    this.policy.verified(state, numDrafts, numAccepted);
  }

  /** Frees a request's draft blocks and record (finished, aborted or preempted); unknown ids are ignored. */
  release(requestId: string): void {
    if (!this.sequences.delete(requestId)) return;
    this.kv.free(requestId);
    this.released.push(requestId);
  }

  /** The draft pool's block counts (tests: an idle engine's draft holds no block). */
  stats(): { numTotalBlocks: number; numFreeBlocks: number; numSequences: number } {
    const { numTotalBlocks, numFreeBlocks } = this.kv.stats();
    return { numTotalBlocks, numFreeBlocks, numSequences: this.sequences.size };
  }

  checkIntegrity(): void {
    this.kv.checkIntegrity();
  }

  /** Releases the draft runner (the engine's release). */
  close(): Promise<void> {
    return this.runner.release();
  }
}

/** The first id of the largest value among the first `bound` entries. */
function argmax(row: Float32Array, bound: number): number {
  let best = 0;
  for (let i = 1; i < bound; i++) if (row[i]! > row[best]!) best = i;
  return best;
}
