// The engine step, on the engine worker: schedule → execute → sample → apply. One step's output
// is one message carrying every sequence's news. Everything that touches KV blocks or the model
// lives here or below; the main thread only sees StepOutputs.

import type { GenerateRequest, RequestRejection, SampledTokens, SequenceUpdate, StepOutput } from '../contracts/generate.js';
import type { EngineWorkerData } from '../contracts/engine-messages.js';
import type { Device } from '../contracts/worker-messages.js';
import { asConveyorError } from '../errors.js';
import { numBlocksForBudget } from '../kv-cache/budget.js';
import { KvCacheManager } from '../kv-cache/kv-cache-manager.js';
import { decoderLayoutFrom, type DecoderLayout } from '../runners/decoder-layout.js';
import { KvStorage } from '../runners/kv-storage.js';
import { PastKeyValuesRunner } from '../runners/past-key-values-runner.js';
import { ModelSession } from '../runtime/model-session.js';
import { Sampler } from './sampler.js';
import { Scheduler, type PreemptionEvent } from './scheduler.js';

/** The engine's settings travel to its worker as plain data, so the contract type is the config. */
export type EngineConfig = EngineWorkerData;

export interface EngineInfo {
  readonly layout: DecoderLayout;
  readonly numBlocks: number;
  readonly device: Device;
  readonly note?: string;
}

export class EngineCore {
  private pendingUpdates: SequenceUpdate[] = [];
  private pendingRejections: RequestRejection[] = [];

  private constructor(
    readonly info: EngineInfo,
    private readonly session: ModelSession,
    private readonly scheduler: Scheduler,
    private readonly kv: KvCacheManager,
    private readonly runner: PastKeyValuesRunner,
    private readonly sampler: Sampler,
  ) {}

  static async create(config: EngineConfig, log: (line: string) => void): Promise<EngineCore> {
    const session = await ModelSession.open({ modelPath: config.modelPath, device: config.device, intraOpNumThreads: config.intraOpNumThreads });
    const layout = decoderLayoutFrom(session.metadata);
    const elementBytes = layout.kvType === 'float16' ? 2 : 4;
    const { numLayers, numKvHeads, headDim } = layout;
    const numBlocks = numBlocksForBudget(config.kvCacheBytes, { numLayers, numKvHeads, headDim, elementBytes, blockSize: config.blockSize });
    const kv = new KvCacheManager({ numBlocks, blockSize: config.blockSize, enablePrefixCaching: config.enablePrefixCaching });
    const scheduler = new Scheduler(
      { maxNumSeqs: config.maxNumSeqs, maxNumBatchedTokens: config.maxNumBatchedTokens, maxModelLen: config.maxModelLen },
      kv,
      { now: () => performance.timeOrigin + performance.now(), log: (event: PreemptionEvent) => log(event.message) },
    );
    const runner = new PastKeyValuesRunner(session, layout, new KvStorage(layout, numBlocks, config.blockSize));
    const sampler = new Sampler({ vocabSize: layout.vocabSize, sampleableVocabSize: config.sampleableVocabSize ?? layout.vocabSize });
    const info: EngineInfo = { layout, numBlocks, device: session.device, ...(session.note ? { note: session.note } : {}) };
    return new EngineCore(info, session, scheduler, kv, runner, sampler);
  }

  /** Queues a request; a refusal (never fits, duplicate id) is reported in the next step message. */
  add(request: GenerateRequest): void {
    try {
      this.scheduler.add(request);
    } catch (error) {
      const e = asConveyorError(error);
      this.pendingRejections.push({ requestId: request.id, code: e.code, message: e.message });
    }
  }

  /** Frees the request's blocks now; its final update goes out with the next message. */
  abort(requestId: string, reason: 'abort' | 'stop' = 'abort'): void {
    const update = this.scheduler.abort(requestId, reason);
    if (update) this.pendingUpdates.push(update);
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
    const logits = plan.scheduled.length > 0 ? await this.runner.execute(plan) : new Map<string, Float32Array>();
    const sampled: SampledTokens[] = [];
    for (const entry of plan.scheduled) {
      const row = logits.get(entry.requestId);
      const state = this.scheduler.get(entry.requestId);
      if (!row || !state) continue;
      const { request } = state;
      const output = state.tokenIds.slice(state.numPromptTokens);
      const banned = output.length < request.stop.minTokens ? [...request.stop.eosTokenIds, ...request.stop.stopTokenIds] : null;
      const result = this.sampler.sample({
        requestId: entry.requestId, logits: row, params: request.sampling,
        promptTokenIds: request.promptTokenIds, outputTokenIds: output, bannedTokenIds: banned,
      });
      sampled.push({ requestId: entry.requestId, tokenIds: [result.tokenId], logprobs: result.logprob ? [result.logprob] : null });
    }
    const output = this.scheduler.apply({ stepId: plan.stepId, sampled });
    return this.withPending(output);
  }

  /** A message with only the aborts and rejections gathered since the last one. */
  flush(): StepOutput {
    return this.withPending({ stepId: -1, timeMs: performance.timeOrigin + performance.now(), updates: [], rejections: [], stats: this.scheduler.stats() });
  }

  checkIntegrity(): void {
    this.kv.checkIntegrity();
  }

  stats() {
    return this.scheduler.stats();
  }

  get runnerStats() {
    return this.runner.stats;
  }

  release(): Promise<void> {
    return this.session.release();
  }

  private withPending(output: StepOutput): StepOutput {
    if (!this.hasNews()) return output;
    const merged = { ...output, updates: [...this.pendingUpdates, ...output.updates], rejections: [...this.pendingRejections, ...output.rejections] };
    this.pendingUpdates = [];
    this.pendingRejections = [];
    return merged;
  }
}
