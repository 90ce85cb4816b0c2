import { EngineClient } from '../../src/engine-client/engine-client.js';
import type { EngineWorkerData } from '../../src/contracts/engine-messages.js';
import { benchRequest } from '../../bench/scenarios/engine/workload.js';
const modelPath = '/work/main/models/build/copier/target/converted/onnx/model_paged.segments';
const base: EngineWorkerData = { modelPath, device: 'cpu', intraOpNumThreads: 2, maxNumSeqs: 32, maxNumBatchedTokens: 2048, maxModelLen: 4096, blockSize: 16, kvCacheBytes: 512 << 20, enablePrefixCaching: true };
const spec = { ...base, speculative: { method: 'ngram', promptLookupMin: 2, promptLookupMax: 5, numSpeculativeTokens: 4, disableByBatchSize: 6 } } as EngineWorkerData;
const engines = { off: await EngineClient.start(base, () => {}), on: await EngineClient.start(spec, () => {}) };
let seed = 7;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % 60 + 3;
const half = Array.from({ length: 300 }, rnd); const prompt = [...half, ...half.slice(0, 20)];
const res: Record<string, { wall: number[]; gaps: number[]; steps: number }> = { off: { wall: [], gaps: [], steps: 0 }, on: { wall: [], gaps: [], steps: 0 } };
for (let rep = 0; rep < 6; rep++) for (const key of ['off', 'on'] as const) {
  const engine = engines[key];
  const times: number[] = [];
  const stop = engine.onStep((o) => { times.push(o.timeMs); });
  const t = performance.now();
  for await (const _ of engine.submit(benchRequest(`r${rep}`, prompt, 128))) { /* */ }
  const wall = performance.now() - t;
  stop();
  if (rep === 0) continue;
  res[key]!.wall.push(wall);
  for (let i = 2; i < times.length; i++) res[key]!.gaps.push(times[i]! - times[i - 1]!);
  res[key]!.steps += times.length;
}
const med = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1]!;
for (const [k, r] of Object.entries(res)) console.log(k, 'pct', [0.1, 0.25, 0.5, 0.75, 0.9, 0.97, 1].map((q) => [...r.gaps].sort((a, b) => a - b)[Math.min(r.gaps.length - 1, Math.floor(q * r.gaps.length))]!.toFixed(1)).join('/'), 'wall med', med(r.wall).toFixed(1), 'steps/req', (r.steps / r.wall.length).toFixed(1), 'gap med', med(r.gaps).toFixed(2), 'gap mean', (r.gaps.reduce((a, b) => a + b, 0) / r.gaps.length).toFixed(2));
await engines.off.close?.(); await engines.on.close?.();
process.exit(0);
