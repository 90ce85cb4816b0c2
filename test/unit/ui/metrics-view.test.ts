import { describe, expect, it } from 'vitest';
import type { MetricFamily } from '../../../src/contracts/ui-status.js';
import { bucketQuantile, dashboardPoint, type Status } from '../../../ui/src/metrics-view.js';

const family = (name: string, samples: [string, Record<string, string | number>, number][]): MetricFamily => ({
  name,
  type: 'x',
  samples: samples.map(([sample, labels, value]) => ({ name: sample, labels, value })),
});

const ttft = (counts: [string, number][]) =>
  family(
    'conveyor:time_to_first_token_seconds',
    counts.map(([le, value]) => ['conveyor:time_to_first_token_seconds_bucket', { le, model_name: 'm' }, value]),
  );

function status(time_ms: number, tokens: number, ttftCounts: [string, number][], batch: { sum: number; count: number }, queue: { us: number; ok: number }): Status {
  return {
    time_ms,
    errors: [],
    metrics: [
      family('conveyor:generation_tokens_total', [['conveyor:generation_tokens_total', { model_name: 'm' }, tokens]]),
      family('conveyor:num_requests_running', [
        ['conveyor:num_requests_running', { model_name: 'm' }, 2],
        ['conveyor:num_requests_running', { model_name: 'n' }, 1],
      ]),
      family('conveyor:kv_cache_usage_perc', [
        ['conveyor:kv_cache_usage_perc', { model_name: 'm' }, 0.25],
        ['conveyor:kv_cache_usage_perc', { model_name: 'n' }, 0.5],
      ]),
      family('conveyor:prefix_cache_queries_total', [['conveyor:prefix_cache_queries_total', { model_name: 'm' }, tokens * 2]]),
      family('conveyor:prefix_cache_hits_total', [['conveyor:prefix_cache_hits_total', { model_name: 'm' }, tokens]]),
      ttft(ttftCounts),
      family('conveyor_inference_batch_size', [
        ['conveyor_inference_batch_size_sum', { model: 'bert', version: '1' }, batch.sum],
        ['conveyor_inference_batch_size_count', { model: 'bert', version: '1' }, batch.count],
      ]),
      family('nv_inference_queue_duration_us', [
        ['nv_inference_queue_duration_us', { model: 'bert', version: '1' }, queue.us],
        ['nv_inference_queue_duration_us', { model: 'm', version: '1' }, queue.us],
      ]),
      family('nv_inference_request_success', [
        ['nv_inference_request_success', { model: 'bert', version: '1' }, queue.ok],
        ['nv_inference_request_success', { model: 'm', version: '1' }, queue.ok],
      ]),
      family('nodejs_eventloop_lag_p99_seconds', [['nodejs_eventloop_lag_p99_seconds', {}, 0.012]]),
    ],
  };
}

describe('bucketQuantile', () => {
  it('interpolates inside the bucket the rank falls in, as histogram_quantile does', () => {
    const buckets: [number, number][] = [
      [0.1, 10],
      [0.2, 30],
      [0.5, 40],
      [Number.POSITIVE_INFINITY, 40],
    ];
    expect(bucketQuantile(buckets, 0.5)).toBeCloseTo(0.15);
    expect(bucketQuantile(buckets, 0.25)).toBeCloseTo(0.1);
    expect(bucketQuantile(buckets, 0.95)).toBeCloseTo(0.2 + (0.3 * (38 - 30)) / 10);
  });

  it('answers the largest finite bound for a rank in +Inf, and null for an empty histogram', () => {
    expect(
      bucketQuantile(
        [
          [1, 1],
          [Number.POSITIVE_INFINITY, 10],
        ],
        0.9,
      ),
    ).toBe(1);
    expect(bucketQuantile([[Number.POSITIVE_INFINITY, 0]], 0.5)).toBeNull();
    expect(bucketQuantile([], 0.5)).toBeNull();
  });
});

describe('dashboardPoint', () => {
  const before = status(
    1000,
    100,
    [
      ['0.01', 0],
      ['0.1', 2],
      ['+Inf', 2],
    ],
    { sum: 10, count: 5 },
    { us: 1000, ok: 1 },
  );
  const after = status(
    3000,
    300,
    [
      ['0.01', 0],
      ['0.1', 6],
      ['+Inf', 6],
    ],
    { sum: 40, count: 8 },
    { us: 9000, ok: 5 },
  );

  it('turns counter differences over the interval into rates and means (batcher charts leave the LLMs out)', () => {
    const point = dashboardPoint(before, after);
    expect(point.outputTokensPerSec).toBe(100);
    expect(point.prefixHitPercent).toBe(50);
    expect(point.batchSize).toEqual({ bert: 10 });
    expect(point.queueMs).toEqual({ bert: 2 });
  });

  it('reads gauges as they are now: summed requests, the fullest KV cache, event-loop lag in ms', () => {
    const point = dashboardPoint(before, after);
    expect([point.running, point.waiting, point.kvUsagePercent, point.eventLoopLagP99Ms]).toEqual([3, 0, 50, 12]);
  });

  it('takes percentiles of the interval only: the buckets it added', () => {
    // 4 new requests, all in (0.01, 0.1]: p50 is the middle of that bucket.
    expect(dashboardPoint(before, after).ttftMs.p50).toBeCloseTo(55);
    expect(dashboardPoint(after, after).ttftMs).toEqual({ p50: null, p95: null });
  });

  it('has no ratio where the denominator did not move, and treats a counter that fell (a reload) as restarted', () => {
    const quiet = dashboardPoint(after, after);
    expect(quiet.batchSize).toEqual({ bert: null });
    expect(quiet.prefixHitPercent).toBeNull();
    expect(quiet.outputTokensPerSec).toBe(0);
    const reloaded = status(5000, 40, [['+Inf', 0]], { sum: 4, count: 2 }, { us: 0, ok: 0 });
    expect(dashboardPoint(after, reloaded).outputTokensPerSec).toBe(20);
    expect(dashboardPoint(after, reloaded).batchSize).toEqual({ bert: 2 });
  });

  it('plots speculative decoding as proposed and accepted tokens per verify step over the interval', () => {
    const spec = (time_ms: number, drafts: number, proposed: number, accepted: number): Status => ({
      time_ms,
      errors: [],
      metrics: [
        family('conveyor:spec_decode_num_drafts_total', [['conveyor:spec_decode_num_drafts_total', { model_name: 'm' }, drafts]]),
        family('conveyor:spec_decode_num_draft_tokens_total', [['conveyor:spec_decode_num_draft_tokens_total', { model_name: 'm' }, proposed]]),
        family('conveyor:spec_decode_num_accepted_tokens_total', [['conveyor:spec_decode_num_accepted_tokens_total', { model_name: 'm' }, accepted]]),
      ],
    });
    // 10 more checks of 40 more proposed tokens, 15 of them accepted.
    expect(dashboardPoint(spec(1000, 5, 20, 6), spec(2000, 15, 60, 21)).speculation).toEqual({ proposedPerDraft: 4, acceptedPerDraft: 1.5 });
    expect(dashboardPoint(spec(1000, 5, 20, 6), spec(2000, 5, 20, 6)).speculation).toEqual({ proposedPerDraft: null, acceptedPerDraft: null });
  });
});
