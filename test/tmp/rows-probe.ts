import { openModelRunner } from '../../src/runners/create-runner.js';
const modelPath = '/work/main/models/build/copier/target/converted/onnx/model_paged.segments';
const runner = await openModelRunner({ modelPath, device: 'cpu', intraOpNumThreads: 2, blockSize: 16, kvCacheBytes: 64 << 20 });
console.log(Object.keys(runner)); const ops = ((runner as any).layers ?? (runner as any).inner?.layers ?? (runner as any).runner?.layers).ops; let curRows = 0; const opT: Record<string, number> = {};
for (const name of ['linear', 'rmsNorm', 'addRmsNorm', 'rope', 'gatedActivation']) { const f = ops[name].bind(ops); ops[name] = (...a: any[]) => { const t = performance.now(); const r = f(...a); opT[`${curRows}:${name}`] = (opT[`${curRows}:${name}`] ?? 0) + performance.now() - t; return r; }; }
const past = Number(process.argv[2] ?? 128);
const blockTable = Array.from({ length: Math.ceil((past + 8) / 16) }, (_, i) => i);
const plan = (count: number) => ({ stepId: 0, releasedRequestIds: [], blocksToCopy: [], numScheduledTokens: count,
  scheduled: [{ requestId: 'x', tokenIds: Array.from({ length: count }, (_, i) => 3 + i), numComputedTokens: past, blockTable, sample: true, isNew: false, numDraftTokens: count - 1 }] });
const rowsList = [1, 2, 3, 5, 8];
const acc: Record<number, Record<string, number[]>> = {};
for (let rep = 0; rep < 80; rep++) {
  for (const rows of rowsList) {
    curRows = rows; const before = { ...(runner.stats as any).total };
    const t = performance.now();
    await runner.executeGreedy!(plan(rows) as any, 64);
    const wall = performance.now() - t;
    if (rep < 10) continue;
    const after = (runner.stats as any).total;
    acc[rows] ??= {};
    for (const k of ['ortMs', 'layersMs', 'attentionMs']) (acc[rows]![k] ??= []).push(after[k] - before[k]);
    (acc[rows]!['wall'] ??= []).push(wall);
  }
}
const med = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1]!;
for (const rows of rowsList) console.log('rows', rows, Object.entries(acc[rows]!).map(([k, v]) => `${k}=${med(v).toFixed(2)}`).join(' '));
for (const [k, v] of Object.entries(opT)) console.log(k, (v / 80).toFixed(3));
process.exit(0);
