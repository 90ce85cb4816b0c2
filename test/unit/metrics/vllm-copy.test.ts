// The vllm: names of --metrics-engine-type vllm, rendered as a copy of the conveyor: LLM families'
// text: every conveyor: sample has a vllm: twin with the same labels and value, HELP and TYPE
// match, a label value that happens to spell "conveyor:" is left alone, the routing extras are
// there once, and the dashboard's families JSON carries the same copy.
import { describe, expect, it } from 'vitest';
import type { StepOutput } from '../../../src/contracts/generate.js';
import { finishedRequest } from '../../../src/metrics/llm-observer.js';
import { asVllmName, createMetrics } from '../../../src/metrics/registry.js';
import { parseExposition } from './exposition.js';

const MODEL = 'conveyor:tricky';
const stats = { numRunning: 1, numWaiting: 0, kvCacheUsage: 0.25, numFreeBlocks: 30, numTotalBlocks: 40, prefixCacheQueries: 4, prefixCacheHits: 2, numPreemptions: 0 } as StepOutput['stats'];

describe('vllm: copies of the LLM families', () => {
  it('mirror every conveyor: LLM sample under vllm:, HELP and TYPE included, label values untouched', async () => {
    const metrics = createMetrics({ models: () => [], engineType: 'vllm', processMetrics: false });
    const engine = metrics.llm.attach(MODEL, { blockSize: 16, numBlocks: 40 });
    const update = {
      requestId: 'a',
      newTokenIds: [1],
      logprobs: null,
      finishReason: 'stop',
      stopTokenId: null,
      numPromptTokens: 3,
      numOutputTokens: 1,
      numCachedTokens: 0,
      numPreemptions: 0,
      arrivalTimeMs: 0,
      scheduledTimeMs: 5,
      firstTokenTimeMs: 20,
    } as const;
    engine.observeStep({ stepId: 0, timeMs: 20, updates: [update], rejections: [], stats } as unknown as StepOutput);
    metrics.llm.observeRequestFinished(finishedRequest(MODEL, update as never, 20));
    const text = await metrics.registry.metrics();
    const m = parseExposition(text);
    const conveyor = m.samples.filter((s) => s.name.startsWith('conveyor:'));
    expect(conveyor.length).toBeGreaterThan(50);
    for (const s of conveyor) expect(m.value(s.name.replace('conveyor:', 'vllm:'), s.labels), s.name).toBe(s.value);
    expect(m.value('vllm:e2e_request_latency_seconds_count', { model_name: MODEL })).toBe(1);
    for (const [name, type] of m.types) if (name.startsWith('conveyor:')) expect(m.types.get(name.replace('conveyor:', 'vllm:')), name).toBe(type);
    expect(text.match(/^# HELP vllm:kv_cache_usage_perc .*$/m)?.[0].slice('# HELP vllm:'.length)).toBe(text.match(/^# HELP conveyor:kv_cache_usage_perc .*$/m)?.[0].slice('# HELP conveyor:'.length));
    // The label value spelling "conveyor:" kept in both copies.
    expect(m.all('vllm:kv_cache_usage_perc').map((s) => s.labels.model_name)).toEqual([MODEL]);
    // The routing extras once, under vllm: only.
    expect(m.all('vllm:cache_config_info')).toHaveLength(1);
    expect(m.types.has('conveyor:cache_config_info')).toBe(false);
    // Each family declared once.
    expect(text.match(/^# TYPE vllm:num_requests_running /gm)).toHaveLength(1);

    const families = await metrics.families();
    const byName = new Map(families.map((f) => [f.name, f]));
    expect(byName.get('vllm:kv_cache_usage_perc')?.samples).toEqual(byName.get('conveyor:kv_cache_usage_perc')?.samples.map((s) => ({ ...s, name: 'vllm:kv_cache_usage_perc' })));
  });

  it('without vllm names there is no copy', async () => {
    const metrics = createMetrics({ models: () => [], engineType: 'conveyor', processMetrics: false });
    metrics.llm.attach('m');
    const text = await metrics.registry.metrics();
    expect(text).toContain('conveyor:num_requests_running');
    expect(text).not.toContain('vllm:');
  });

  it('renames only the conveyor: prefix of a family name', () => {
    expect(asVllmName('conveyor:time_to_first_token_seconds')).toBe('vllm:time_to_first_token_seconds');
    expect(asVllmName('nv_inference_count')).toBe('nv_inference_count');
    expect(asVllmName('process_conveyor:x')).toBe('process_conveyor:x');
  });
});
