// PastKeyValuesRunner: runs a StepPlan on any Optimum-contract decoder. Per step it gathers each
// request's past K/V from the block pool into padded past tensors, runs the model, and writes
// the new positions of present.* back into the request's blocks.
//
// Rows are left-padded (past and new tokens both), so every row's last real token is the last
// position and `num_logits_to_keep = 1` yields exactly the logits to sample. Decode rows (one
// token) and prefill chunks run as separate calls so a long chunk never pads 31 decode rows.

import type { ScheduledRequest, StepPlan } from '../contracts/generate.js';
import type { ModelSession, RawTensor } from '../runtime/model-session.js';
import type { DecoderLayout } from './decoder-layout.js';
import type { KvArray, KvStorage } from './kv-storage.js';

/** The logits row of each request that samples this step, float32, vocab long. */
export type StepLogits = Map<string, Float32Array>;

export interface RunnerStats {
  /** ORT calls in the last step (the plan split by shape). */
  lastStepCalls: number;
  /** Time spent gathering and scattering KV in the last step, ms. */
  lastStepCopyMs: number;
}

const PAD_TOKEN = 0n;

export class PastKeyValuesRunner {
  readonly stats: RunnerStats = { lastStepCalls: 0, lastStepCopyMs: 0 };

  constructor(
    private readonly session: ModelSession,
    private readonly layout: DecoderLayout,
    private readonly kv: KvStorage,
  ) {}

  async execute(plan: StepPlan): Promise<StepLogits> {
    for (const [source, destination] of plan.blocksToCopy) this.kv.copyBlock(source, destination);
    const decode = plan.scheduled.filter((r) => r.tokenIds.length === 1);
    const prefill = plan.scheduled.filter((r) => r.tokenIds.length > 1);
    const logits: StepLogits = new Map();
    this.stats.lastStepCalls = 0;
    this.stats.lastStepCopyMs = 0;
    for (const group of [decode, prefill]) {
      if (group.length > 0) await this.runGroup(group, logits);
    }
    return logits;
  }

  private async runGroup(rows: readonly ScheduledRequest[], logits: StepLogits): Promise<void> {
    const { numLayers, numKvHeads, headDim, vocabSize } = this.layout;
    const batch = rows.length;
    const newLen = Math.max(...rows.map((r) => r.tokenIds.length));
    const pastLen = Math.max(...rows.map((r) => r.numComputedTokens));
    const total = pastLen + newLen;
    const copyStart = performance.now();
    const feeds: Record<string, RawTensor> = { ...this.tokenFeeds(rows, newLen, pastLen) };
    const pastSize = batch * numKvHeads * pastLen * headDim;
    for (let layer = 0; layer < numLayers; layer++) {
      for (const kind of ['key', 'value'] as const) {
        const past = this.allocate(pastSize);
        rows.forEach((r, row) => this.kv.gather(layer, kind, r.blockTable, r.numComputedTokens, past, row, pastLen));
        feeds[`past_key_values.${layer}.${kind}`] = { type: this.layout.kvType, dims: [batch, numKvHeads, pastLen, headDim], data: past };
      }
    }
    let copyMs = performance.now() - copyStart;

    const outputs = await this.session.run(feeds);
    this.stats.lastStepCalls += 1;

    const scatterStart = performance.now();
    for (let layer = 0; layer < numLayers; layer++) {
      for (const kind of ['key', 'value'] as const) {
        const present = outputs[`present.${layer}.${kind}`]!.data as KvArray;
        rows.forEach((r, row) => {
          const count = r.tokenIds.length;
          this.kv.scatter(layer, kind, r.blockTable, r.numComputedTokens, count, present, row, total, total - count);
        });
      }
    }
    copyMs += performance.now() - scatterStart;
    this.stats.lastStepCopyMs += copyMs;

    const logitsTensor = outputs.logits!;
    const kept = logitsTensor.dims[1]!;
    rows.forEach((r, row) => {
      if (!r.sample) return;
      const offset = (row * kept + kept - 1) * vocabSize;
      logits.set(r.requestId, toFloat32(logitsTensor, offset, vocabSize));
    });
  }

  /** input_ids, attention_mask, position_ids (and num_logits_to_keep) for left-padded rows. */
  private tokenFeeds(rows: readonly ScheduledRequest[], newLen: number, pastLen: number): Record<string, RawTensor> {
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
    if (this.layout.hasLogitsToKeep) feeds.num_logits_to_keep = { type: 'int64', dims: [], data: BigInt64Array.of(1n) };
    return feeds;
  }

  private allocate(size: number): KvArray {
    return this.layout.kvType === 'float16' ? new Uint16Array(size) : new Float32Array(size);
  }
}


/** A logits row as float32 (fp16 models return float16 logits). */
function toFloat32(tensor: RawTensor, offset: number, length: number): Float32Array {
  if (tensor.type === 'float32') return (tensor.data as Float32Array).slice(offset, offset + length);
  const bits = tensor.data as Uint16Array;
  const out = new Float32Array(length);
  for (let i = 0; i < length; i++) out[i] = halfToFloat(bits[offset + i]!);
  return out;
}

function halfToFloat(h: number): number {
  const exponent = (h >>> 10) & 0x1f;
  const mantissa = h & 0x3ff;
  const sign = h & 0x8000 ? -1 : 1;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 0x1f) return mantissa ? NaN : sign * Infinity;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}
