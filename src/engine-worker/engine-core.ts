// The engine step, on the engine worker: schedule → execute → sample → apply. One step's output
// is one message carrying every sequence's news. Everything that touches KV blocks or the model
// lives here or below; the main thread only sees StepOutputs.
//
// The step contract (as vLLM's runner output): a step's result is a function of its plan alone.
// The forward pass awaits, so the worker's message handler can run in the middle of a step; adds
// and aborts that arrive then are held and applied in order once the step is applied, never to
// the request records the step is sampling from.

import type { GenerateRequest, RequestRejection, SampledTokens, SequenceUpdate, StepOutput, StepPlan } from '../contracts/generate.js';
import type { EngineWorkerData } from '../contracts/engine-messages.js';
import { asConveyorError } from '../errors.js';
import { KvCacheManager } from '../kv-cache/kv-cache-manager.js';
import type { ModelRunner, RunnerInfo, RunnerOptions, RunnerStats } from '../runners/model-runner.js';
import { Sampler, type SamplerRow } from '../sampler/sampler.js';
import { Scheduler, type PreemptionEvent } from './scheduler.js';

/** The engine's settings travel to its worker as plain data, so the contract type is the config. */
export type EngineConfig = EngineWorkerData;

/** What the core itself reads: the rest of the config opened the runner it is given. */
export type EngineSettings = Omit<EngineConfig, keyof RunnerOptions>;

/**
 * The engine's clock, ms: arrival, scheduling, first-token and step times all come from it, so
 * queue time and TTFT are differences of one clock. (A worker's timeOrigin is its own start, so
 * only the sum is comparable across threads.)
 */
const engineClock = (): number => performance.timeOrigin + performance.now();

type HeldMessage =
  | { readonly kind: 'add'; readonly request: GenerateRequest; readonly arrivalTimeMs: number }
  | { readonly kind: 'abort'; readonly requestId: string; readonly reason: 'abort' | 'stop' };

export class EngineCore {
  private pendingUpdates: SequenceUpdate[] = [];
  private pendingRejections: RequestRejection[] = [];
  /** True from schedule() until the step's result is applied. */
  private stepping = false;
  /** Adds and aborts that arrived during the running step, in arrival order. */
  private held: HeldMessage[] = [];

  private constructor(
    private readonly scheduler: Scheduler,
    private readonly kv: KvCacheManager,
    private readonly runner: ModelRunner,
    private readonly sampler: Sampler,
  ) {}

  /**
   * An engine over `runner` (create-runner.ts opens one), whose KV storage fixes the block pool
   * the scheduler plans with. The engine owns the runner from here on: release() frees it.
   */
  static create(config: EngineSettings, runner: ModelRunner, log: (line: string) => void): EngineCore {
    const { numBlocks, blockSize, shape } = runner.info;
    const kv = new KvCacheManager({ numBlocks, blockSize, enablePrefixCaching: config.enablePrefixCaching });
    const scheduler = new Scheduler(
      { maxNumSeqs: config.maxNumSeqs, maxNumBatchedTokens: config.maxNumBatchedTokens, maxModelLen: config.maxModelLen, policy: config.schedulingPolicy ?? 'fcfs' },
      kv,
      { now: engineClock, log: (event: PreemptionEvent) => log(event.message) },
    );
    const sampler = new Sampler({ vocabSize: shape.vocabSize, sampleableVocabSize: config.sampleableVocabSize ?? shape.vocabSize });
    return new EngineCore(scheduler, kv, runner, sampler);
  }

  get info(): RunnerInfo {
    return this.runner.info;
  }

  /**
   * Queues a request; a refusal (never fits, duplicate id) is reported in the next step message.
   * Its arrival is stamped now, even when it is held until the running step is applied.
   */
  add(request: GenerateRequest): void {
    const arrivalTimeMs = engineClock();
    if (this.stepping) this.held.push({ kind: 'add', request, arrivalTimeMs });
    else this.addNow(request, arrivalTimeMs);
  }

  /**
   * Ends a request: its blocks are freed now, or right after the running step is applied; its
   * final update goes out with the next message.
   */
  abort(requestId: string, reason: 'abort' | 'stop' = 'abort'): void {
    if (this.stepping) this.held.push({ kind: 'abort', requestId, reason });
    else this.abortNow(requestId, reason);
  }

  private addNow(request: GenerateRequest, arrivalTimeMs: number): void {
    try {
      this.scheduler.add(request, arrivalTimeMs);
    } catch (error) {
      const e = asConveyorError(error);
      this.pendingRejections.push({ requestId: request.id, code: e.code, message: e.message });
    }
  }

  /** Returns true when the request was live (its final update is now pending). */
  private abortNow(requestId: string, reason: 'abort' | 'stop'): boolean {
    const update = this.scheduler.abort(requestId, reason);
    if (update) this.pendingUpdates.push(update);
    return update !== null;
  }

  hasWork(): boolean {
    return this.scheduler.hasUnfinished();
  }

  /** True when aborts or rejections are waiting to be reported even without a step to run. */
  hasNews(): boolean {
    return this.pendingUpdates.length > 0 || this.pendingRejections.length > 0;
  }

  async step(): Promise<StepOutput> {
    const plan = this.scheduler.schedule();
    const contexts = this.samplingContexts(plan);
    this.stepping = true;
    let output: StepOutput;
    try {
      const logits = plan.scheduled.length > 0 ? await this.runner.execute(plan) : new Map<string, Float32Array>();
      const sampled = contexts.map((context): SampledTokens => {
        const row = logits.get(context.requestId);
        if (!row) throw new Error(`the runner returned no logits for planned request ${context.requestId}`);
        const result = this.sampler.sample({ ...context, logits: row });
        return { requestId: context.requestId, tokenIds: [result.tokenId], logprobs: result.logprob ? [result.logprob] : null };
      });
      output = this.scheduler.apply({ stepId: plan.stepId, sampled });
    } finally {
      this.stepping = false;
    }
    const abortedDuringStep = this.applyHeld();
    if (abortedDuringStep.size > 0) {
      // The request ended while its row was computed: the row's tokens are not delivered (its
      // final 'abort' / 'stop' update is), and the counters reflect the blocks just freed.
      output = { ...output, updates: output.updates.filter((u) => !abortedDuringStep.has(u.requestId)), stats: this.scheduler.stats() };
    }
    return this.withPending(output);
  }

  /** Every row the plan samples, with the inputs its sampling reads, fixed before the forward pass. */
  private samplingContexts(plan: StepPlan): SamplerRow[] {
    return plan.scheduled
      .filter((entry) => entry.sample)
      .map((entry) => {
        const { request, tokenIds, numPromptTokens } = this.scheduler.get(entry.requestId)!;
        const outputTokenIds = tokenIds.slice(numPromptTokens);
        const banned = outputTokenIds.length < request.stop.minTokens ? [...request.stop.eosTokenIds, ...request.stop.stopTokenIds] : null;
        return { requestId: entry.requestId, params: request.sampling, promptTokenIds: request.promptTokenIds, outputTokenIds, bannedTokenIds: banned };
      });
  }

  /** Applies the messages held during the step, in order; returns the ids of requests they ended. */
  private applyHeld(): Set<string> {
    const ended = new Set<string>();
    for (const message of this.held.splice(0)) {
      if (message.kind === 'add') this.addNow(message.request, message.arrivalTimeMs);
      else if (this.abortNow(message.requestId, message.reason)) ended.add(message.requestId);
    }
    return ended;
  }

  /** A message with only the aborts and rejections gathered since the last one. */
  flush(): StepOutput {
    return this.withPending({ stepId: -1, timeMs: engineClock(), updates: [], rejections: [], stats: this.scheduler.stats() });
  }

  checkIntegrity(): void {
    this.kv.checkIntegrity();
  }

  stats() {
    return this.scheduler.stats();
  }

  get runnerStats(): Readonly<RunnerStats> {
    return this.runner.stats;
  }

  release(): Promise<void> {
    return this.runner.release();
  }

  private withPending(output: StepOutput): StepOutput {
    if (!this.hasNews()) return output;
    const merged = { ...output, updates: [...this.pendingUpdates, ...output.updates], rejections: [...this.pendingRejections, ...output.rejections] };
    this.pendingUpdates = [];
    this.pendingRejections = [];
    return merged;
  }
}
