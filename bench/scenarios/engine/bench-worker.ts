// The worker thread that times what the engine is compared with: the bare forward calls (the
// floor) and the step profile. It runs in a worker, as the engine does, because on
// the bench's main thread every call's fresh output arrays set off collections of a much larger
// heap: measured, a batch-32 decode call there took about twice as long as in a worker.

import { parentPort, workerData } from 'node:worker_threads';
import * as ort from 'onnxruntime-node';
import { SeededRandom, seedFor } from '../../../kernels/onnx/random.js';
import { decoderFeeds, inspectDecoder, type Feeds } from '../forward/feeds.js';
import type { BenchWorkerData, FloorShape, FromBenchWorker, ToBenchWorker } from './bench-worker-client.js';
import { profileSteps } from './profile.js';
import { sweepWorkloads } from './workload-profile.js';

const port = parentPort!;
const data = workerData as BenchWorkerData;
const post = (message: FromBenchWorker): void => port.postMessage(message);
let session: ort.InferenceSession | undefined;
const feeds = new Map<string, Feeds>();

async function prepareFloor(shapes: readonly FloorShape[]): Promise<void> {
  session ??= await ort.InferenceSession.create(data.modelPath, {
    intraOpNumThreads: data.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    logSeverityLevel: 3,
  });
  const layout = inspectDecoder(session);
  for (const shape of shapes) {
    feeds.set(shape.point, decoderFeeds(layout, shape, new SeededRandom(seedFor(data.seed, `floor-${shape.point}`))));
  }
}

/** Each call timed on its own, so the caller can take the median call. */
async function runFloor(point: string, calls: number): Promise<number[]> {
  const input = feeds.get(point);
  if (!session || !input) throw new Error(`floor shape '${point}' was not prepared`);
  const times: number[] = [];
  for (let i = 0; i < calls; i++) {
    const started = performance.now();
    await session.run(input);
    times.push(performance.now() - started);
  }
  return times;
}

async function handle(message: ToBenchWorker): Promise<void> {
  try {
    switch (message.type) {
      case 'prepare-floor':
        await prepareFloor(message.shapes);
        return post({ type: 'done', id: message.id });
      case 'floor':
        return post({ type: 'floor', id: message.id, times: await runFloor(message.point, message.calls) });
      case 'profile':
        return post({
          type: 'profile',
          id: message.id,
          profile: message.config.profile ? await profileSteps(message.config, message.engine) : [],
          workloads: await sweepWorkloads(message.config, message.engine),
        });
      case 'close':
        await session?.release();
        return port.close();
    }
  } catch (error) {
    if (message.type !== 'close') post({ type: 'error', id: message.id, message: error instanceof Error ? error.message : String(error) });
  }
}

// One message at a time, in order: a timing must never overlap another.
let queue = Promise.resolve();
port.on('message', (message: ToBenchWorker) => {
  queue = queue.then(() => handle(message));
});
