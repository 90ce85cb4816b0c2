// Measures the ONNX Runtime CPU formulations of the int8 convolutions on the bench ResNet, so the
// default in kernels/quantized-conv.ts rests on numbers from this runtime and machine.
// Run: npx tsx models/resnet/measure-int8.ts   (results go into models/resnet/README.md by hand)
//
// Method: one session per candidate, warm-up runs, then rounds that run every candidate once in
// turn (A,B,C,A,B,C…) so drift and neighbours' load hit all candidates alike; medians reported.
// fp32 and fp16 are measured alongside as the baseline the int8 variant has to beat.

import os from 'node:os';
import * as ort from 'onnxruntime-node';
import type { Precision } from '../../kernels/linear.js';
import type { Int8ConvFormulation } from '../../kernels/quantized-conv.js';
import { buildResnet, resnetWeights } from './resnet.js';
import { syntheticImages } from './images.js';

const THREADS = Number(process.env.THREADS ?? 1);
const BATCHES = [1, 8] as const;
const ROUNDS = Number(process.env.ROUNDS ?? 7);

const ALL_CANDIDATES: readonly { name: string; precision: Precision; int8Conv?: Int8ConvFormulation }[] = [
  { name: 'fp32', precision: 'fp32' },
  { name: 'fp16', precision: 'fp16' },
  { name: 'int8 DequantizeLinear→Conv', precision: 'int8', int8Conv: 'qdq-weight' },
  { name: 'int8 DynamicQuantizeLinear→ConvInteger', precision: 'int8', int8Conv: 'conv-integer' },
  { name: 'int8 QLinearConv (static)', precision: 'int8', int8Conv: 'qlinear' },
  { name: 'int8 QDQ static (ORT fuses)', precision: 'int8', int8Conv: 'qdq' },
];

// ONLY=2,4 measures a subset (indices into ALL_CANDIDATES) for a quicker A,B comparison.
const CANDIDATES = process.env.ONLY ? process.env.ONLY.split(',').map((i) => ALL_CANDIDATES[Number(i)]!) : ALL_CANDIDATES;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function timeBatch(sessions: ort.InferenceSession[], batch: number): Promise<number[]> {
  const feeds = { input: new ort.Tensor('float32', syntheticImages(batch, batch), [batch, 3, 224, 224]) };
  for (const s of sessions) await s.run(feeds);
  const samples = sessions.map(() => [] as number[]);
  for (let round = 0; round < ROUNDS; round++) {
    for (let c = 0; c < sessions.length; c++) {
      const t0 = performance.now();
      await sessions[c]!.run(feeds);
      samples[c]!.push(performance.now() - t0);
    }
  }
  return samples.map(median);
}

async function main(): Promise<void> {
  const started = performance.now();
  resnetWeights('bench');
  const sessions: ort.InferenceSession[] = [];
  for (const c of CANDIDATES) {
    const bytes = Buffer.concat(buildResnet({ size: 'bench', precision: c.precision, int8Conv: c.int8Conv }).model.chunks);
    sessions.push(await ort.InferenceSession.create(bytes, { intraOpNumThreads: THREADS, interOpNumThreads: 1, logSeverityLevel: 3 }));
  }
  const rows: string[] = [];
  for (const batch of BATCHES) {
    const medians = await timeBatch(sessions, batch);
    rows.push(`| ${batch} | ${medians.map((m) => m.toFixed(1)).join(' | ')} |`);
    console.error(rows.at(-1));
  }
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  console.log(`onnxruntime-node 1.30, ${cpu}, ${os.cpus().length} cores, intraOpNumThreads ${THREADS}, ${ROUNDS} rounds, ${new Date().toISOString().slice(0, 10)}`);
  console.log('median ms per run() of the bench ResNet (224×224)\n');
  console.log(`| batch | ${CANDIDATES.map((c) => c.name).join(' | ')} |`);
  console.log(`|---|${CANDIDATES.map(() => '---').join('|')}|`);
  console.log(rows.join('\n'));
  console.log(`\ntotal ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

await main();
