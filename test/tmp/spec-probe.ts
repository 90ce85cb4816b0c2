import { EngineCore } from '../../src/engine-worker/engine-core.js';
import { openModelRunner } from '../../src/runners/create-runner.js';
import type { EngineWorkerData } from '../../src/contracts/engine-messages.js';
import { benchRequest } from '../../bench/scenarios/engine/workload.js';

const modelPath = '/work/main/models/build/copier/target/converted/onnx/model_paged.segments';
const base: EngineWorkerData = { modelPath, device: 'cpu', intraOpNumThreads: 2, maxNumSeqs: 1, maxNumBatchedTokens: 2048, maxModelLen: 4096, blockSize: 16, kvCacheBytes: 256 << 20, enablePrefixCaching: true };
const spec = { ...base, speculative: { method: 'ngram', promptLookupMin: 2, promptLookupMax: 5, numSpeculativeTokens: 4, disableByBatchSize: 6 } } as EngineWorkerData;

const byRows: Record<number, any> = {};
async function open(data: EngineWorkerData) {
  const runner = await openModelRunner(data);
  const timing = { runner: 0, rows: 0 };
  for (const key of ['execute', 'executeGreedy'] as const) {
    const f = (runner as any)[key]?.bind(runner);
    if (!f) continue;
    (runner as any)[key] = async (...a: any[]) => { const t = performance.now(); timing.rows = a[0].numScheduledTokens; const before = JSON.parse(JSON.stringify(runner.stats.total)); try { return await f(...a); } finally { timing.runner += performance.now() - t; const after = runner.stats.total as any; for (const k of Object.keys(after)) { byRows[timing.rows] ??= { n: 0 } as any; (byRows[timing.rows] as any)[k] = ((byRows[timing.rows] as any)[k] ?? 0) + after[k] - (before as any)[k]; } byRows[timing.rows]!.n++; byRows[timing.rows]!.wall = (byRows[timing.rows]!.wall ?? 0) + performance.now() - t; } };
  }
  return { core: EngineCore.create(data, runner, () => {}), timing, runner };
}
const engines = { off: await open(base), on: await open(spec) };
let seed = 7;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % 60 + 3;
const half = Array.from({ length: 300 }, rnd); const prompt = [...half, ...half.slice(0, 20)];
const agg: Record<string, { steps: number; total: number; runner: number; tokens: number }> = { off: { steps: 0, total: 0, runner: 0, tokens: 0 }, on: { steps: 0, total: 0, runner: 0, tokens: 0 } };
for (let rep = 0; rep < 6; rep++) {
  for (const key of ['off', 'on'] as const) {
    const { core, timing } = engines[key];
    core.add(benchRequest(`r${rep}`, prompt, 128));
    let first = true;
    while (core.hasWork()) {
      timing.runner = 0;
      const t = performance.now();
      const out = await core.step();
      const dt = performance.now() - t;
      if (first) { first = false; continue; }
      if (rep === 0) continue;
      const a = agg[key]!;
      a.steps++; a.total += dt; a.runner += timing.runner;
      a.tokens = out.updates[0]?.numOutputTokens ?? a.tokens;
    }
  }
}
for (const [k, a] of Object.entries(agg)) console.log(k, 'steps', a.steps, 'step ms', (a.total / a.steps).toFixed(2), 'runner ms', (a.runner / a.steps).toFixed(2), 'other ms', ((a.total - a.runner) / a.steps).toFixed(3));
const s = (engines.on.runner as any).stats; console.log(JSON.stringify(s).slice(0, 600));
for (const [r, v] of Object.entries(byRows)) console.log('rows', r, Object.entries(v).map(([k, x]) => `${k}=${k === 'n' ? x : ((x as number) / v.n).toFixed(3)}`).join(' '));
process.exit(0);
