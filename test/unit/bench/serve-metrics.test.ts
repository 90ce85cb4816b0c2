// The serve benchmark's numbers against timelines worked out by hand: per-request timing from
// stream events (what counts as the first token, what the usage chunk changes), and the run's
// aggregates with vLLM's definitions.
import { describe, expect, it } from 'vitest';
import { StreamTrace, type RequestOutput } from '../../../bench/scenarios/serve/client.js';
import { calculateMetrics, distribution, maxConcurrent, maxTokensPerSecond } from '../../../bench/scenarios/serve/metrics.js';

const text = (t: string) => JSON.stringify({ id: 'c', object: 'text_completion', choices: [{ index: 0, text: t, finish_reason: null }] });
const usage = (prompt: number, completion: number) => JSON.stringify({ id: 'c', choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } });

/** A request's output from (ms, payload) events, as the client would record them. */
function traced(startMs: number, promptLen: number, events: readonly [number, string][]): RequestOutput {
  const trace = new StreamTrace(startMs, promptLen);
  for (const [at, data] of events) expect(trace.event(data, at)).toBeUndefined();
  return trace.finished();
}

// A: start 0, tokens at 100, 150, 250, 300; usage 10 + 4.
// B: start 50, events at 250 and 300, but usage says 3 tokens (one event carried two); usage at 900.
// D: start 100, a single token at 400; usage 30 + 1.
// C: failed with HTTP 500. The run took 500 ms.
const A = traced(0, 99, [
  [100, text('a')],
  [150, text('b')],
  [250, text('c')],
  [300, text('d')],
  [310, usage(10, 4)],
]);
const B = traced(50, 20, [
  [250, text('')],
  [300, text('xy')],
  [900, usage(20, 3)],
]);
const D = traced(100, 30, [
  [400, text('z')],
  [401, usage(30, 1)],
]);
const C: RequestOutput = new StreamTrace(60, 40).failed('HTTP 500: boom');
const RUN = [A, B, C, D];

describe('per-request timing', () => {
  it('takes TTFT from the first event with choices (even an empty text), gaps after it, and ends E2E at the last token event', () => {
    expect(A).toMatchObject({ success: true, ttftMs: 100, itlMs: [50, 100, 50], latencyMs: 300, outputTokens: 4, promptTokens: 10, generatedText: 'abcd' });
    // The usage chunk at 900 ms neither adds a gap nor stretches the latency.
    expect(B).toMatchObject({ success: true, ttftMs: 200, itlMs: [50], latencyMs: 250, outputTokens: 3, promptTokens: 20 });
  });

  it('fails a stream with no token, an error payload, or malformed JSON', () => {
    const empty = new StreamTrace(0, 5);
    expect(empty.event(usage(5, 0), 10)).toBeUndefined();
    expect(empty.finished()).toMatchObject({ success: false, error: 'the stream ended before any token' });
    expect(new StreamTrace(0, 5).event(JSON.stringify({ error: { message: 'overloaded' } }), 5)).toBe('stream error: overloaded');
    expect(new StreamTrace(0, 5).event('{"choices": [', 5)).toMatch(/^malformed event/);
  });

  it('keeps the dataset prompt length when the server sends no usage', () => {
    const output = traced(0, 17, [
      [10, text('a')],
      [20, text('b')],
    ]);
    expect(output).toMatchObject({ outputTokens: null, promptTokens: 17 });
  });
});

describe('calculateMetrics', () => {
  const m = calculateMetrics(RUN, 500);

  it('counts completed and failed requests and tokens of completed ones only', () => {
    expect(m).toMatchObject({ completed: 3, failed: 1, firstError: 'HTTP 500: boom', durationS: 0.5, totalInputTokens: 60, totalOutputTokens: 8 });
  });

  it('divides by the run duration', () => {
    expect(m.requestThroughput).toBeCloseTo(6, 12);
    expect(m.outputThroughput).toBeCloseTo(16, 12);
    expect(m.totalTokenThroughput).toBeCloseTo(136, 12);
    expect(m.requestGoodput).toBeNull();
  });

  it('TTFT over completed requests: [100, 200, 300]', () => {
    expect(m.ttftMs.n).toBe(3);
    expect(m.ttftMs.mean).toBeCloseTo(200, 12);
    expect(m.ttftMs.median).toBe(200);
    expect(m.ttftMs.std).toBeCloseTo(Math.sqrt(20_000 / 3), 9); // population: (100² + 0 + 100²) / 3
    expect(m.ttftMs.p90).toBeCloseTo(280, 9); // rank 1.8
    expect(m.ttftMs.p99).toBeCloseTo(298, 9); // rank 1.98
  });

  it('TPOT = (E2E − TTFT) / (output − 1), only for output > 1: A 200/3, B 50/2', () => {
    expect(m.tpotMs.n).toBe(2);
    expect(m.tpotMs.mean).toBeCloseTo((200 / 3 + 25) / 2, 9);
    expect(m.tpotMs.p99).toBeCloseTo(25 + 0.99 * (200 / 3 - 25), 9);
  });

  it('ITL is every gap of every request: [50, 100, 50, 50]', () => {
    expect(m.itlMs).toMatchObject({ n: 4, mean: 62.5, median: 50 });
    expect(m.itlMs.p90).toBeCloseTo(85, 9); // rank 2.7 between 50 and 100
    expect(m.itlMs.p99).toBeCloseTo(98.5, 9);
  });

  it('E2E: [300, 250, 300]', () => {
    expect(m.e2elMs.mean).toBeCloseTo(850 / 3, 9);
    expect(m.e2elMs.median).toBe(300);
  });

  it('peaks: three requests overlap at 100 ms; seven token events in the first second', () => {
    expect(m.maxConcurrentRequests).toBe(3);
    expect(m.maxOutputTokensPerS).toBe(7);
  });

  it('goodput counts requests meeting every SLO given; a one-token request has TPOT 0', () => {
    // ttft ≤ 250 and tpot ≤ 50: A fails TPOT (66.7), D fails TTFT (300), B passes.
    const both = calculateMetrics(RUN, 500, { slo: { ttftMs: 250, tpotMs: 50 } });
    expect(both.goodRequests).toBe(1);
    expect(both.requestGoodput).toBeCloseTo(2, 12);
    // tpot ≤ 30 alone: B (25) and D (0) pass.
    expect(calculateMetrics(RUN, 500, { slo: { tpotMs: 30 } }).goodRequests).toBe(2);
    // e2el ≤ 299: only B (250).
    expect(calculateMetrics(RUN, 500, { slo: { e2elMs: 299 } }).goodRequests).toBe(1);
  });

  it('without usage, counts output tokens by re-tokenizing the text, else one per event', () => {
    const noUsage = traced(0, 5, [
      [10, text('ab')],
      [30, text('cd')],
      [40, text('e')],
    ]);
    expect(calculateMetrics([noUsage], 1000).totalOutputTokens).toBe(3);
    const byChars = calculateMetrics([noUsage], 1000, { countTokens: (t) => t.length });
    expect(byChars.totalOutputTokens).toBe(5);
    expect(byChars.tpotMs.mean).toBeCloseTo((40 - 10) / 4, 12);
  });

  it('reports zeros with n = 0 when nothing completed, as vLLM does', () => {
    const none = calculateMetrics([C], 500);
    expect(none).toMatchObject({ completed: 0, failed: 1, outputThroughput: 0, maxConcurrentRequests: 0, maxOutputTokensPerS: 0 });
    expect(none.ttftMs).toEqual({ n: 0, mean: 0, median: 0, std: 0, p90: 0, p99: 0 });
  });
});

describe('peaks and distributions', () => {
  it('an end and a start at the same instant do not overlap', () => {
    const at = (startMs: number, latencyMs: number) => ({ ...A, startMs, latencyMs });
    expect(maxConcurrent([at(0, 100), at(100, 100), at(200, 50)])).toBe(1);
    expect(maxConcurrent([at(0, 100), at(99, 100), at(150, 100)])).toBe(2);
  });

  it('buckets token events by whole seconds from the earliest start', () => {
    const slow = { ...A, startMs: 0, ttftMs: 900, itlMs: [50, 50, 50, 2000] };
    // Events at 900, 950 | 1000, 1050 | 3050.
    expect(maxTokensPerSecond([slow])).toBe(2);
  });

  it('distribution of one value has no spread', () => {
    expect(distribution([7])).toEqual({ n: 1, mean: 7, median: 7, std: 0, p90: 7, p99: 7 });
  });
});
