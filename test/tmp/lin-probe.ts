import { openModelRunner } from '../../src/runners/create-runner.js';
const modelPath = '/work/main/models/build/copier/target/converted/onnx/model_paged.segments';
const runner: any = await openModelRunner({ modelPath, device: 'cpu', intraOpNumThreads: 2, blockSize: 16, kvCacheBytes: 64 << 20 });
const layers = runner.runner.layers; const ops = layers.ops;
const linears: any[] = [];
for (const s of layers.inner) for (const k of ['o', 'gate', 'up', 'down', 'q', 'k', 'v']) linears.push(s[k].packed);
const x = new Float32Array(8 * 4096).map((_, i) => (i % 17) / 17), y = new Float32Array(8 * 4096);
const rowsList = [1, 2, 3, 5, 8]; const acc: Record<string, number[]> = {};
for (let rep = 0; rep < 40; rep++) for (const rows of rowsList) for (const v of ['0', '1']) {
  process.env.CONVEYOR_LINEAR_VARIANT = v;
  const t = performance.now();
  for (const w of linears) ops.linear(w, x, rows, y, 2);
  if (rep >= 5) (acc[`v${v} r${rows}`] ??= []).push(performance.now() - t);
}
const med = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1]!;
for (const v of ['0', '1']) console.log('v' + v, rowsList.map((r) => `r${r}=${med(acc[`v${v} r${r}`]!).toFixed(2)}`).join(' '));
process.exit(0);
