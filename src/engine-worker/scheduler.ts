// The token-level scheduler. There is no prefill phase and no decode phase (vLLM v1's design):
// every request has a numComputedTokens that chases its token count, and each step hands out a
// token budget — running requests first, in policy order, then waiting ones. A long prompt thus
// prefills in budget-sized chunks while other requests keep decoding in the same steps; a prefix
// hit just starts numComputedTokens higher; a preempted request restarts it at zero.
//
// Pure policy: it owns queues and request records, asks KvCacheManager for blocks, reads time
// only from the injected clock, and returns plain data. The loop is schedule → execute → apply.

import type { EngineStats, FinishReason, GenerateRequest, SampledTokens, ScheduledRequest, SequenceUpdate, StepOutput, StepPlan, StepResult, StepSpecDecode } from '../contracts/generate.js';
import { ConveyorError, invalidArg } from '../errors.js';
import type { KvCacheManager } from '../kv-cache/kv-cache-manager.js';
import { computedByAnotherThisStep, type ScheduledChunk } from './in-batch-prefix.js';
import { RequestState, checkStop, type StopDecision } from './request-state.js';
import type { Draft, DraftSource } from './spec-decode.js';
import { type RequestOrder, type SchedulingPolicy, type WaitingQueue, createWaitingQueue, insertOrdered, requestOrder } from './scheduler-queue.js';

export interface SchedulerConfig {
  /** Most requests running at once (each step schedules at most this many). */
  readonly maxNumSeqs: number;
  /** Most tokens fed to the model in one step, summed over requests. */
  readonly maxNumBatchedTokens: number;
  /** The model's context length: prompt + output never exceeds it. */
  readonly maxModelLen: number;
  /** 'fcfs' by default (vLLM's default too). */
  readonly policy?: SchedulingPolicy;
}

export interface PreemptionEvent {
  readonly kind: 'preempted';
  readonly requestId: string;
  /** Computed positions thrown away, to be recomputed. */
  readonly numLostTokens: number;
  /** Times this request has been preempted, including this one. */
  readonly numPreemptions: number;
  /** Preemptions since the scheduler started. */
  readonly totalPreemptions: number;
  readonly message: string;
}

export interface SchedulerOptions {
  /** The clock, in ms. Injected so tests and benchmarks control time. */
  readonly now: () => number;
  /** Called on each preemption (visible preemption: a log line per request). */
  readonly log?: (event: PreemptionEvent) => void;
  /** Speculative decoding's proposals (spec-decode.ts); absent: none. */
  readonly drafts?: DraftSource;
}

interface Pending {
  readonly plan: StepPlan;
  /** The record behind each plan entry, so results for a request aborted mid-step are dropped. */
  readonly states: readonly RequestState[];
}

export class Scheduler {
  private readonly requests = new Map<string, RequestState>();
  private readonly waiting: WaitingQueue;
  /** Kept in policy order; the last element is the preemption victim. */
  private readonly running: RequestState[] = [];
  private readonly order: RequestOrder;
  /** Under the priority policy a waiting request may take a running one's seat and blocks. */
  private readonly preemptsForRank: boolean;
  private readonly now: () => number;
  private readonly log: ((event: PreemptionEvent) => void) | undefined;
  private readonly drafts: DraftSource | undefined;
  private pending: Pending | null = null;
  private released: string[] = [];
  private nextStepId = 0;
  private nextSequence = 0;
  private totalPreemptions = 0;

  constructor(
    private readonly config: SchedulerConfig,
    private readonly kv: KvCacheManager,
    options: SchedulerOptions,
  ) {
    for (const key of ['maxNumSeqs', 'maxNumBatchedTokens', 'maxModelLen'] as const) {
      if (!Number.isInteger(config[key]) || config[key] < 1) throw invalidArg(`${key} must be a positive integer, got ${config[key]}`, key);
    }
    const policy = config.policy ?? 'fcfs';
    this.waiting = createWaitingQueue(policy);
    this.order = requestOrder(policy);
    this.preemptsForRank = policy === 'priority';
    this.now = options.now;
    this.log = options.log;
    this.drafts = options.drafts;
  }

  get numRunning(): number {
    return this.running.length;
  }

  /** The running requests in policy order (read-only: a draft model proposes for them before the step is planned). */
  get runningRequests(): readonly Readonly<RequestState>[] {
    return this.running;
  }

  get numWaiting(): number {
    return this.waiting.length;
  }

  /** True while any request is waiting or running. */
  hasUnfinished(): boolean {
    return this.requests.size > 0;
  }

  /** The live record of a request (read-only use: tests, metrics, debugging). */
  get(requestId: string): Readonly<RequestState> | undefined {
    return this.requests.get(requestId);
  }

  /**
   * Queues a request. Throws a ConveyorError, changing nothing, when its id is live, when it
   * could never fit (its longest possible sequence needs more KV blocks than the whole cache has,
   * so waiting would be forever), or, as INTERNAL, when it breaks what the input processor
   * guarantees (a prompt within max_model_len, max_tokens ≥ 1). `arrivalTimeMs` is on the
   * injected clock: now, unless the caller stamped the request when it reached the engine.
   */
  add(request: GenerateRequest, arrivalTimeMs: number = this.now()): void {
    this.validate(request);
    const state = new RequestState(request, this.nextSequence++, arrivalTimeMs);
    this.requests.set(request.id, state);
    this.waiting.add(state);
  }

  /**
   * Ends a request now, freeing its blocks; if a step is in flight its results for the request
   * are dropped. (The blocks it was writing this step are never hashed ones, so reusing them after
   * the step cannot corrupt the prefix cache.) Returns the final update, or null if unknown.
   * `reason` is 'stop' when the output processor ends a request on a stop string.
   */
  abort(requestId: string, reason: FinishReason = 'abort'): SequenceUpdate | null {
    const state = this.requests.get(requestId);
    if (!state) return null;
    if (state.status === 'waiting') this.waiting.remove(state);
    this.finish(state);
    return state.toUpdate([], null, { reason, stopTokenId: null });
  }

  /** Decides the next step. Call apply() with its result before scheduling again. */
  schedule(): StepPlan {
    if (this.pending) throw new Error('Scheduler.schedule() called again before apply()');
    const budget = { tokens: this.config.maxNumBatchedTokens };
    const chunks: ScheduledChunk[] = [];
    const preempted = this.scheduleRunning(budget, chunks);
    // After a preemption the pool is known to be short: admitting new work would only thrash.
    if (!preempted) this.scheduleWaiting(budget, chunks);
    const plan = this.buildPlan(chunks);
    this.pending = { plan, states: chunks.map((c) => c.state) };
    return plan;
  }

  /**
   * Applies a step's sampled tokens: advances numComputedTokens, publishes newly full blocks to
   * the prefix cache, appends tokens, checks stops and frees finished requests. Returns the
   * step's message: one update per request that got tokens.
   */
  apply(result: StepResult): StepOutput {
    const pending = this.pending;
    if (!pending) throw new Error('Scheduler.apply() without a scheduled step');
    if (result.stepId !== pending.plan.stepId) throw new Error(`StepResult for step ${result.stepId}, expected ${pending.plan.stepId}`);
    // A request aborted while the step ran may or may not have been sampled; its results are dropped.
    const live = pending.states.map((state) => this.requests.get(state.id) === state);
    const sampled = matchSamples(pending.plan, result, live);
    this.pending = null;
    const timeMs = this.now();
    const updates: SequenceUpdate[] = [];
    const spec = new StepSpecTally();
    pending.plan.scheduled.forEach((entry, i) => {
      const state = pending.states[i]!;
      if (!live[i]) return;
      const out = sampled[i];
      const numDrafts = entry.numDraftTokens ?? 0;
      if (numDrafts > 0 && out) {
        updates.push(this.applyVerified(state, entry.tokenIds.slice(entry.tokenIds.length - numDrafts), out, timeMs, spec));
        return;
      }
      state.numComputedTokens += entry.tokenIds.length;
      this.kv.commitComputed(state.id, state.tokenIds, state.numComputedTokens);
      if (out) updates.push(this.appendTokens(state, out, timeMs));
    });
    const specDecode = spec.result();
    return { stepId: pending.plan.stepId, timeMs, updates, rejections: [], stats: this.stats(), ...(specDecode ? { specDecode } : {}) };
  }

  /**
   * A checked proposal: `out` holds the proposals that held, then the target's own token (none
   * when the request's grammar ended on the last proposal that held). The fed
   * token and the accepted proposals are now computed KV; the rejected proposals' positions are
   * rolled back (KvCacheManager.truncate) before anything is published, so no cached block ever
   * holds one.
   */
  private applyVerified(state: RequestState, drafts: readonly number[], out: SampledTokens, timeMs: number, spec: StepSpecTally): SequenceUpdate {
    const numDrafts = drafts.length;
    if (out.tokenIds.length > numDrafts + 1) throw new Error(`StepResult has ${out.tokenIds.length} tokens for request ${state.id}, which proposed ${numDrafts}`);
    // The proposals the tokens begin with: a rejected position's token never equals its proposal
    // (the acceptance rule's residual excludes it), and a grammar that ended on an accepted
    // proposal leaves no token after it.
    let numAccepted = 0;
    while (numAccepted < Math.min(numDrafts, out.tokenIds.length) && out.tokenIds[numAccepted] === drafts[numAccepted]) numAccepted++;
    spec.add(numDrafts, numAccepted);
    state.recordDraft(numDrafts, numAccepted);
    this.drafts?.verified(state, numDrafts, numAccepted);
    return this.appendTokens(state, out, timeMs, () => {
      // Every appended token but the last has its KV computed (a stop among the accepted proposals keeps fewer).
      state.numComputedTokens = state.numTokens - 1;
      this.kv.truncate(state.id, state.numComputedTokens);
      this.kv.commitComputed(state.id, state.tokenIds, state.numComputedTokens);
    });
  }

  stats(): EngineStats {
    const kv = this.kv.stats();
    return {
      numRunning: this.running.length,
      numWaiting: this.waiting.length,
      kvCacheUsage: kv.usage,
      numTotalBlocks: kv.numTotalBlocks,
      numFreeBlocks: kv.numFreeBlocks,
      prefixCacheQueries: kv.prefixCacheQueries,
      prefixCacheHits: kv.prefixCacheHits,
      numPreemptions: this.totalPreemptions,
    };
  }

  private validate(request: GenerateRequest): void {
    const { maxModelLen } = this.config;
    const numPrompt = request.promptTokenIds.length;
    if (this.requests.has(request.id)) throw new ConveyorError('ALREADY_EXISTS', `request id ${request.id} is already in the engine`);
    // The input processor checks prompt and max_tokens against the context, once, with the
    // caller's field names; a request breaking that here is a bug upstream, not bad input.
    if (numPrompt < 1 || numPrompt >= maxModelLen || !Number.isInteger(request.stop.maxTokens) || request.stop.maxTokens < 1) {
      throw new ConveyorError(
        'INTERNAL',
        `engine invariant broken: request ${request.id} has ${numPrompt} prompt tokens and max_tokens ${request.stop.maxTokens}; the input processor admits only 1 ≤ prompt < ${maxModelLen} (max_model_len) and max_tokens ≥ 1`,
      );
    }
    // The last sampled token is never fed back, so the KV holds at most (final length − 1) positions.
    const maxPositions = Math.min(numPrompt + request.stop.maxTokens, maxModelLen) - 1;
    const needed = this.kv.blocksFor(maxPositions);
    if (needed > this.kv.numTotalBlocks) {
      throw new ConveyorError(
        'CONTEXT_LENGTH_EXCEEDED',
        `The request can never fit in the KV cache: ${numPrompt} prompt tokens + max_tokens ${request.stop.maxTokens} need ${needed} blocks of ${this.kv.blockSize} tokens, the cache has ${this.kv.numTotalBlocks}. Shorten the prompt or max_tokens.`,
        'max_tokens',
      );
    }
  }

  /** Gives each running request its next tokens, preempting from the back when blocks run out. */
  private scheduleRunning(budget: { tokens: number }, chunks: ScheduledChunk[]): boolean {
    let preempted = false;
    for (let i = 0; i < this.running.length && budget.tokens > 0; i++) {
      const state = this.running[i]!;
      const draft = this.draftFor(state, budget.tokens);
      if (draft) {
        chunks.push({ state, numNew: 1 + draft.tokens.length, draft });
        budget.tokens -= 1 + draft.tokens.length;
        continue;
      }
      const numNew = Math.min(state.numTokens - state.numComputedTokens, budget.tokens);
      const outcome = this.allocateOrPreempt(state, state.numComputedTokens + numNew);
      preempted ||= outcome !== 'allocated';
      if (outcome === 'self-preempted') break;
      chunks.push({ state, numNew });
      budget.tokens -= numNew;
    }
    return preempted;
  }

  /**
   * Proposals for a decoding request, with the blocks for them already taken; none when the
   * budget, its remaining tokens or the free blocks leave no room (proposals never preempt).
   */
  private draftFor(state: RequestState, budgetTokens: number): Draft | null {
    if (!this.drafts || state.numTokens - state.numComputedTokens !== 1) return null;
    // At most one token fewer than the request may still produce: the target's own token follows them.
    const remaining = Math.min(state.request.stop.maxTokens - state.numOutputTokens, this.config.maxModelLen - state.numTokens);
    const maxTokens = Math.min(budgetTokens - 1, remaining - 1);
    if (maxTokens < 1) return null;
    const draft = this.drafts.propose(state, this.running.length, maxTokens);
    if (!draft || draft.tokens.length === 0) return null;
    const { tokens, probs } = draft;
    if (tokens.length > maxTokens) throw new Error(`${tokens.length} proposals for request ${state.id}, at most ${maxTokens} asked`);
    if (probs && probs.length !== tokens.length) throw new Error(`${probs.length} proposal distributions for request ${state.id}'s ${tokens.length} proposals`);
    return this.kv.allocate(state.id, state.numTokens + tokens.length) ? draft : null;
  }

  /**
   * Preempts from the back of the running list until `state` gets its blocks or is itself the
   * victim. The victim ranks last, so it is `state` or a request not yet scheduled this step.
   */
  private allocateOrPreempt(state: RequestState, numTokens: number): 'allocated' | 'allocated-after-preemption' | 'self-preempted' {
    let preempted = false;
    while (!this.kv.allocate(state.id, numTokens)) {
      const victim = this.running[this.running.length - 1]!;
      this.preempt(victim, 'KV cache full');
      if (victim === state) return 'self-preempted';
      preempted = true;
    }
    return preempted ? 'allocated-after-preemption' : 'allocated';
  }

  /**
   * Admits waiting requests in order while seats, budget and blocks last; the head blocks the
   * rest. Under the priority policy a head that finds no seat or too few blocks preempts the
   * lowest-ranked running request while that one ranks below it, then tries again.
   */
  private scheduleWaiting(budget: { tokens: number }, chunks: ScheduledChunk[]): void {
    // Nothing ranked at or below a request preempted here is admitted this step: it would only
    // take back what was just given up (thrashing).
    let victim: RequestState | undefined;
    while (budget.tokens > 0) {
      const state = this.waiting.peek();
      if (!state || (victim && this.order(state, victim) >= 0)) return;
      if (this.running.length < this.config.maxNumSeqs) {
        const admitted = this.admit(state, budget, chunks);
        if (admitted === 'admitted') continue;
        // It waits one step for a block another request is computing now; so does everything behind it.
        if (admitted === 'deferred') return;
      }
      victim = this.victimFor(state);
      if (!victim) return;
      this.preemptForRank(victim, state, budget, chunks);
    }
  }

  /** Admits `state` with its first chunk if its blocks can be had (all or nothing), or defers it a step (in-batch-prefix.ts). */
  private admit(state: RequestState, budget: { tokens: number }, chunks: ScheduledChunk[]): 'admitted' | 'deferred' | 'no-blocks' {
    // Prompt logprobs need the logits of every prompt position, which a cache hit would skip (as
    // in vLLM): such a request computes its whole prompt, until its first token has them all.
    const prefix = this.kv.lookupPrefix(wantsPromptLogits(state) ? [] : state.tokenIds, state.request.cacheSalt);
    const cacheable = this.kv.enablePrefixCaching && !wantsPromptLogits(state);
    if (cacheable && computedByAnotherThisStep(state, prefix.numTokens, this.kv.blockSize, chunks)) return 'deferred';
    const numNew = Math.min(state.numTokens - prefix.numTokens, budget.tokens);
    if (!this.kv.allocate(state.id, prefix.numTokens + numNew, prefix)) return 'no-blocks';
    this.waiting.shift();
    if (state.numPreemptions === 0) state.numCachedTokens = prefix.numTokens;
    state.numComputedTokens = prefix.numTokens;
    state.status = 'running';
    insertOrdered(this.running, state, this.order);
    chunks.push({ state, numNew });
    budget.tokens -= numNew;
    return 'admitted';
  }

  /** The running request that `state` may displace: the lowest-ranked, if it ranks below `state` (priority policy only). */
  private victimFor(state: RequestState): RequestState | undefined {
    if (!this.preemptsForRank) return undefined;
    const lowest = this.running[this.running.length - 1];
    return lowest && this.order(lowest, state) > 0 ? lowest : undefined;
  }

  /** Preempts `victim` for `winner`, taking back the chunk and budget it got earlier this step. */
  private preemptForRank(victim: RequestState, winner: RequestState, budget: { tokens: number }, chunks: ScheduledChunk[]): void {
    const index = chunks.findIndex((chunk) => chunk.state === victim);
    if (index >= 0) budget.tokens += chunks.splice(index, 1)[0]!.numNew;
    this.preempt(victim, `request ${winner.id} (priority ${winner.request.priority}) outranks it (priority ${victim.request.priority})`);
  }

  private buildPlan(chunks: readonly ScheduledChunk[]): StepPlan {
    const now = this.now();
    let numScheduledTokens = 0;
    const scheduled = chunks.map(({ state, numNew, draft }): ScheduledRequest => {
      const start = state.numComputedTokens;
      const drafts = draft?.tokens;
      const numKnown = numNew - (drafts?.length ?? 0);
      const known = state.tokenIds.slice(start, start + numKnown);
      const entry: ScheduledRequest = {
        requestId: state.id,
        tokenIds: drafts ? [...known, ...drafts] : known,
        numComputedTokens: start,
        blockTable: [...this.kv.blockTable(state.id)],
        sample: start + numKnown === state.numTokens,
        isNew: state.isNew,
        ...(wantsPromptLogits(state) ? { allLogits: true } : {}),
        ...(drafts ? { numDraftTokens: drafts.length } : {}),
        ...(draft?.probs ? { draftProbs: draft.probs } : {}),
      };
      state.isNew = false;
      state.scheduledTimeMs ??= now;
      numScheduledTokens += numNew;
      return entry;
    });
    const releasedRequestIds = this.released;
    this.released = [];
    return { stepId: this.nextStepId++, scheduled, numScheduledTokens, releasedRequestIds, blocksToCopy: [] };
  }

  /** Appends a step's tokens up to a stop; `settle` runs after they are appended and before a stop frees the request's blocks. */
  private appendTokens(state: RequestState, sampled: SampledTokens, timeMs: number, settle?: () => void): SequenceUpdate {
    const { tokenIds, logprobs } = sampled;
    let stop: StopDecision | null = null;
    let numAccepted = 0;
    // Tokens after a stop (speculative decoding) are dropped.
    while (numAccepted < tokenIds.length && !stop) {
      state.tokenIds.push(tokenIds[numAccepted++]!);
      stop = checkStop(state, this.config.maxModelLen);
    }
    // A completed grammar ends the request as its stop token would (xgrammar completes on accepting
    // one), and outranks a length stop reached with the same token: the output is whole.
    if (sampled.grammarEnded && numAccepted === tokenIds.length && stop?.reason !== 'stop') stop = { reason: 'stop', stopTokenId: tokenIds[numAccepted - 1]! };
    state.firstTokenTimeMs ??= timeMs;
    settle?.();
    if (stop) this.finish(state);
    return state.toUpdate(tokenIds.slice(0, numAccepted), logprobs ? logprobs.slice(0, numAccepted) : null, stop);
  }

  private preempt(victim: RequestState, cause: string): void {
    const numLostTokens = victim.numComputedTokens;
    this.kv.free(victim.id);
    this.running.splice(this.running.indexOf(victim), 1);
    victim.status = 'waiting';
    victim.numComputedTokens = 0;
    victim.isNew = true;
    victim.numPreemptions++;
    this.totalPreemptions++;
    this.waiting.requeuePreempted(victim);
    this.released.push(victim.id);
    this.log?.({
      kind: 'preempted',
      requestId: victim.id,
      numLostTokens,
      numPreemptions: victim.numPreemptions,
      totalPreemptions: this.totalPreemptions,
      message: `preempted request ${victim.id} (recompute ${numLostTokens} tokens; preemption ${victim.numPreemptions} of this request, ${this.totalPreemptions} in all): ${cause}`,
    });
  }

  /** Frees a finished or aborted request's blocks and forgets it. */
  private finish(state: RequestState): void {
    this.kv.free(state.id);
    const index = this.running.indexOf(state);
    if (index >= 0) this.running.splice(index, 1);
    state.status = 'finished';
    this.requests.delete(state.id);
    this.released.push(state.id);
  }
}

/** A step's speculative decoding counts (StepSpecDecode), summed over its checked proposals. */
class StepSpecTally {
  private numDrafts = 0;
  private numDraftTokens = 0;
  private numAcceptedTokens = 0;
  private readonly acceptedPerPosition: number[] = [];

  add(numDrafts: number, numAccepted: number): void {
    this.numDrafts++;
    this.numDraftTokens += numDrafts;
    this.numAcceptedTokens += numAccepted;
    while (this.acceptedPerPosition.length < numDrafts) this.acceptedPerPosition.push(0);
    for (let i = 0; i < numAccepted; i++) this.acceptedPerPosition[i]!++;
  }

  result(): StepSpecDecode | undefined {
    if (this.numDrafts === 0) return undefined;
    return { numDrafts: this.numDrafts, numDraftTokens: this.numDraftTokens, numAcceptedTokens: this.numAcceptedTokens, acceptedPerPosition: this.acceptedPerPosition };
  }
}

/**
 * The result's samples aligned with the plan's entries, checked before anything changes: a
 * runner that samples a mid-prefill request or skips a sampled one has broken the contract.
 * Entries whose request is no longer live are not checked (their results are dropped anyway).
 */
function matchSamples(plan: StepPlan, result: StepResult, live: readonly boolean[]): (SampledTokens | undefined)[] {
  const byId = new Map(result.sampled.map((s) => [s.requestId, s]));
  const aligned = plan.scheduled.map((entry, i) => {
    const out = byId.get(entry.requestId);
    byId.delete(entry.requestId);
    if (!live[i]) return undefined;
    if (entry.sample !== (out !== undefined)) throw new Error(`StepResult ${out ? 'samples' : 'lacks'} request ${entry.requestId}`);
    if (out && out.tokenIds.length === 0) throw new Error(`StepResult has no token for request ${entry.requestId}`);
    return out;
  });
  if (byId.size > 0) throw new Error(`StepResult samples unscheduled requests: ${[...byId.keys()].join(', ')}`);
  return aligned;
}

/** Still computing the prompt of a request that asked for prompt logprobs. */
function wantsPromptLogits(state: RequestState): boolean {
  const wanted = state.request.promptLogprobs;
  return wanted !== undefined && wanted !== null && state.numOutputTokens === 0;
}
