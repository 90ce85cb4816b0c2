// The metrics contract routers read (issue 15), on the real server with --metrics-engine-type
// vllm: every series the Gateway API Inference Extension's endpoint picker and vLLM's
// production-stack router read, by exact name, type and label set, parsed from /metrics by a
// Prometheus text parser (never string matching), on the metrics port and on the HTTP serving
// port alike; their values after real generations; and the queue gauges while 32 streams
// saturate the engine.
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { labelSets, parsePrometheusText, type FamilyType, type PromFamily } from '../support/prometheus-text.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

/** The contract: name, type, label names (sorted; a histogram's le aside). */
const CONTRACT: readonly (readonly [string, FamilyType, readonly string[]])[] = [
  // The endpoint picker, engine-type vllm.
  ['vllm:num_requests_waiting', 'gauge', ['model_name']],
  ['vllm:num_requests_running', 'gauge', ['model_name']],
  ['vllm:kv_cache_usage_perc', 'gauge', ['model_name']],
  ['vllm:lora_requests_info', 'gauge', ['max_lora', 'running_lora_adapters', 'waiting_lora_adapters']],
  ['vllm:cache_config_info', 'gauge', ['block_size', 'model_name', 'num_gpu_blocks']],
  // vLLM's production-stack router: the older names.
  ['vllm:gpu_cache_usage_perc', 'gauge', ['model_name']],
  ['vllm:gpu_prefix_cache_hit_rate', 'gauge', ['model_name']],
  ['vllm:gpu_prefix_cache_hits_total', 'counter', ['model_name']],
  ['vllm:gpu_prefix_cache_queries_total', 'counter', ['model_name']],
  // vLLM's current names of the same and the rest dashboards and autoscalers read.
  ['vllm:prefix_cache_hits_total', 'counter', ['model_name']],
  ['vllm:prefix_cache_queries_total', 'counter', ['model_name']],
  ['vllm:prompt_tokens_total', 'counter', ['model_name']],
  ['vllm:generation_tokens_total', 'counter', ['model_name']],
  ['vllm:request_success_total', 'counter', ['finished_reason', 'model_name']],
  ['vllm:num_preemptions_total', 'counter', ['model_name']],
  ['vllm:time_to_first_token_seconds', 'histogram', ['model_name']],
  ['vllm:inter_token_latency_seconds', 'histogram', ['model_name']],
  ['vllm:e2e_request_latency_seconds', 'histogram', ['model_name']],
  ['vllm:request_queue_time_seconds', 'histogram', ['model_name']],
  // Triton-style models (every model, the LLM included): Triton's model and version, plus the
  // precision variant serving (issue 14; an added label leaves Triton's selectors matching).
  ['nv_inference_pending_request_count', 'gauge', ['model', 'precision', 'version']],
  ['nv_inference_exec_count', 'counter', ['model', 'precision', 'version']],
  ['nv_inference_request_success', 'counter', ['model', 'precision', 'version']],
];

/** Histogram series appear with a model's first finished request (prom-client has none before an observation). */
const checkContract = (families: Map<string, PromFamily>, where: string, kinds: (type: FamilyType) => boolean): void => {
  for (const [name, type, labels] of CONTRACT.filter(([, type]) => kinds(type))) {
    const family = families.get(name);
    expect(family?.type, `${name} at ${where}`).toBe(type);
    expect(labelSets(family!), `${name} at ${where}`).toEqual([labels]);
  }
};

let server: TestServer;
let client: OpenAI;
const metricsPortUrl = () => `http://127.0.0.1:${server.metricsPort}/metrics`;
const httpPortUrl = () => `${server.http}/metrics`;

async function scrape(url: string): Promise<{ families: Map<string, PromFamily>; text: string }> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await response.text();
  return { families: parsePrometheusText(text), text };
}

const value = (families: Map<string, PromFamily>, name: string, labels: Readonly<Record<string, string>> = {}): number | undefined => {
  const found = (families.get(name)?.samples ?? []).filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
};
const Q = { model_name: 'qwen3' };

beforeAll(async () => {
  const repository = await makeRepository([
    { name: 'qwen3', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'qwen3') },
    { name: 'bert', from: 'bert-tiny', config: configOf('bert-tiny', 'bert') },
  ]);
  server = await startTestServer(repository, ['--metrics-engine-type', 'vllm']);
  client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
}, 120_000);
afterAll(async () => server?.stop());

describe('the metrics contract', () => {
  it('declares every counter and gauge of the contract with its exact type and labels, on both ports, before any request', async () => {
    for (const url of [metricsPortUrl(), httpPortUrl()]) {
      const { families } = await scrape(url);
      checkContract(families, url, (type) => type !== 'histogram');
      for (const model of ['qwen3', 'bert']) {
        expect(value(families, 'nv_inference_pending_request_count', { model, version: '1' }), model).toBe(0);
        expect(value(families, 'nv_inference_exec_count', { model, version: '1' }), model).toBe(0);
      }
      expect(value(families, 'vllm:num_requests_running', Q)).toBe(0);
      expect(value(families, 'vllm:cache_config_info', { ...Q, block_size: '16' })).toBe(1);
    }
  });

  it('reads the same under a second parser (parse-prometheus-text-format) for every counter and gauge', async () => {
    const { families, text } = await scrape(httpPortUrl());
    for (const other of parsePrometheusTextFormat(text)) {
      const mine = families.get(other.name);
      expect(mine?.type.toUpperCase(), other.name).toBe(other.type);
      if (other.type !== 'COUNTER' && other.type !== 'GAUGE') continue;
      expect(
        other.metrics.map((m) => ({ labels: m.labels ?? {}, value: Number(m.value) })),
        other.name,
      ).toEqual(mine!.samples.map((s) => ({ labels: s.labels, value: s.value })));
    }
  });

  it('carries the same families on the HTTP port as on the metrics port', async () => {
    const [a, b] = await Promise.all([scrape(metricsPortUrl()), scrape(httpPortUrl())]);
    // Process metrics' label sets follow the process (open handles by kind), not the port.
    const shape = (families: Map<string, PromFamily>) => [...families.values()].map((f) => [f.name, f.type, /^(nodejs|process)_/.test(f.name) ? [] : labelSets(f)]);
    expect(shape(b.families)).toEqual(shape(a.families));
  });

  it('gives the series their meanings after real generations', async () => {
    const prompt = 'The same long prompt, sent twice so that its full blocks are found in the prefix cache the second time';
    for (let i = 0; i < 2; i++) await client.completions.create({ model: 'qwen3', prompt, max_tokens: 4, temperature: 0 });
    const { families: m } = await scrape(httpPortUrl());
    for (const url of [metricsPortUrl(), httpPortUrl()]) checkContract((await scrape(url)).families, url, () => true);
    const hits = value(m, 'vllm:prefix_cache_hits_total', Q)!;
    const queries = value(m, 'vllm:prefix_cache_queries_total', Q)!;
    expect(hits).toBeGreaterThan(0);
    expect(value(m, 'vllm:gpu_prefix_cache_hits_total', Q)).toBe(hits);
    expect(value(m, 'vllm:gpu_prefix_cache_queries_total', Q)).toBe(queries);
    expect(value(m, 'vllm:gpu_prefix_cache_hit_rate', Q)).toBeCloseTo(hits / queries, 12);
    const usage = value(m, 'vllm:kv_cache_usage_perc', Q)!;
    expect(usage).toBeGreaterThanOrEqual(0);
    expect(usage).toBeLessThanOrEqual(1);
    expect(value(m, 'vllm:gpu_cache_usage_perc', Q)).toBe(usage);
    const engine = server.service.llmModel('qwen3').engine.info;
    expect(value(m, 'vllm:cache_config_info', { ...Q, block_size: String(engine.blockSize), num_gpu_blocks: String(engine.numBlocks) })).toBe(1);
    const lora = m.get('vllm:lora_requests_info')!.samples;
    expect(lora.map((s) => s.labels)).toEqual([{ max_lora: '0', running_lora_adapters: '', waiting_lora_adapters: '' }]);
    // Seconds since the epoch of the last update: recent, not milliseconds.
    expect(Math.abs(lora[0]!.value - Date.now() / 1000)).toBeLessThan(600);
    expect(value(m, 'vllm:request_success_total', { ...Q, finished_reason: 'length' })).toBe(2);
    expect(value(m, 'nv_inference_exec_count', { model: 'qwen3', version: '1' })).toBe(2);
  });

  it('shows 32 saturating streams as running and waiting, pending agreeing with waiting', async () => {
    const controller = new AbortController();
    const streams = Array.from({ length: 32 }, (_, i) =>
      client.completions
        .create({ model: 'qwen3', prompt: `Stream number ${i} writes on and on`, max_tokens: 2000, stream: true, ignore_eos: true } as OpenAI.CompletionCreateParamsStreaming, {
          signal: controller.signal,
        })
        .then(async (stream) => {
          for await (const _ of stream);
        })
        .catch(() => undefined),
    );
    try {
      const seen = await vi.waitFor(
        async () => {
          const { families: m } = await scrape(httpPortUrl());
          const running = value(m, 'vllm:num_requests_running', Q)!;
          const waiting = value(m, 'vllm:num_requests_waiting', Q)!;
          if (running + waiting !== 32) throw new Error(`running ${running} + waiting ${waiting} ≠ 32`);
          if (value(m, 'nv_inference_pending_request_count', { model: 'qwen3', version: '1' }) !== waiting) throw new Error('pending ≠ waiting');
          return { running, usage: value(m, 'vllm:kv_cache_usage_perc', Q)! };
        },
        { timeout: 60_000, interval: 50 },
      );
      expect(seen.running).toBeGreaterThan(0);
      expect(seen.usage).toBeGreaterThan(0);
    } finally {
      controller.abort();
      await Promise.all(streams);
    }
  });
});
