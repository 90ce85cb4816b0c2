// The engine bench's context sweep on the tiny decoder: a whole workload per (prompt, concurrency)
// on a real EngineCore, its wall time split by the runner's own phase counters. It proves the
// breakdown adds up (phases within the wall, every call counted) and that a longer prompt gathers
// more past, not the numbers.

import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { engineBenchConfig, engineData } from '../../bench/scenarios/engine/config.js';
import { sweepWorkloads } from '../../bench/scenarios/engine/workload-profile.js';
import { DEFAULT_REPOSITORY } from '../../models/default-repository.js';

const MODEL = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1', 'onnx', 'model.onnx');

describe('engine bench --sweep', () => {
  it('profiles each prompt length and concurrency by runner phase', async () => {
    const config = engineBenchConfig({ sweep: '16,200', concurrency: '1,3', output: '4', threads: '1' }, true);
    expect(config.sweep).toEqual([16, 200]);
    const profiles = await sweepWorkloads(config, engineData(config, MODEL, {}));
    expect(profiles.map((p) => [p.promptTokens, p.concurrency])).toEqual([
      [16, 1],
      [16, 3],
      [200, 1],
      [200, 3],
    ]);
    for (const p of profiles) {
      const b = p.breakdown;
      expect(b.ortMs).toBeGreaterThan(0);
      expect(p.ortCalls).toBeGreaterThanOrEqual(p.steps);
      // One step at least per output token (prefill steps come on top).
      expect(p.steps).toBeGreaterThanOrEqual(p.outputTokens);
      const phases = b.gatherMs + b.feedsMs + b.ortMs + b.scatterMs + b.logitsMs;
      expect(phases).toBeLessThanOrEqual(p.wallMs);
      expect(p.otherMs).toBeCloseTo(p.wallMs - phases, 6);
    }
    // The 200-token prompts are chunked (quick budget: 256 tokens a step), so their later chunks and
    // the decode batch they join gather a longer past than the 16-token ones.
    expect(profiles[3]!.breakdown.gatheredPositions).toBeGreaterThan(profiles[1]!.breakdown.gatheredPositions);
  }, 120_000);
});
