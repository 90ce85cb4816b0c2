// The one file of metric definitions: Triton's and vLLM's exact names, sane buckets, and no
// metric name spelled anywhere else in the sources.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { validateMetricName } from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  LLM_COUNTERS,
  LLM_GAUGES,
  LLM_HISTOGRAMS,
  PROCESS_METRICS,
  TRITON_METRICS,
  VLLM_ROUTING_METRICS,
  allMetricNames,
  exportedDefinitions,
  type MetricDefinition,
} from '../../../src/metrics/metric-definitions.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const every: MetricDefinition[] = [TRITON_METRICS, LLM_HISTOGRAMS, LLM_COUNTERS, LLM_GAUGES, VLLM_ROUTING_METRICS, PROCESS_METRICS].flatMap((g) => Object.values(g));

describe('metric definitions', () => {
  it("names Triton's per-model metrics exactly (triton-protocol.md §5), labelled model and version", () => {
    const names = Object.values(TRITON_METRICS).map((d) => d.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'nv_inference_request_success',
        'nv_inference_request_failure',
        'nv_inference_count',
        'nv_inference_exec_count',
        'nv_inference_pending_request_count',
        'nv_inference_request_duration_us',
        'nv_inference_queue_duration_us',
        'nv_inference_compute_input_duration_us',
        'nv_inference_compute_infer_duration_us',
        'nv_inference_compute_output_duration_us',
      ]),
    );
    for (const d of Object.values(TRITON_METRICS)) expect(d.labels.slice(0, 2)).toEqual(['model', 'version']);
    expect(TRITON_METRICS.requestFailure.labels).toContain('reason');
    expect(TRITON_METRICS.pendingRequests.kind).toBe('gauge');
  });

  it("exports vLLM's sample names under vllm: when asked (llm-serving.md §1g)", () => {
    const names = allMetricNames('vllm');
    const vllm = [
      'num_requests_running',
      'num_requests_waiting',
      'kv_cache_usage_perc',
      'prompt_tokens_total',
      'generation_tokens_total',
      'request_success_total',
      'prefix_cache_queries_total',
      'prefix_cache_hits_total',
      'num_preemptions_total',
      'time_to_first_token_seconds',
      'inter_token_latency_seconds',
      'e2e_request_latency_seconds',
      'request_queue_time_seconds',
      'request_prefill_time_seconds',
      'request_decode_time_seconds',
      'iteration_tokens_total',
    ];
    expect(names).toEqual(expect.arrayContaining(vllm.flatMap((n) => [`vllm:${n}`, `conveyor:${n}`])));
    expect(allMetricNames('conveyor').some((n) => n.startsWith('vllm:'))).toBe(false);
    expect(LLM_COUNTERS.requestSuccess.labels).toEqual(['model_name', 'finished_reason']);
    for (const d of [LLM_HISTOGRAMS, LLM_COUNTERS, LLM_GAUGES].flatMap((g) => Object.values(g))) expect(d.labels[0]).toBe('model_name');
  });

  it("adds vLLM's routing series only under --metrics-engine-type vllm, as gauges and counters with vLLM's labels", () => {
    const routing = ['lora_requests_info', 'cache_config_info', 'gpu_cache_usage_perc', 'gpu_prefix_cache_hit_rate', 'gpu_prefix_cache_hits_total', 'gpu_prefix_cache_queries_total'];
    expect(Object.values(VLLM_ROUTING_METRICS).map((d) => d.name)).toEqual(routing);
    expect(allMetricNames('vllm')).toEqual(expect.arrayContaining(routing.map((n) => `vllm:${n}`)));
    expect(allMetricNames('conveyor').filter((n) => routing.some((r) => n.endsWith(r)))).toEqual([]);
    expect(VLLM_ROUTING_METRICS.loraRequestsInfo.labels).toEqual(['max_lora', 'running_lora_adapters', 'waiting_lora_adapters']);
    expect(VLLM_ROUTING_METRICS.cacheConfigInfo.labels).toEqual(expect.arrayContaining(['block_size', 'num_gpu_blocks']));
    const kinds = Object.fromEntries(exportedDefinitions('vllm').map((d) => [d.name, d.kind]));
    expect(kinds).toMatchObject({ 'vllm:gpu_prefix_cache_hits_total': 'counter', 'vllm:gpu_prefix_cache_hit_rate': 'gauge', 'vllm:lora_requests_info': 'gauge', nv_inference_exec_count: 'counter' });
  });

  it('gives every name a valid, unique spelling and every counter the _total suffix vLLM exports', () => {
    const names = allMetricNames('vllm');
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(validateMetricName(name), name).toBe(true);
    for (const d of Object.values(LLM_COUNTERS)) expect(d.name).toMatch(/_total$/);
  });

  it('gives histograms ascending positive buckets and nothing else buckets', () => {
    for (const d of every) {
      if (d.kind !== 'histogram') {
        expect(d.buckets, d.name).toBeUndefined();
        continue;
      }
      const b = d.buckets!;
      expect(b.length, d.name).toBeGreaterThan(3);
      expect(b[0]).toBeGreaterThan(0);
      for (let i = 1; i < b.length; i++) expect(b[i]!, d.name).toBeGreaterThan(b[i - 1]!);
    }
    expect(LLM_HISTOGRAMS.timeToFirstToken.buckets.slice(0, 8)).toEqual([0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1]);
  });

  it('is the only source file that spells a metric name', () => {
    const files = ['src', 'openai-compat', 'bench'].flatMap((dir) => sourceFiles(join(ROOT, dir)));
    const literal = /['"`](nv_|vllm:|conveyor:|conveyor_)[a-z_]+/;
    const offenders = files.filter((f) => !f.endsWith('metric-definitions.ts') && literal.test(readFileSync(f, 'utf8'))).map((f) => relative(ROOT, f));
    expect(offenders).toEqual([]);
  });
});

function sourceFiles(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules' || name === 'results') return [];
    return statSync(path).isDirectory() ? sourceFiles(path) : /\.(ts|mts)$/.test(name) ? [path] : [];
  });
}
