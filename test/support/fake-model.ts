// A deterministic stand-in for a model and its runner, pure JS. The "model" maps a context to
// its next token id. The runner keeps a fake KV store (the token id written at each slot), reads
// every past position through the plan's block table and writes the fed tokens back, so a wrong
// block table, a reused block that was still needed, or a prefix hit on the wrong content
// changes the generated tokens and fails the comparison with a run that never shares or evicts.

import { expect } from 'vitest';
import { type GenerateRequest, GREEDY_SAMPLING, type SampledTokens, type StepPlan, type StepResult } from '../../src/contracts/generate.js';
import { type PreemptionEvent, Scheduler, type SchedulerConfig } from '../../src/engine-worker/scheduler.js';
import { KvCacheManager, type KvCacheOptions } from '../../src/kv-cache/kv-cache-manager.js';
import { acceptGreedy, type DraftSource } from '../../src/engine-worker/spec-decode.js';

export const VOCAB = 1000;
export const EOS = 999;

/** The fake model: the next token depends on every token of the context, in order. */
export function nextToken(context: readonly number[]): number {
  let h = 0x811c9dc5;
  for (const t of context) h = Math.imul(h ^ t, 0x01000193);
  h = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d) >>> 0;
  return h % VOCAB;
}

/**
 * A fake model whose text repeats: the next token is a function of the last two (so a sequence
 * soon cycles and n-gram proposals hold), nudged by a hash of the whole context now and then, so
 * a wrong KV slot anywhere still changes what it generates.
 */
export function copyingNextToken(context: readonly number[]): number {
  const n = context.length;
  const a = context[n - 1] ?? 0;
  const b = context[n - 2] ?? 0;
  const local = Math.imul(a * 31 + b, 0x9e3779b1) >>> 0;
  const nudge = nextToken(context) % 11 === 0 ? 1 : 0;
  return ((local % 40) + nudge) % (VOCAB - 1);
}

export type FakeModel = (context: readonly number[]) => number;

/**
 * The copying model's logits, for sampled requests: its token 3 nats or more ahead of 39 others
 * spread below it (a function of the last two tokens), so a sampled row mostly takes it — and
 * n-gram proposals hold — yet often does not; the rest of the vocabulary is far below.
 */
export function copyingLogits(context: readonly number[]): Float32Array {
  const row = new Float32Array(VOCAB).fill(-30);
  const a = context[context.length - 1] ?? 0;
  const b = context[context.length - 2] ?? 0;
  for (let j = 0; j < 40; j++) row[j] = -4 + ((Math.imul(a * 131 + b * 7 + j, 0x9e3779b1) >>> 0) / 2 ** 32) * 3;
  row[copyingNextToken(context)] = 2;
  return row;
}

const EMPTY = -1;

export class FakeRunner {
  private readonly slots: Int32Array;
  private readonly positions: Int32Array;
  numCalls = 0;

  constructor(
    numBlocks: number,
    private readonly blockSize: number,
    private readonly model: FakeModel = nextToken,
  ) {
    this.slots = new Int32Array(numBlocks * blockSize).fill(EMPTY);
    this.positions = new Int32Array(numBlocks * blockSize).fill(EMPTY);
  }

  /** The step as the scheduler takes it: a checked proposal's rows reduced to the tokens it yields (acceptGreedy, as the engine does). */
  execute(plan: StepPlan): StepResult {
    const byId = new Map(plan.scheduled.map((s) => [s.requestId, s]));
    const sampled = this.forward(plan).map((row): SampledTokens => {
      const numDrafts = byId.get(row.requestId)!.numDraftTokens ?? 0;
      return numDrafts === 0 ? row : { ...row, tokenIds: acceptGreedy(byId.get(row.requestId)!.tokenIds.slice(-numDrafts), row.tokenIds) };
    });
    return { stepId: plan.stepId, sampled };
  }

  /** The model's greedy token at each sampled position: one per sampled row, or numDraftTokens + 1 for a checked proposal. */
  forward(plan: StepPlan): SampledTokens[] {
    return [...this.rowContexts(plan)].map(([requestId, contexts]) => ({ requestId, tokenIds: contexts.map((context) => this.model(context)), logprobs: null }));
  }

  /**
   * Runs the step on the fake KV and returns, for each sampled request, the context (as read back
   * from the KV slots) at each of its logits rows: one, or numDraftTokens + 1 for a checked proposal.
   */
  rowContexts(plan: StepPlan): Map<string, number[][]> {
    this.numCalls++;
    // Read every request's context before writing anything, as a forward pass gathers past KV first.
    const contexts = plan.scheduled.map((s) => this.readPast(s.blockTable, s.numComputedTokens));
    const rows = new Map<string, number[][]>();
    plan.scheduled.forEach((s, i) => {
      if (s.tokenIds.length === 0 || s.blockTable.length * this.blockSize < s.numComputedTokens + s.tokenIds.length) {
        throw new Error(`bad plan entry for ${s.requestId}: ${s.tokenIds.length} tokens at ${s.numComputedTokens}, ${s.blockTable.length} blocks`);
      }
      s.tokenIds.forEach((t, k) => this.write(s.blockTable, s.numComputedTokens + k, t));
      if (!s.sample) return;
      const context = [...contexts[i]!, ...s.tokenIds];
      const numRows = 1 + (s.numDraftTokens ?? 0);
      rows.set(
        s.requestId,
        Array.from({ length: numRows }, (_, r) => context.slice(0, context.length - numRows + 1 + r)),
      );
    });
    return rows;
  }

  private readPast(table: readonly number[], count: number): number[] {
    const out: number[] = [];
    for (let p = 0; p < count; p++) {
      const slot = table[Math.floor(p / this.blockSize)]! * this.blockSize + (p % this.blockSize);
      // A slot never written, or written for another position, means the plan points at bad KV.
      if (this.positions[slot] !== p) throw new Error(`position ${p} read from slot ${slot}, which holds position ${this.positions[slot]}`);
      out.push(this.slots[slot]!);
    }
    return out;
  }

  private write(table: readonly number[], p: number, token: number): void {
    const slot = table[Math.floor(p / this.blockSize)]! * this.blockSize + (p % this.blockSize);
    this.slots[slot] = token;
    this.positions[slot] = p;
  }
}

export function makeRequest(id: string, prompt: readonly number[], over: Partial<GenerateRequest['stop']> & { priority?: number; cacheSalt?: string | null } = {}): GenerateRequest {
  const { priority = 0, cacheSalt = null, ...stop } = over;
  return {
    id,
    promptTokenIds: prompt,
    sampling: GREEDY_SAMPLING,
    stop: { maxTokens: 16, minTokens: 0, eosTokenIds: [EOS], ignoreEos: false, stopTokenIds: [], ...stop },
    priority,
    cacheSalt,
  };
}

/** Deterministic pseudo-random integers (mulberry32). */
export function rng(seed: number): (n: number) => number {
  let a = seed >>> 0;
  return (n) => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n) | 0;
  };
}

export function randomTokens(next: (n: number) => number, length: number): number[] {
  return Array.from({ length }, () => next(VOCAB - 1));
}

/** Managers created by tests; the test files check every one after each test. */
const tracked: KvCacheManager[] = [];

export function trackedKv(options: KvCacheOptions): KvCacheManager {
  const kv = new KvCacheManager(options);
  tracked.push(kv);
  return kv;
}

export function checkTrackedIntegrity(): void {
  for (const kv of tracked.splice(0)) kv.checkIntegrity();
}

export interface Harness {
  readonly kv: KvCacheManager;
  readonly scheduler: Scheduler;
  readonly runner: FakeRunner;
  readonly clock: { ms: number };
}

export function harness(
  config: Partial<SchedulerConfig> & { numBlocks: number; blockSize?: number; enablePrefixCaching?: boolean; log?: (event: PreemptionEvent) => void; drafts?: DraftSource; model?: FakeModel },
): Harness {
  const { numBlocks, blockSize = 4, enablePrefixCaching = true, log, drafts, model, ...rest } = config;
  const kv = trackedKv({ numBlocks, blockSize, enablePrefixCaching });
  const clock = { ms: 0 };
  const scheduler = new Scheduler({ maxNumSeqs: 8, maxNumBatchedTokens: 64, maxModelLen: 1024, ...rest }, kv, { now: () => clock.ms, ...(log ? { log } : {}), ...(drafts ? { drafts } : {}) });
  return { kv, scheduler, runner: new FakeRunner(numBlocks, blockSize, model), clock };
}

export interface RunRecord {
  readonly outputs: Map<string, number[]>;
  readonly finish: Map<string, string>;
  readonly cached: Map<string, number>;
  readonly plans: StepPlan[];
}

/**
 * Drives schedule → execute → apply until nothing is left, submitting each request at its
 * arrival step. Checks the budgets and the pool's integrity after every step.
 */
export function runToCompletion(
  h: Harness,
  arrivals: readonly { step: number; request: GenerateRequest }[],
  config: { maxNumSeqs: number; maxNumBatchedTokens: number },
  maxSteps = 10_000,
): RunRecord {
  const record: RunRecord = { outputs: new Map(), finish: new Map(), cached: new Map(), plans: [] };
  const queue = [...arrivals].sort((a, b) => a.step - b.step);
  for (let step = 0; step < maxSteps && (queue.length > 0 || h.scheduler.hasUnfinished()); step++) {
    h.clock.ms = step;
    while (queue[0] && queue[0].step <= step) h.scheduler.add(queue.shift()!.request);
    const plan = h.scheduler.schedule();
    record.plans.push(plan);
    expect(plan.scheduled.length).toBeLessThanOrEqual(config.maxNumSeqs);
    expect(plan.numScheduledTokens).toBeLessThanOrEqual(config.maxNumBatchedTokens);
    expect(plan.numScheduledTokens).toBe(plan.scheduled.reduce((n, s) => n + s.tokenIds.length, 0));
    expectNoSharedWrites(h, plan);
    const output = h.scheduler.apply(h.runner.execute(plan));
    for (const u of output.updates) {
      const out = record.outputs.get(u.requestId) ?? [];
      out.push(...u.newTokenIds);
      record.outputs.set(u.requestId, out);
      record.cached.set(u.requestId, u.numCachedTokens);
      if (u.finishReason) record.finish.set(u.requestId, u.finishReason);
    }
    h.kv.checkIntegrity();
  }
  expect(h.scheduler.hasUnfinished()).toBe(false);
  expect(h.kv.numFreeBlocks).toBe(h.kv.numTotalBlocks);
  return record;
}

/** Blocks a step writes (from the one holding numComputedTokens on) must belong to that request alone. */
function expectNoSharedWrites(h: Harness, plan: StepPlan): void {
  const bs = h.kv.blockSize;
  for (const s of plan.scheduled) {
    for (const b of s.blockTable.slice(Math.floor(s.numComputedTokens / bs))) {
      if (h.kv.refCount(b) !== 1) throw new Error(`request ${s.requestId} writes block ${b}, which has ref count ${h.kv.refCount(b)}`);
    }
  }
}

/** What the fake model generates for one request run alone, with the engine's stop rules. */
export function referenceOutput(request: GenerateRequest, maxModelLen: number, model: FakeModel = nextToken): number[] {
  const context = [...request.promptTokenIds];
  const out: number[] = [];
  const { stop } = request;
  while (true) {
    const t = model(context);
    context.push(t);
    out.push(t);
    const tokenStop = out.length >= stop.minTokens && ((!stop.ignoreEos && stop.eosTokenIds.includes(t)) || stop.stopTokenIds.includes(t));
    if (tokenStop || out.length >= stop.maxTokens || context.length >= maxModelLen) return out;
  }
}
