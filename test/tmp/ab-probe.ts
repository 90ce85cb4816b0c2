import { openModelRunner } from '../../src/runners/create-runner.js';
const modelPath = process.env.MODEL ?? '/work/main/models/build/copier/target/converted/onnx/model_paged.segments';
process.env.CONVEYOR_PACK_HUGE = '0';
const small = await openModelRunner({ modelPath, device: 'cpu', intraOpNumThreads: 2, blockSize: 16, kvCacheBytes: 64 << 20 });
process.env.CONVEYOR_PACK_HUGE = '1';
const huge = await openModelRunner({ modelPath, device: 'cpu', intraOpNumThreads: 2, blockSize: 16, kvCacheBytes: 64 << 20 });
const past = Number(process.argv[2] ?? 128);
const blockTable = Array.from({ length: Math.ceil((past + 8) / 16) }, (_, i) => i);
const plan = (count: number) => ({ stepId: 0, releasedRequestIds: [], blocksToCopy: [], numScheduledTokens: count,
  scheduled: [{ requestId: 'x', tokenIds: Array.from({ length: count }, (_, i) => 3 + i), numComputedTokens: past, blockTable, sample: true, isNew: false, numDraftTokens: count - 1 }] });
const rowsList = [1, 2, 3, 5, 8];
const variants = [['old', small, '0'], ['huge', huge, '0'], ['huge+pf', huge, '1']] as const;
const acc: Record<string, number[]> = {};
for (let rep = 0; rep < 60; rep++) {
  for (const rows of rowsList) for (const [name, runner, v] of variants) {
    process.env.CONVEYOR_PREFETCH = v;
    const t = performance.now();
    await runner.executeGreedy!(plan(rows) as any, 64);
    if (rep >= 8) (acc[`${name} r${rows}`] ??= []).push(performance.now() - t);
  }
}
const med = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1]!;
for (const [name] of variants) console.log(name.padEnd(8), rowsList.map((r) => `r${r}=${med(acc[`${name} r${r}`]!).toFixed(2)}`).join(' '), ' ratios', rowsList.map((r) => (med(acc[`${name} r${r}`]!) / med(acc[`${name} r1`]!)).toFixed(2)).join(' '));
process.exit(0);
