// Triton's per-model families over hand-made statistics snapshots: each sample is the snapshot's
// number (durations in whole µs), failures by reason, the batch-size histogram from batch_stats,
// worker liveness, and models appearing and disappearing with the served set.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { FailureReason } from '../../../src/batcher/stats.js';
import type { ModelStatistics, StatisticDuration } from '../../../src/contracts/inference-service.js';
import { histogramSamples } from '../../../src/metrics/snapshot-family.js';
import { registerTritonMetrics, type ModelSnapshotSource } from '../../../src/metrics/triton-collector.js';
import { parseExposition } from './exposition.js';

const d = (count: number, ns: number): StatisticDuration => ({ count, ns });
const batch = (size: number, executions: number) => ({ batch_size: size, compute_input: d(executions, 1), compute_infer: d(executions, 2), compute_output: d(executions, 3) });

function snapshot(name: string, overrides: Partial<ModelStatistics> = {}): ModelStatistics {
  return {
    name,
    version: '1',
    last_inference: 1_700_000_000_000,
    inference_count: 14,
    execution_count: 3,
    inference_stats: {
      success: d(12, 9_876_543),
      fail: d(4, 1_000),
      queue: d(12, 2_000_999),
      compute_input: d(12, 1_500),
      compute_infer: d(12, 7_000_001),
      compute_output: d(12, 999),
      cache_hit: d(0, 0),
      cache_miss: d(0, 0),
    },
    batch_stats: [batch(1, 1), batch(5, 1), batch(8, 1)],
    memory_usage: [],
    ...overrides,
  };
}

async function scrape(models: () => readonly ModelSnapshotSource[]) {
  const registry = new Registry();
  registerTritonMetrics(registry, models);
  return parseExposition(await registry.metrics());
}

const failures: Record<FailureReason, number> = { REJECTED: 2, CANCELED: 1, BACKEND: 0, OTHER: 1 };
const full: ModelSnapshotSource = { statistics: () => snapshot('resnet'), failures: () => failures, pendingRequests: () => 3, workersAlive: () => [true, false] };
const labels = { model: 'resnet', version: '1' };

describe('Triton metrics from statistics snapshots', () => {
  it('reports counts and whole-microsecond durations straight from the snapshot', async () => {
    const m = await scrape(() => [full]);
    expect(m.value('nv_inference_request_success', labels)).toBe(12);
    expect(m.value('nv_inference_count', labels)).toBe(14);
    expect(m.value('nv_inference_exec_count', labels)).toBe(3);
    expect(m.value('nv_inference_pending_request_count', labels)).toBe(3);
    expect(m.value('nv_inference_request_duration_us', labels)).toBe(9876);
    expect(m.value('nv_inference_queue_duration_us', labels)).toBe(2000);
    expect(m.value('nv_inference_compute_input_duration_us', labels)).toBe(1);
    expect(m.value('nv_inference_compute_infer_duration_us', labels)).toBe(7000);
    expect(m.value('nv_inference_compute_output_duration_us', labels)).toBe(0);
    expect(m.types.get('nv_inference_count')).toBe('counter');
    expect(m.types.get('nv_inference_pending_request_count')).toBe('gauge');
  });

  it('labels failures by reason, every reason present', async () => {
    const m = await scrape(() => [full]);
    expect(Object.fromEntries(m.all('nv_inference_request_failure', labels).map((s) => [s.labels.reason, s.value]))).toEqual({ REJECTED: 2, CANCELED: 1, BACKEND: 0, OTHER: 1 });
  });

  it('counts every failure as OTHER for a backend without reasons, and omits the pending gauge it cannot know', async () => {
    const m = await scrape(() => [{ statistics: () => snapshot('llm') }]);
    const llm = { model: 'llm', version: '1' };
    expect(m.value('nv_inference_request_failure', { ...llm, reason: 'OTHER' })).toBe(4);
    expect(m.value('nv_inference_request_failure', { ...llm, reason: 'REJECTED' })).toBe(0);
    expect(m.value('nv_inference_pending_request_count', llm)).toBeUndefined();
    expect(m.all('conveyor_worker_alive', llm)).toEqual([]);
  });

  it('builds the batch-size histogram from batch_stats (one observation per execution)', async () => {
    const m = await scrape(() => [{ statistics: () => snapshot('resnet', { batch_stats: [batch(1, 4), batch(5, 2), batch(8, 1)] }) }]);
    const bucket = (le: string) => m.value('conveyor_inference_batch_size_bucket', { ...labels, le });
    expect([bucket('1'), bucket('2'), bucket('4'), bucket('8'), bucket('16'), bucket('+Inf')]).toEqual([4, 4, 4, 7, 7, 7]);
    expect(m.value('conveyor_inference_batch_size_count', labels)).toBe(7);
    expect(m.value('conveyor_inference_batch_size_sum', labels)).toBe(4 + 10 + 8);
    expect(m.types.get('conveyor_inference_batch_size')).toBe('histogram');
  });

  it('reports each worker as alive or dead', async () => {
    const m = await scrape(() => [full]);
    expect(m.value('conveyor_worker_alive', { ...labels, worker: '0' })).toBe(1);
    expect(m.value('conveyor_worker_alive', { ...labels, worker: '1' })).toBe(0);
  });

  it('counts worker restarts from the supervisor, only for models that are supervised', async () => {
    const supervised: ModelSnapshotSource = { ...full, supervision: () => ({ restarts: 3 }) };
    const m = await scrape(() => [supervised, { statistics: () => snapshot('llm') }]);
    expect(m.value('conveyor_worker_restarts_total', labels)).toBe(3);
    expect(m.types.get('conveyor_worker_restarts_total')).toBe('counter');
    expect(m.all('conveyor_worker_restarts_total', { model: 'llm', version: '1' })).toEqual([]);
  });

  it('reads at scrape time: models come and go with the served set, values follow the snapshot', async () => {
    let served: ModelSnapshotSource[] = [full];
    let count = 14;
    const registry = new Registry();
    const moving: ModelSnapshotSource = { statistics: () => snapshot('bert', { inference_count: count }) };
    registerTritonMetrics(registry, () => served);
    expect(parseExposition(await registry.metrics()).value('nv_inference_count', labels)).toBe(14);
    served = [moving];
    count = 20;
    const after = parseExposition(await registry.metrics());
    expect(after.value('nv_inference_count', labels)).toBeUndefined();
    expect(after.value('nv_inference_count', { model: 'bert', version: '1' })).toBe(20);
    served = [];
    expect(parseExposition(await registry.metrics()).all('nv_inference_count')).toEqual([]);
  });

  it("reads the served set and each model's snapshot once per scrape, and afresh at the next one", async () => {
    let listed = 0;
    let read = 0;
    let success = 12;
    const counted: ModelSnapshotSource = {
      ...full,
      statistics: () => {
        read++;
        return snapshot('resnet', { inference_stats: { ...snapshot('resnet').inference_stats, success: d(success, 0) } });
      },
    };
    const registry = new Registry();
    registerTritonMetrics(registry, () => {
      listed++;
      return [counted];
    });
    const first = parseExposition(await registry.metrics());
    expect({ listed, read }).toEqual({ listed: 1, read: 1 });
    expect(first.value('nv_inference_request_success', labels)).toBe(12);
    success = 13;
    const second = parseExposition(await registry.metrics());
    expect({ listed, read }).toEqual({ listed: 2, read: 2 });
    expect(second.value('nv_inference_request_success', labels)).toBe(13);
    expect(second.value('nv_inference_count', labels)).toBe(14);
  });

  it('histogram samples are cumulative and end with +Inf, sum and count', () => {
    const samples = histogramSamples(
      { m: 'x' },
      [1, 10],
      new Map([
        [0.5, 2],
        [3, 1],
        [50, 1],
      ]),
    );
    expect(samples.map((s) => [s.suffix, s.labels.le, s.value])).toEqual([
      ['_bucket', '1', 2],
      ['_bucket', '10', 3],
      ['_bucket', '+Inf', 4],
      ['_sum', undefined, 54],
      ['_count', undefined, 4],
    ]);
  });
});
