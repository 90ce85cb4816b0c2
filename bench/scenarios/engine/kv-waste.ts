// KV memory wasted by the paged cache versus contiguous per-request reservations, from one run of
// a mixed workload. Blocks in use come from the engine's own stats (numTotalBlocks −
// numFreeBlocks, evictable cached blocks counted free, as the engine counts them) sampled at every
// step; tokens stored come from the request lengths in the updates (prompt + outputs − 1: the
// newest token's K/V is written by the next step).

import type { RequestTrace, WorkloadTrace } from './workload.js';

export interface KvWaste {
  /** Steps where every running request's stored length is known (none waiting or mid-prefill). */
  readonly samples: number;
  /** Steps skipped because a request was waiting or mid-prefill. */
  readonly skipped: number;
  /** Samples where the engine's block count equals Σ ceil(stored / block_size) over requests. */
  readonly agreeing: number;
  /** Summed over samples: token slots of allocated blocks, and tokens actually stored. */
  readonly blockSlots: number;
  readonly storedTokens: number;
  /** 1 − stored / slots for: the paged cache, reserving max_model_len, reserving prompt + max_tokens. */
  readonly pagedWaste: number;
  readonly maxModelLenWaste: number;
  readonly promptPlusMaxWaste: number;
  readonly peakBlocksInUse: number;
}

export function kvWaste(trace: WorkloadTrace, blockSize: number, maxModelLen: number): KvWaste {
  let samples = 0,
    skipped = 0,
    agreeing = 0,
    blockSlots = 0,
    storedTokens = 0,
    maxLenSlots = 0,
    promptMaxSlots = 0,
    peak = 0;
  for (const [timeMs, stats] of trace.stepStats) {
    const live = trace.requests.map((r) => storedAt(r, timeMs)).filter((s): s is Stored => s !== null);
    if (stats.numWaiting > 0 || stats.numRunning !== live.length || live.length === 0) {
      skipped++;
      continue;
    }
    const inUse = stats.numTotalBlocks - stats.numFreeBlocks;
    const stored = live.reduce((sum, s) => sum + s.tokens, 0);
    const expected = live.reduce((sum, s) => sum + Math.ceil(s.tokens / blockSize), 0);
    samples++;
    if (expected === inUse) agreeing++;
    peak = Math.max(peak, inUse);
    blockSlots += inUse * blockSize;
    storedTokens += stored;
    maxLenSlots += live.length * maxModelLen;
    promptMaxSlots += live.reduce((sum, s) => sum + s.reserved, 0);
  }
  const waste = (slots: number): number => (slots > 0 ? 1 - storedTokens / slots : NaN);
  return {
    samples,
    skipped,
    agreeing,
    blockSlots,
    storedTokens,
    peakBlocksInUse: peak,
    pagedWaste: waste(blockSlots),
    maxModelLenWaste: waste(maxLenSlots),
    promptPlusMaxWaste: waste(promptMaxSlots),
  };
}

interface Stored {
  readonly tokens: number;
  /** What a contiguous cache that knows max_tokens would reserve. */
  readonly reserved: number;
}

/** The request's stored positions just after the step at `timeMs`; null when it holds no blocks then. */
function storedAt(request: RequestTrace, timeMs: number): Stored | null {
  let latest = null;
  for (const p of request.points) {
    if (p.timeMs > timeMs) break;
    latest = p;
  }
  // Not yet sampled once (waiting or mid-prefill: length unknown here), or finished and freed.
  if (latest === null || latest.finished) return null;
  return { tokens: request.numPromptTokens + latest.numOutputTokens - 1, reserved: request.numPromptTokens + request.maxTokens };
}
