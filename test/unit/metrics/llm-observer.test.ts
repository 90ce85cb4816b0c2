// The LLM observer over hand-made step messages and finished requests: vLLM's per-step counting
// (whole prompt at the first token, inter-token gaps per token-bearing step), running totals
// turned into increments, per-request phase histograms, and the vllm: mirror.
import { Registry } from 'prom-client';
import { beforeEach, describe, expect, it } from 'vitest';
import type { EngineStats, SequenceUpdate, StepOutput } from '../../../src/contracts/generate.js';
import { LLM_PREFIX, VLLM_PREFIX, VLLM_ROUTING_METRICS } from '../../../src/metrics/metric-definitions.js';
import { PromLlmMetrics, finishedRequest, type LlmEngineMetrics } from '../../../src/metrics/llm-observer.js';
import { parseExposition } from './exposition.js';

const stats = (over: Partial<EngineStats> = {}): EngineStats => ({
  numRunning: 2,
  numWaiting: 1,
  kvCacheUsage: 0.25,
  numTotalBlocks: 64,
  numFreeBlocks: 48,
  prefixCacheQueries: 0,
  prefixCacheHits: 0,
  numPreemptions: 0,
  ...over,
});

function update(requestId: string, over: Partial<SequenceUpdate> = {}): SequenceUpdate {
  return {
    requestId,
    newTokenIds: [7],
    logprobs: null,
    finishReason: null,
    stopTokenId: null,
    numPromptTokens: 5,
    numOutputTokens: 1,
    numCachedTokens: 0,
    numPreemptions: 0,
    arrivalTimeMs: 0,
    scheduledTimeMs: 100,
    firstTokenTimeMs: 200,
    ...over,
  };
}

const step = (stepId: number, timeMs: number, updates: SequenceUpdate[], s: EngineStats = stats()): StepOutput => ({ stepId, timeMs, updates, rejections: [], stats: s });
const M = { model_name: 'qwen' };

let registry: Registry;
let observer: PromLlmMetrics;
let engines: Map<string, LlmEngineMetrics>;
/** The model's one attached engine (attached on first use). */
const engineOf = (model: string): LlmEngineMetrics => {
  let engine = engines.get(model);
  if (!engine) engines.set(model, (engine = observer.attach(model)));
  return engine;
};
const qwen = () => engineOf('qwen');
const other = () => engineOf('other');
const scrape = async () => parseExposition(await registry.metrics());

beforeEach(() => {
  registry = new Registry();
  observer = new PromLlmMetrics(registry, [LLM_PREFIX]);
  engines = new Map();
});

describe('LlmMetricsObserver.observeStep', () => {
  it("counts a prompt once, at its first token, and every generated token (vLLM's iteration counts)", async () => {
    qwen().observeStep(step(0, 150, []));
    qwen().observeStep(step(1, 200, [update('a', { numCachedTokens: 2 })]));
    qwen().observeStep(step(2, 250, [update('a', { numOutputTokens: 2 }), update('b', { numPromptTokens: 3, firstTokenTimeMs: 250 })]));
    qwen().observeStep(step(3, 330, [update('a', { numOutputTokens: 3, finishReason: 'length' }), update('b', { numOutputTokens: 2 })]));
    const m = await scrape();
    expect(m.value('conveyor:prompt_tokens_total', M)).toBe(8);
    expect(m.value('conveyor:prompt_tokens_cached_total', M)).toBe(2);
    expect(m.value('conveyor:generation_tokens_total', M)).toBe(5);
    // Steps: 0 tokens, 5+1, 1+3+1, 1+1.
    expect(m.value('conveyor:iteration_tokens_total_count', M)).toBe(4);
    expect(m.value('conveyor:iteration_tokens_total_sum', M)).toBe(13);
    expect(m.value('conveyor:iteration_tokens_total_bucket', { ...M, le: '1' })).toBe(1);
    // Gaps: a 50 ms and 80 ms, b 80 ms.
    expect(m.value('conveyor:inter_token_latency_seconds_count', M)).toBe(3);
    expect(m.value('conveyor:inter_token_latency_seconds_sum', M)).toBeCloseTo(0.21, 9);
    expect(m.value('conveyor:inter_token_latency_seconds_bucket', { ...M, le: '0.05' })).toBe(1);
  });

  it('sets the gauges from the latest stats and forgets them with the model', async () => {
    qwen().observeStep(step(0, 10, [], stats({ numRunning: 3, numWaiting: 4, kvCacheUsage: 0.5 })));
    qwen().observeStep(step(1, 20, [], stats({ numRunning: 1, numWaiting: 0, kvCacheUsage: 0.125 })));
    let m = await scrape();
    expect([m.value('conveyor:num_requests_running', M), m.value('conveyor:num_requests_waiting', M), m.value('conveyor:kv_cache_usage_perc', M)]).toEqual([1, 0, 0.125]);
    qwen().detach();
    m = await scrape();
    expect(m.value('conveyor:num_requests_running', M)).toBeUndefined();
  });

  it("turns the engine's running totals into increments, and a restarted engine's totals into new counts", async () => {
    qwen().observeStep(step(0, 10, [], stats({ prefixCacheQueries: 5, prefixCacheHits: 1 })));
    qwen().observeStep(step(1, 20, [], stats({ prefixCacheQueries: 8, prefixCacheHits: 4, numPreemptions: 1 })));
    qwen().observeStep(step(2, 30, [], stats({ prefixCacheQueries: 8, prefixCacheHits: 4, numPreemptions: 1 })));
    qwen().observeStep(step(0, 40, [], stats({ prefixCacheQueries: 2, prefixCacheHits: 0 })));
    const m = await scrape();
    expect(m.value('conveyor:prefix_cache_queries_total', M)).toBe(10);
    expect(m.value('conveyor:prefix_cache_hits_total', M)).toBe(4);
    expect(m.value('conveyor:num_preemptions_total', M)).toBe(1);
  });

  it('does not count the prompt again when a preempted request resumes, and skips flush messages in the step histogram', async () => {
    qwen().observeStep(step(0, 10, [update('a')]));
    qwen().observeStep(step(5, 90, [update('a', { numOutputTokens: 4, numPreemptions: 1 })]));
    qwen().observeStep(step(-1, 95, [update('a', { newTokenIds: [], numOutputTokens: 4, finishReason: 'abort' })]));
    qwen().observeStep(step(6, 99, [update('a', { numOutputTokens: 5 })]));
    const m = await scrape();
    expect(m.value('conveyor:prompt_tokens_total', M)).toBe(5);
    expect(m.value('conveyor:iteration_tokens_total_count', M)).toBe(3);
    // The abort ended request a: a later update with its id starts a new gap sequence.
    expect(m.value('conveyor:inter_token_latency_seconds_count', M)).toBe(1);
  });

  it('keeps the engines of a reloaded model apart: totals per engine, running summed, gauges kept until the last detaches', async () => {
    const old = observer.attach('qwen');
    old.observeStep(step(0, 10, [], stats({ numRunning: 2, numWaiting: 0, kvCacheUsage: 0.5, prefixCacheQueries: 100, prefixCacheHits: 40 })));
    const fresh = observer.attach('qwen');
    fresh.observeStep(step(0, 20, [], stats({ numRunning: 3, numWaiting: 1, kvCacheUsage: 0.125, prefixCacheQueries: 10, prefixCacheHits: 5 })));
    old.observeStep(step(1, 30, [], stats({ numRunning: 1, numWaiting: 0, kvCacheUsage: 0.25, prefixCacheQueries: 104, prefixCacheHits: 41 })));
    let m = await scrape();
    expect([m.value('conveyor:num_requests_running', M), m.value('conveyor:num_requests_waiting', M), m.value('conveyor:kv_cache_usage_perc', M)]).toEqual([4, 1, 0.125]);
    // 100 + 4 from the old engine, 10 from the new: neither engine's totals read as the other's restart.
    expect(m.value('conveyor:prefix_cache_queries_total', M)).toBe(114);
    expect(m.value('conveyor:prefix_cache_hits_total', M)).toBe(46);
    old.detach();
    m = await scrape();
    expect([m.value('conveyor:num_requests_running', M), m.value('conveyor:kv_cache_usage_perc', M)]).toEqual([3, 0.125]);
    fresh.detach();
    m = await scrape();
    expect(m.value('conveyor:num_requests_running', M)).toBeUndefined();
  });

  it('keeps models apart', async () => {
    qwen().observeStep(step(0, 10, [update('a')]));
    other().observeStep(step(0, 10, [update('a')]));
    other().observeStep(step(1, 30, [update('a', { numOutputTokens: 2 })]));
    const m = await scrape();
    expect(m.value('conveyor:inter_token_latency_seconds_count', M)).toBeUndefined();
    expect(m.value('conveyor:inter_token_latency_seconds_count', { model_name: 'other' })).toBe(1);
  });
});

describe('LlmMetricsObserver.observeRequestFinished', () => {
  it("observes each phase of a finished request with vLLM's definitions", async () => {
    const final = update('a', { numOutputTokens: 3, finishReason: 'length', scheduledTimeMs: 100, firstTokenTimeMs: 200 });
    qwen().observeStep(step(0, 200, [update('a')]));
    observer.observeRequestFinished(finishedRequest('qwen', final, 330));
    const m = await scrape();
    const sum = (name: string) => m.value(`conveyor:${name}_sum`, M);
    expect(sum('e2e_request_latency_seconds')).toBeCloseTo(0.33, 9);
    expect(sum('request_queue_time_seconds')).toBeCloseTo(0.1, 9);
    expect(sum('time_to_first_token_seconds')).toBeCloseTo(0.2, 9);
    expect(sum('request_prefill_time_seconds')).toBeCloseTo(0.1, 9);
    expect(sum('request_decode_time_seconds')).toBeCloseTo(0.13, 9);
    expect(sum('request_inference_time_seconds')).toBeCloseTo(0.23, 9);
    expect(sum('request_time_per_output_token_seconds')).toBeCloseTo(0.065, 9);
    expect(sum('request_prompt_tokens')).toBe(5);
    expect(sum('request_generation_tokens')).toBe(3);
    expect(m.value('conveyor:time_to_first_token_seconds_bucket', { ...M, le: '0.25' })).toBe(1);
    expect(m.value('conveyor:time_to_first_token_seconds_bucket', { ...M, le: '0.1' })).toBe(0);
    const reasons = Object.fromEntries(m.all('conveyor:request_success_total', M).map((s) => [s.labels.finished_reason, s.value]));
    expect(reasons).toEqual({ stop: 0, length: 1, abort: 0 });
  });

  it('observes only the end-to-end latency of a request aborted while waiting', async () => {
    const final = update('a', { newTokenIds: [], numOutputTokens: 0, finishReason: 'abort', arrivalTimeMs: 1000, scheduledTimeMs: null, firstTokenTimeMs: null });
    observer.observeRequestFinished(finishedRequest('qwen', final, 1500));
    const m = await scrape();
    expect(m.value('conveyor:e2e_request_latency_seconds_sum', M)).toBeCloseTo(0.5, 9);
    for (const name of ['request_queue_time_seconds', 'time_to_first_token_seconds', 'request_decode_time_seconds', 'request_time_per_output_token_seconds']) {
      expect(m.value(`conveyor:${name}_count`, M), name).toBeUndefined();
    }
    expect(m.value('conveyor:request_success_total', { ...M, finished_reason: 'abort' })).toBe(1);
  });
});

describe('vllm: names', () => {
  it('exports the same series under both prefixes', async () => {
    observer = new PromLlmMetrics((registry = new Registry()), [LLM_PREFIX, VLLM_PREFIX]);
    qwen().observeStep(step(0, 200, [update('a')], stats({ prefixCacheQueries: 5, prefixCacheHits: 5 })));
    observer.observeRequestFinished(finishedRequest('qwen', update('a', { finishReason: 'stop' }), 200));
    const m = await scrape();
    const names = [...new Set(m.samples.map((s) => s.name))];
    const conveyor = m.samples.filter((s) => s.name.startsWith('conveyor:'));
    expect(conveyor.length).toBeGreaterThan(50);
    for (const s of conveyor) expect(m.value(s.name.replace('conveyor:', 'vllm:'), s.labels), s.name).toBe(s.value);
    const routing = new Set(Object.values(VLLM_ROUTING_METRICS).map((d) => `${VLLM_PREFIX}${d.name}`));
    const mirrored = names.filter((n) => n.startsWith('vllm:') && !routing.has(n));
    expect(mirrored.length).toBe(names.filter((n) => n.startsWith('conveyor:')).length);
    expect(m.value('vllm:prefix_cache_hits_total', M)).toBe(5);
  });

  it("adds vLLM's routing series: the older gpu_ names, the cache config and the LoRA info", async () => {
    observer = new PromLlmMetrics((registry = new Registry()), [LLM_PREFIX, VLLM_PREFIX]);
    const before = Date.now() / 1000;
    const engine = observer.attach('qwen', { blockSize: 16, numBlocks: 64 });
    let m = await scrape();
    // A fresh engine: every series a router reads is there before the first request.
    expect([m.value('vllm:num_requests_running', M), m.value('vllm:num_requests_waiting', M), m.value('vllm:kv_cache_usage_perc', M)]).toEqual([0, 0, 0]);
    expect(m.value('vllm:cache_config_info', { ...M, block_size: '16', num_gpu_blocks: '64' })).toBe(1);
    expect(m.value('vllm:gpu_prefix_cache_hit_rate', M)).toBe(0);
    expect(m.value('vllm:gpu_prefix_cache_queries_total', M)).toBe(0);
    const lora = m.all('vllm:lora_requests_info');
    expect(lora.map((s) => s.labels)).toEqual([{ max_lora: '0', running_lora_adapters: '', waiting_lora_adapters: '' }]);
    expect(lora[0]!.value).toBeGreaterThanOrEqual(Math.floor(before));
    engine.observeStep(step(0, 10, [], stats({ kvCacheUsage: 0.5, prefixCacheQueries: 8, prefixCacheHits: 2 })));
    engine.observeStep(step(1, 20, [], stats({ kvCacheUsage: 0.75, prefixCacheQueries: 16, prefixCacheHits: 10, numTotalBlocks: 32 })));
    m = await scrape();
    expect(m.value('vllm:gpu_cache_usage_perc', M)).toBe(0.75);
    expect(m.value('vllm:gpu_prefix_cache_queries_total', M)).toBe(16);
    expect(m.value('vllm:gpu_prefix_cache_hits_total', M)).toBe(10);
    expect(m.value('vllm:gpu_prefix_cache_hit_rate', M)).toBe(10 / 16);
    // The pool the engine reports now replaces the one it started with: one series, not two.
    expect(m.all('vllm:cache_config_info', M).map((s) => s.labels.num_gpu_blocks)).toEqual(['32']);
    // None of it under conveyor:.
    expect(m.samples.some((s) => s.name === 'conveyor:gpu_cache_usage_perc' || s.name === 'conveyor:cache_config_info')).toBe(false);
    engine.detach();
    m = await scrape();
    expect(m.samples.filter((s) => s.name.startsWith('vllm:') && /info|gpu_cache|hit_rate/.test(s.name))).toEqual([]);
  });
});
