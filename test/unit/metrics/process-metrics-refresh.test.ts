// The process_* and nodejs_* series are read at most once per PROCESS_METRICS_REFRESH_MS, while
// the serving series are read at every scrape: two scrapes a moment apart report the same CPU
// time even though the process spent CPU between them; a scrape past the interval still reports
// the last reading and has a fresh one taken right after it (the next scrape sees it); a scrape
// past PROCESS_METRICS_STALE_MS takes the reading itself.
import { describe, expect, it } from 'vitest';
import { createMetrics, PROCESS_METRICS_REFRESH_MS, PROCESS_METRICS_STALE_MS } from '../../../src/metrics/registry.js';
import { parseExposition } from './exposition.js';

const spin = (ms: number): void => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};

describe('process metrics refresh', () => {
  it('holds process values between readings, reads the serving series every scrape', async () => {
    let listed = 0;
    let now = 0;
    const metrics = createMetrics({
      models: () => {
        listed++;
        return [];
      },
      engineType: 'vllm',
      clock: () => now,
    });
    const scrape = async () => parseExposition(await metrics.registry.metrics());
    const first = await scrape();
    spin(30);
    now += PROCESS_METRICS_REFRESH_MS - 1;
    const second = await scrape();
    // The served models were listed for each scrape (the Triton families read them once per scrape).
    expect(listed).toBe(2);
    expect(second.value('process_cpu_seconds_total', {})).toBe(first.value('process_cpu_seconds_total', {}));
    expect(second.value('nodejs_eventloop_lag_max_seconds', {})).toBe(first.value('nodejs_eventloop_lag_max_seconds', {}));
    now += 1;
    const third = await scrape();
    const cpu = (exposition: typeof first) => exposition.value('process_cpu_seconds_total', {})!;
    // Past the interval: this scrape reports the last reading and queues the next one after itself.
    expect(cpu(third)).toBe(cpu(first));
    await new Promise<void>((done) => setImmediate(done));
    const fourth = await scrape();
    expect(cpu(fourth)).toBeGreaterThan(cpu(first));
    // Past the stale limit the scrape reads them itself.
    spin(30);
    now += PROCESS_METRICS_STALE_MS;
    expect(cpu(await scrape())).toBeGreaterThan(cpu(fourth));
  });
});
