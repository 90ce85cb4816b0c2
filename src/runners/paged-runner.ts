// PagedRunner: runs a StepPlan on a paged-attention decoder (onnx/model_paged*.onnx, contract in
// kernels/paged-attention.ts). The graph's attention reads each layer's block pool in place —
// the pools are fed as they are, by reference — so no step copies past K/V in JS, and only the
// new positions' K/V come back, to be written into their blocks. Tokens run flat: decode tokens
// and prefill chunks of many sequences share a call with no padding through the projections and
// MLP; only attention pads, so call-groups.ts (FLAT_CALL_COST) keeps rows of very different
// shapes apart. Logits are computed only at the positions that are sampled.

import type { ScheduledRequest, StepPlan } from '../contracts/generate.js';
import type { ModelSession, RawTensor } from '../runtime/model-session.js';
import { FLAT_CALL_COST, groupRows } from './call-groups.js';
import { flatBatch, type LogitsRowRange } from './flat-batch.js';
import { greedyExecution, type SampledOutput, SampledHeads } from './greedy-head.js';
import type { KvArray } from './kv-storage.js';
import { StepTimer } from './step-timer.js';
import { blocksForBudget, type KvBudget, type ModelRunner, type ModelShape, type RunnerInfo, type RunnerStats, runnerInfo, type StepGreedyTokens } from './model-runner.js';
import { pagedLayoutFrom } from './paged-layout.js';
import { PagedKvStorage } from './paged-kv-storage.js';

type LogitsRows = Map<string, Float32Array>;

export class PagedRunner implements ModelRunner {
  private readonly timer = new StepTimer();
  readonly stats: RunnerStats = this.timer.stats;
  readonly info: RunnerInfo;
  private readonly heads: SampledHeads;
  readonly executeGreedy?: (plan: StepPlan, sampleableVocab: number) => Promise<StepGreedyTokens>;

  constructor(
    private readonly session: ModelSession,
    private readonly shape: ModelShape,
    private readonly pool: PagedKvStorage,
  ) {
    this.info = runnerInfo('paged', shape, pool, session);
    this.heads = SampledHeads.of(session.metadata, shape.vocabSize);
    this.executeGreedy = greedyExecution(this.heads, (plan, sampled) => this.run(plan, sampled));
  }

  /** Reads the layout from the session and allocates as many KV blocks as the budget holds. */
  static forSession(session: ModelSession, budget: KvBudget): PagedRunner {
    const shape = pagedLayoutFrom(session.metadata);
    return new PagedRunner(session, shape, new PagedKvStorage(shape, blocksForBudget(shape, budget), budget.blockSize));
  }

  release(): Promise<void> {
    return this.session.release();
  }

  async execute(plan: StepPlan): Promise<LogitsRows> {
    const logits: LogitsRows = new Map();
    await this.run(plan, { kind: 'logits', logits });
    return logits;
  }

  private async run(plan: StepPlan, sampled: SampledOutput): Promise<void> {
    for (const [source, destination] of plan.blocksToCopy) this.pool.copyBlock(source, destination);
    this.timer.beginStep();
    const rows = plan.scheduled;
    const shapes = rows.map((r) => ({ past: r.numComputedTokens, fresh: r.tokenIds.length }));
    for (const group of groupRows(shapes, FLAT_CALL_COST))
      await this.runCall(
        group.map((i) => rows[i]!),
        sampled,
      );
  }

  private async runCall(rows: readonly ScheduledRequest[], sampled: SampledOutput): Promise<void> {
    const { numLayers } = this.shape;
    const { feeds, logitsRows } = this.timer.timed('feedsMs', () => this.tokenFeeds(rows, sampled));
    for (let layer = 0; layer < numLayers; layer++) {
      feeds[`key_cache.${layer}`] = { type: this.shape.kvType, dims: this.pool.dims, data: this.pool.keys[layer]! };
      feeds[`value_cache.${layer}`] = { type: this.shape.kvType, dims: this.pool.dims, data: this.pool.values[layer]! };
    }
    const outputs = await this.timer.call(() => this.session.run(feeds, this.heads.fetched(sampled)));

    this.timer.timed('scatterMs', () => {
      for (let layer = 0; layer < numLayers; layer++) {
        for (const kind of ['key', 'value'] as const) {
          const fresh = outputs[`new_${kind}.${layer}`]!.data as KvArray;
          let token = 0;
          for (const r of rows) {
            this.pool.write(layer, kind, r.blockTable, r.numComputedTokens, r.tokenIds.length, fresh, token);
            token += r.tokenIds.length;
          }
        }
      }
    });

    this.timer.timed('logitsMs', () => this.heads.read(outputs, logitsRows, sampled));
  }

  /** The flat token feeds (flat-batch.ts) and the paged graph's layout of them. */
  private tokenFeeds(rows: readonly ScheduledRequest[], head: SampledOutput): { feeds: Record<string, RawTensor>; logitsRows: readonly LogitsRowRange[] } {
    const batch = flatBatch(rows);
    const blockSize = this.pool.blockSize;
    const maxBlocks = Math.max(1, ...rows.map((r) => Math.ceil(r.numComputedTokens / blockSize)));
    const starts = BigInt64Array.from(batch.starts, BigInt);
    const lengths = BigInt64Array.from(rows, (r) => BigInt(r.tokenIds.length));
    const pasts = BigInt64Array.from(rows, (r) => BigInt(r.numComputedTokens));
    const tables = new BigInt64Array(rows.length * maxBlocks); // padding entries stay block 0
    rows.forEach((r, s) => {
      const readBlocks = Math.ceil(r.numComputedTokens / blockSize);
      for (let b = 0; b < readBlocks; b++) tables[s * maxBlocks + b] = BigInt(r.blockTable[b]!);
    });
    this.timer.record('gatheredPositions', rows.length * maxBlocks * blockSize);
    const vector = (data: BigInt64Array): RawTensor => ({ type: 'int64', dims: [data.length], data });
    const feeds: Record<string, RawTensor> = {
      input_ids: batch.inputIds,
      position_ids: batch.positionIds,
      query_starts: vector(starts),
      query_lengths: vector(lengths),
      past_lengths: vector(pasts),
      block_tables: { type: 'int64', dims: [rows.length, maxBlocks], data: tables },
      ...this.heads.feeds(batch.logitsIndices, head),
    };
    return { feeds, logitsRows: batch.logitsRows };
  }
}
