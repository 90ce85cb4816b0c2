// PastKeyValuesRunner: runs a StepPlan on any Optimum-contract decoder. Per step it gathers each
// request's past K/V from the block pool into padded past tensors, runs the model, and writes
// the new positions of present.* back into the request's blocks. While the same requests keep
// decoding, the previous call's present.* already is the next past, so the gather is skipped.
//
// Rows are left-padded (past and new tokens both), so every row's last real token is the last
// position and `num_logits_to_keep = 1` yields exactly the logits to sample (a call with a row
// that wants prompt logprobs keeps every position instead). Decode rows (one
// token) and prefill chunks run as separate calls so a long chunk never pads 31 decode rows.

import type { ScheduledRequest, StepPlan } from '../contracts/generate.js';
import type { ModelSession, RawTensor } from '../runtime/model-session.js';
import { groupRows } from './call-groups.js';
import { decoderLayoutFrom, type DecoderLayout } from './decoder-layout.js';
import { KvStorage, type KvArray } from './kv-storage.js';
import { toFloat32 } from './logits-rows.js';
import { StepTimer } from './step-timer.js';
import { blocksForBudget, type KvBudget, type ModelRunner, type RunnerInfo, type RunnerStats, runnerInfo } from './model-runner.js';

type LogitsRows = Map<string, Float32Array>;

const PAD_TOKEN = 0n;

/** The decode call just run: if the next decode call has the same rows, its past is this present. */
interface LastDecode {
  readonly requestIds: readonly string[];
  readonly numComputed: readonly number[];
  readonly total: number;
  /** present.{layer}.{key,value}, in feed order. */
  readonly present: readonly KvArray[];
}

export class PastKeyValuesRunner implements ModelRunner {
  private readonly timer = new StepTimer();
  readonly stats: RunnerStats = this.timer.stats;
  readonly info: RunnerInfo;
  private lastDecode: LastDecode | null = null;
  /** Gather targets, reused across steps (one per layer and kind), grown as pasts get longer. */
  private readonly pastBuffers: ArrayBuffer[] = [];

  constructor(
    private readonly session: ModelSession,
    private readonly layout: DecoderLayout,
    private readonly kv: KvStorage,
  ) {
    const { numLayers, numKvHeads, headDim, vocabSize, kvType } = layout;
    this.info = runnerInfo('past-key-values', { numLayers, numKvHeads, headDim, vocabSize, kvType }, kv, session);
  }

  /** Reads the decoder layout from the session and allocates as many KV blocks as the budget holds. */
  static forSession(session: ModelSession, budget: KvBudget): PastKeyValuesRunner {
    const layout = decoderLayoutFrom(session.metadata);
    return new PastKeyValuesRunner(session, layout, new KvStorage(layout, blocksForBudget(layout, budget), budget.blockSize));
  }

  release(): Promise<void> {
    return this.session.release();
  }

  async execute(plan: StepPlan): Promise<LogitsRows> {
    for (const [source, destination] of plan.blocksToCopy) this.kv.copyBlock(source, destination);
    if (plan.blocksToCopy.length > 0) this.lastDecode = null;
    const decode = plan.scheduled.filter((r) => r.tokenIds.length === 1);
    // Rows that want every position's logits run on their own, so the others' padded positions
    // never get a vocabulary-wide row each.
    const prefill = plan.scheduled.filter((r) => r.tokenIds.length > 1 && !r.allLogits);
    const allLogits = plan.scheduled.filter((r) => r.tokenIds.length > 1 && r.allLogits);
    const logits: LogitsRows = new Map();
    this.timer.beginStep();
    if (decode.length > 0) await this.runGroup(decode, logits, true);
    else this.lastDecode = null;
    const shapes = prefill.map((r) => ({ past: r.numComputedTokens, fresh: r.tokenIds.length }));
    for (const group of groupRows(shapes))
      await this.runGroup(
        group.map((i) => prefill[i]!),
        logits,
        false,
      );
    for (const row of allLogits) await this.runGroup([row], logits, false);
    return logits;
  }

  private async runGroup(rows: readonly ScheduledRequest[], logits: LogitsRows, isDecode: boolean): Promise<void> {
    const { numLayers, vocabSize } = this.layout;
    const newLen = Math.max(...rows.map((r) => r.tokenIds.length));
    const pastLen = Math.max(...rows.map((r) => r.numComputedTokens));
    const total = pastLen + newLen;
    // Prompt logprobs need every position's logits; otherwise only the last is computed.
    const keep = rows.some((r) => r.allLogits) ? newLen : 1;
    const tokenFeeds = this.timer.timed('feedsMs', () => this.tokenFeeds(rows, newLen, pastLen, keep));
    const feeds: Record<string, RawTensor> = { ...tokenFeeds, ...this.timer.timed('gatherMs', () => this.pastFeeds(rows, pastLen, isDecode)) };

    const outputs = await this.timer.call(() => this.session.run(feeds));

    const present = this.timer.timed('scatterMs', () => {
      const arrays: KvArray[] = [];
      for (let layer = 0; layer < numLayers; layer++) {
        for (const kind of ['key', 'value'] as const) {
          const data = outputs[`present.${layer}.${kind}`]!.data as KvArray;
          arrays.push(data);
          rows.forEach((r, row) => {
            const count = r.tokenIds.length;
            this.kv.scatter(layer, kind, r.blockTable, r.numComputedTokens, count, data, row, total, total - count);
          });
        }
      }
      return arrays;
    });
    if (isDecode) this.lastDecode = { requestIds: rows.map((r) => r.requestId), numComputed: rows.map((r) => r.numComputedTokens), total, present };

    this.timer.timed('logitsMs', () => {
      const logitsTensor = outputs.logits!;
      const kept = logitsTensor.dims[1]!;
      rows.forEach((r, row) => {
        // Left padding puts a row's `count` real positions last; the sampled one is the very last.
        const count = r.allLogits ? r.tokenIds.length : r.sample ? 1 : 0;
        if (count === 0) return;
        const offset = (row * kept + kept - count) * vocabSize;
        logits.set(r.requestId, toFloat32(logitsTensor, offset, count * vocabSize));
      });
    });
  }

  /**
   * past_key_values.* for the rows. When a decode call has exactly the previous decode call's
   * rows, each one token further, the previous present.* is this call's past bit for bit (same
   * left padding, pads still zero), so it is fed as is: steady decoding gathers nothing.
   * Otherwise each request's positions are gathered from its blocks into reused buffers.
   */
  private pastFeeds(rows: readonly ScheduledRequest[], pastLen: number, isDecode: boolean): Record<string, RawTensor> {
    const { numLayers, numKvHeads, headDim, kvType } = this.layout;
    const dims = [rows.length, numKvHeads, pastLen, headDim];
    const feeds: Record<string, RawTensor> = {};
    const reusable = isDecode && this.continuesLastDecode(rows, pastLen) ? this.lastDecode!.present : null;
    if (reusable) this.stats.reusedPastCalls += 1;
    else this.timer.record('gatheredPositions', rows.length * pastLen);
    const pastSize = rows.length * numKvHeads * pastLen * headDim;
    let index = 0;
    for (let layer = 0; layer < numLayers; layer++) {
      for (const kind of ['key', 'value'] as const) {
        let past = reusable?.[index];
        if (!past) {
          past = this.pastBuffer(index, pastSize);
          rows.forEach((r, row) => this.kv.gather(layer, kind, r.blockTable, r.numComputedTokens, past!, row, pastLen));
        }
        feeds[`past_key_values.${layer}.${kind}`] = { type: kvType, dims, data: past };
        index++;
      }
    }
    return feeds;
  }

  private continuesLastDecode(rows: readonly ScheduledRequest[], pastLen: number): boolean {
    const last = this.lastDecode;
    if (!last || last.total !== pastLen || last.requestIds.length !== rows.length) return false;
    return rows.every((r, i) => !r.isNew && r.requestId === last.requestIds[i] && r.numComputedTokens === last.numComputed[i]! + 1);
  }

  /** A view of `size` elements on the reused buffer `index`; gather() writes every element of it. */
  private pastBuffer(index: number, size: number): KvArray {
    const bytes = this.layout.kvType === 'float16' ? 2 : 4;
    let buffer = this.pastBuffers[index];
    if (!buffer || buffer.byteLength < size * bytes) {
      // Grow with headroom so a past that lengthens by one token per step does not reallocate each step.
      buffer = new ArrayBuffer(Math.ceil(size * 1.25) * bytes);
      this.pastBuffers[index] = buffer;
    }
    return this.layout.kvType === 'float16' ? new Uint16Array(buffer, 0, size) : new Float32Array(buffer, 0, size);
  }

  /** input_ids, attention_mask, position_ids (and num_logits_to_keep = `keep`) for left-padded rows. */
  private tokenFeeds(rows: readonly ScheduledRequest[], newLen: number, pastLen: number, keep: number): Record<string, RawTensor> {
    const batch = rows.length;
    const total = pastLen + newLen;
    const ids = new BigInt64Array(batch * newLen).fill(PAD_TOKEN);
    const mask = new BigInt64Array(batch * total);
    const positions = new BigInt64Array(batch * newLen).fill(1n);
    rows.forEach((r, row) => {
      const count = r.tokenIds.length;
      mask.fill(1n, row * total + pastLen - r.numComputedTokens, row * total + pastLen);
      mask.fill(1n, row * total + total - count, (row + 1) * total);
      for (let k = 0; k < count; k++) {
        const column = row * newLen + newLen - count + k;
        ids[column] = BigInt(r.tokenIds[k]!);
        positions[column] = BigInt(r.numComputedTokens + k);
      }
    });
    const feeds: Record<string, RawTensor> = {
      input_ids: { type: 'int64', dims: [batch, newLen], data: ids },
      attention_mask: { type: 'int64', dims: [batch, total], data: mask },
    };
    if (this.layout.hasPositionIds) feeds.position_ids = { type: 'int64', dims: [batch, newLen], data: positions };
    if (this.layout.hasLogitsToKeep) feeds.num_logits_to_keep = { type: 'int64', dims: [], data: BigInt64Array.of(BigInt(keep)) };
    return feeds;
  }
}
