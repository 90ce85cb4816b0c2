// The engine step, on the engine worker: schedule → execute → sample → apply. One step's output
// is one message carrying every sequence's news. Everything that touches KV blocks or the model
// lives here or below; the main thread only sees StepOutputs.
//
// The step contract (as vLLM's runner output): a step's result is a function of its plan alone.
// The forward pass awaits, so the worker's message handler can run in the middle of a step; adds
// and aborts that arrive then are held and applied in order once the step is applied, never to
// the request records the step is sampling from.
//
// Grammar-constrained requests (GenerateRequest.grammar) compile before they are admitted: add()
// starts the compile at once (a cache hit is immediate), and the compiled request then enters
// like any add — applied now, or held when a step is running. A grammar that cannot compile is a
// rejection (INVALID_ARG), never an engine error. Compiles and masks run on the grammar worker
// (src/grammar-worker), so neither blocks this thread: each step posts its constrained rows' mask
// jobs after planning, runs the forward pass (ORT blocks this thread meanwhile), then awaits the
// masks, which the sampler applies first. Thinking blocks (GenerateRequest.thinking) are read
// from the output each step: a spent budget forces the block's closing tokens, and a grammar
// applies to the answer after the block.
//
// A step whose every sampled row is plain greedy takes its tokens from the model's greedy head
// where the runner has one (executeGreedy): the logits never leave the model, which at batch 32
// saves the 19.5 MB logits copy out of ONNX Runtime and the sampler's scan of it.

import type { GenerateRequest, RequestRejection, SampledTokens, SequenceUpdate, StepOutput } from '../contracts/generate.js';
import type { EngineWorkerData } from '../contracts/engine-messages.js';
import { asConveyorError, ConveyorError, invalidArg } from '../errors.js';
import type { BlockHash } from '../kv-cache/block-hash.js';
import type { KvCacheEvent } from '../kv-cache/cache-events.js';
import { bytesPerBlock } from '../kv-cache/budget.js';
import { KvCacheManager } from '../kv-cache/kv-cache-manager.js';
import { kvBlockLayout, type ModelRunner, type RunnerInfo, type RunnerOptions, type RunnerStats } from '../runners/model-runner.js';
import { Sampler } from '../sampler/sampler.js';
import { ConstrainedRows, type GrammarStats } from './constrained-rows.js';
import { PromptLogprobs } from './prompt-logprobs.js';
import { Scheduler, type PreemptionEvent } from './scheduler.js';
import { DraftModelProposer } from './draft-model.js';
import { type DraftSource, LARGE_BATCH_MIN_ACCEPTANCE, NgramDrafts, ProposalGate } from './spec-decode.js';
import { StepConstraints } from './step-constraints.js';
import { StepCosts } from './step-costs.js';
import { StepSampling } from './step-sampling.js';

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
  /** Constrained requests whose grammar is compiling, by id: settled when it is admitted or rejected. */
  private readonly compiling = new Map<string, Promise<void>>();
  /** Aborts of requests still compiling: applied right after their add. */
  private readonly abortedWhileCompiling = new Map<string, 'abort' | 'stop'>();

  private constructor(
    private readonly scheduler: Scheduler,
    private readonly kv: KvCacheManager,
    private readonly runner: ModelRunner,
    private readonly sampler: Sampler,
    private readonly rows: ConstrainedRows,
    private readonly log: (line: string) => void,
    private readonly prompts: PromptLogprobs,
    /** The draft model proposing before each step is planned (speculative_config method draft_model); absent otherwise. */
    private readonly draftModel: DraftModelProposer | undefined,
    /** What this engine's steps cost by rows, which speculation's gate reads (step-costs.ts). */
    private readonly costs: StepCosts,
  ) {
    this.sampling = new StepSampling(sampler, rows, runner, (id) => scheduler.get(id));
  }

  /** The step's tokens once its forward pass is posted (step-sampling.ts). */
  private readonly sampling: StepSampling;

  /**
   * An engine over `runner` (create-runner.ts opens one), whose KV storage fixes the block pool
   * the scheduler plans with. The engine owns the runner from here on: release() frees it, and
   * the draft model's runner too where speculative_config names one (openDraftRunner opens it).
   */
  static create(config: EngineSettings, runner: ModelRunner, log: (line: string) => void, draftRunner?: ModelRunner): EngineCore {
    const { numBlocks, blockSize, shape } = runner.info;
    const kv = new KvCacheManager({ numBlocks, blockSize, enablePrefixCaching: config.enablePrefixCaching, recordEvents: config.kvEvents !== undefined });
    const sampler = new Sampler({ vocabSize: shape.vocabSize, sampleableVocabSize: config.sampleableVocabSize ?? shape.vocabSize });
    const costs = new StepCosts();
    const drafts = EngineCore.draftSource(config, runner, sampler, log, costs, draftRunner);
    const scheduler = new Scheduler(
      { maxNumSeqs: config.maxNumSeqs, maxNumBatchedTokens: config.maxNumBatchedTokens, maxModelLen: config.maxModelLen, policy: config.schedulingPolicy ?? 'fcfs' },
      kv,
      { now: engineClock, log: (event: PreemptionEvent) => log(event.message), ...(drafts ? { drafts } : {}) },
    );
    const rows = new ConstrainedRows({ tokenizerPath: config.tokenizerPath, vocabSize: shape.vocabSize, compileTimeoutSecs: config.grammarCompileTimeoutSecs ?? 0 });
    const prompts = new PromptLogprobs(shape.vocabSize, config.sampleableVocabSize ?? shape.vocabSize);
    return new EngineCore(scheduler, kv, runner, sampler, rows, log, prompts, drafts instanceof DraftModelProposer ? drafts : undefined, costs);
  }

  /**
   * Speculative decoding's proposals where speculative_config asks for them and the runner can
   * check them: the paged runners take a proposal as positions of the flat batch with logits at
   * each; the past_key_values runner does not (its rows share a padded shape), so there it is off,
   * and the log says why.
   */
  private static draftSource(
    config: EngineSettings,
    runner: ModelRunner,
    sampler: Sampler,
    log: (line: string) => void,
    costs: StepCosts,
    draftRunner: ModelRunner | undefined,
  ): DraftSource | undefined {
    const spec = config.speculative;
    if (!spec) return undefined;
    if (runner.info.kind === 'past-key-values') {
      log('speculative_config: off — checking proposals needs attention_backend paged (this model runs past_key_values)');
      return undefined;
    }
    const pastLimit = spec.method === 'ngram' ? `only while its drafts give ${LARGE_BATCH_MIN_ACCEPTANCE * spec.numSpeculativeTokens} accepted tokens on average` : 'none';
    const limits = `sampled and greedy requests, each while its drafts yield more than their rows cost here (measured); past ${spec.disableByBatchSize} running sequences ${pastLimit}`;
    if (spec.method === 'ngram') {
      log(`speculative decoding: ngram, up to ${spec.numSpeculativeTokens} tokens from a ${spec.promptLookupMin}–${spec.promptLookupMax}-token match, ${limits}`);
      return new NgramDrafts(spec, costs);
    }
    if (!draftRunner) throw new Error('speculative_config method draft_model: the engine was given no draft runner (openDraftRunner)');
    const { shape, numBlocks, blockSize, kind } = draftRunner.info;
    if (shape.vocabSize < sampler.sampleableVocab) {
      throw invalidArg(`parameter speculative_config: model has ${shape.vocabSize} logits, fewer than the target's ${sampler.sampleableVocab} token ids: the draft must share the target's tokenizer`);
    }
    const mib = (numBlocks * bytesPerBlock(kvBlockLayout(shape, blockSize))) / 2 ** 20;
    log(
      `speculative decoding: draft model ${spec.draftModelPath} (${kind} runner, ${shape.numLayers} layers, its own KV pool of ${numBlocks} blocks, ${mib.toFixed(1)} MiB), up to ${spec.numSpeculativeTokens} tokens, ${limits}`,
    );
    return new DraftModelProposer(
      draftRunner,
      { numSpeculativeTokens: spec.numSpeculativeTokens, maxModelLen: config.maxModelLen, maxCatchUpTokens: config.maxNumBatchedTokens, sampleableVocab: sampler.sampleableVocab },
      new ProposalGate(spec.disableByBatchSize, spec.numSpeculativeTokens, false, costs),
    );
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
    if (request.grammar) this.compileThenAdd(request, arrivalTimeMs);
    else this.enqueue({ kind: 'add', request, arrivalTimeMs });
  }

  /**
   * Ends a request: its blocks are freed now, or right after the running step is applied; its
   * final update goes out with the next message.
   */
  abort(requestId: string, reason: 'abort' | 'stop' = 'abort'): void {
    if (this.compiling.has(requestId)) this.abortedWhileCompiling.set(requestId, reason);
    else this.enqueue({ kind: 'abort', requestId, reason });
  }

  /** Applies an add or abort now, or holds it until the running step is applied. */
  private enqueue(message: HeldMessage): void {
    if (this.stepping) this.held.push(message);
    else if (message.kind === 'add') this.addNow(message.request, message.arrivalTimeMs);
    else this.abortNow(message.requestId, message.reason);
  }

  /** Compiles the request's grammar and makes its matcher, then adds it; a grammar that cannot compile rejects it. */
  private compileThenAdd(request: GenerateRequest, arrivalTimeMs: number): void {
    const { id } = request;
    if (this.compiling.has(id) || this.rows.has(id) || this.scheduler.get(id)) {
      this.reject(id, new ConveyorError('ALREADY_EXISTS', `request id ${id} is already in the engine`));
      return;
    }
    const settled = this.rows.open(request).then(
      () => {
        this.compiling.delete(id);
        this.enqueue({ kind: 'add', request, arrivalTimeMs });
        const abort = this.abortedWhileCompiling.get(id);
        this.abortedWhileCompiling.delete(id);
        if (abort) this.enqueue({ kind: 'abort', requestId: id, reason: abort });
      },
      (error: unknown) => {
        this.compiling.delete(id);
        this.abortedWhileCompiling.delete(id);
        this.reject(id, error);
      },
    );
    this.compiling.set(id, settled);
  }

  private reject(requestId: string, error: unknown): void {
    const e = asConveyorError(error);
    this.pendingRejections.push({ requestId, code: e.code, message: e.message });
  }

  private addNow(request: GenerateRequest, arrivalTimeMs: number): void {
    try {
      this.scheduler.add(request, arrivalTimeMs);
    } catch (error) {
      // A duplicate id leaves the live request (and its matcher) alone; any other refusal frees this one's.
      if (!(error instanceof ConveyorError && error.code === 'ALREADY_EXISTS')) this.rows.release(request.id);
      this.reject(request.id, error);
    }
  }

  /** Returns true when the request was live (its final update is now pending). */
  private abortNow(requestId: string, reason: 'abort' | 'stop'): boolean {
    const update = this.scheduler.abort(requestId, reason);
    this.rows.release(requestId);
    this.draftModel?.release(requestId);
    if (update) this.pendingUpdates.push(update);
    return update !== null;
  }

  /** True while requests are scheduled or a grammar is compiling (step() then waits for it). */
  hasWork(): boolean {
    return this.scheduler.hasUnfinished() || this.compiling.size > 0;
  }

  /** True when aborts or rejections are waiting to be reported even without a step to run. */
  hasNews(): boolean {
    return this.pendingUpdates.length > 0 || this.pendingRejections.length > 0;
  }

  async step(): Promise<StepOutput> {
    if (!this.scheduler.hasUnfinished() && this.compiling.size > 0) {
      // Only compiles pending: wait for one to admit or reject its request, and report that.
      await Promise.race(this.compiling.values());
      return this.flush();
    }
    // Adds and aborts arriving from here on (the draft's passes, the forward pass) wait for the step's end.
    this.stepping = true;
    let output: StepOutput;
    let constraints: StepConstraints;
    // The step's cost, the draft model's passes included, for speculation's gate.
    const began = performance.now();
    try {
      if (this.draftModel) await this.draftModel.prepare(this.scheduler.runningRequests);
      const plan = this.scheduler.schedule();
      for (const id of plan.releasedRequestIds) this.draftModel?.release(id);
      const contexts = this.sampling.contexts(plan);
      // Posted before the forward pass: the grammar worker computes the masks while ORT blocks this thread.
      const drafts = new Map(plan.scheduled.filter((entry) => entry.numDraftTokens).map((entry) => [entry.requestId, entry.tokenIds.slice(entry.tokenIds.length - entry.numDraftTokens!)]));
      constraints = StepConstraints.start(
        this.rows,
        contexts,
        (id) => this.scheduler.get(id)?.request.thinking,
        this.runner.info.shape.vocabSize,
        (id) => drafts.get(id),
      );
      let sampled: SampledTokens[];
      if (plan.scheduled.length > 0 && this.sampling.picksOnModel(plan, contexts, constraints)) {
        const tokens = await this.runner.executeGreedy!(plan, this.sampler.sampleableVocab);
        await constraints.ready();
        sampled = this.sampling.fromGreedyHead(plan, contexts, tokens);
      } else {
        const logits = plan.scheduled.length > 0 ? await this.runner.execute(plan) : new Map<string, Float32Array>();
        await constraints.ready();
        this.prompts.collect(plan, logits, (id) => this.scheduler.get(id)?.request);
        sampled = await this.sampling.fromLogits(contexts, logits, constraints, plan);
      }
      this.costs.observe(plan.numScheduledTokens, performance.now() - began);
      output = this.scheduler.apply({ stepId: plan.stepId, sampled });
      const work = constraints.grammarWork;
      if (work) output = { ...output, grammarMasks: work };
    } finally {
      this.stepping = false;
    }
    for (const update of output.updates) {
      if (update.finishReason === null) continue;
      this.rows.release(update.requestId);
      this.draftModel?.release(update.requestId);
    }
    // A row whose grammar cannot go on (a token refused that its own mask allowed, a lost grammar
    // worker) ends (abort) rather than continue outside its grammar.
    for (const [id, why] of constraints.failed) this.log(`request ${id}: ${why}; ending the request`);
    const abortedDuringStep = this.applyHeld([...constraints.failed.keys()]);
    if (abortedDuringStep.size > 0) {
      // The request ended while its row was computed: the row's tokens are not delivered (its
      // final 'abort' / 'stop' update is), and the counters reflect the blocks just freed.
      output = { ...output, updates: output.updates.filter((u) => !abortedDuringStep.has(u.requestId)), stats: this.scheduler.stats() };
    }
    return this.prompts.attach(this.withPending(output));
  }

  /** The grammar worker thread while one runs (fault-injection tests terminate it to play a crash). */
  get grammarWorkerThread() {
    return this.rows.workerThread;
  }

  /** Grammar masks computed since start, the grammar worker's time on them and the engine's wait for them, ms. */
  grammarStats(): GrammarStats {
    return this.rows.stats();
  }

  /** Applies the messages held during the step, in order; returns the ids of requests they ended. */
  private applyHeld(alsoAbort: readonly string[]): Set<string> {
    const ended = new Set<string>();
    for (const id of alsoAbort) if (this.abortNow(id, 'abort')) ended.add(id);
    for (const message of this.held.splice(0)) {
      if (message.kind === 'add') this.addNow(message.request, message.arrivalTimeMs);
      else if (this.abortNow(message.requestId, message.reason)) ended.add(message.requestId);
    }
    return ended;
  }

  /** A message with only the aborts and rejections gathered since the last one. */
  flush(): StepOutput {
    return this.prompts.attach(this.withPending({ stepId: -1, timeMs: engineClock(), updates: [], rejections: [], stats: this.scheduler.stats() }));
  }

  checkIntegrity(): void {
    this.kv.checkIntegrity();
    this.draftModel?.checkIntegrity();
  }

  /** The draft model's KV pool (speculative_config method draft_model), or null without one: tests check that freed requests free their draft blocks. */
  draftKvStats(): ReturnType<DraftModelProposer['stats']> | null {
    return this.draftModel?.stats() ?? null;
  }

  /** The KV cache events since the last call (none unless config.kvEvents is set): one published batch. */
  takeKvEvents(): KvCacheEvent[] {
    return this.kv.takeEvents();
  }

  /** The block hashes a prefix lookup can hit now (what the published events must add up to). */
  cachedBlockHashes(): ReadonlySet<BlockHash> {
    return this.kv.cachedBlockHashes();
  }

  stats() {
    return this.scheduler.stats();
  }

  get runnerStats(): Readonly<RunnerStats> {
    return this.runner.stats;
  }

  async release(): Promise<void> {
    await this.rows.close();
    await this.draftModel?.close();
    await this.runner.release();
  }

  private withPending(output: StepOutput): StepOutput {
    if (!this.hasNews()) return output;
    const merged = { ...output, updates: [...this.pendingUpdates, ...output.updates], rejections: [...this.pendingRejections, ...output.rejections] };
    this.pendingUpdates = [];
    this.pendingRejections = [];
    return merged;
  }
}
