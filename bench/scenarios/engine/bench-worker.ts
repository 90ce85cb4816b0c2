// The worker thread that times what the engine is compared with: the bare forward calls (the
// floor) and the step profile. It runs in a worker, as the engine does, because on
// the bench's main thread every call's fresh output arrays set off collections of a much larger
// heap: measured, a batch-32 decode call there took about twice as long as in a worker.

import { parentPort, workerData } from 'node:worker_threads';
import * as ort from 'onnxruntime-node';
import { SeededRandom, seedFor } from '../../../kernels/onnx/random.js';
import { decoderFeeds, inspectDecoder, type Feeds, type StepShape } from '../forward/feeds.js';
import type { BenchWorkerData, FloorShape, FromBenchWorker, ToBenchWorker } from './bench-worker-client.js';
import { profileSteps } from './profile.js';
import { forwardFloor, profileWorkload } from './workload-profile.js';
import { medianOf } from './workload.js';

const port = parentPort!;
const data = workerData as BenchWorkerData;
const post = (message: FromBenchWorker): void => port.postMessage(message);
/** Floor sessions by model file: the run's model, and in a sweep over several precisions each variant's own. */
const sessions = new Map<string, ort.InferenceSession>();
const feeds = new Map<string, Feeds>();

const openFloor = (modelPath: string): Promise<ort.InferenceSession> =>
  ort.InferenceSession.create(modelPath, { intraOpNumThreads: data.threads, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all', logSeverityLevel: 3 });

async function floorSession(modelPath = data.modelPath): Promise<ort.InferenceSession> {
  const opened = sessions.get(modelPath) ?? (await openFloor(modelPath));
  sessions.set(modelPath, opened);
  return opened;
}

async function prepareFloor(shapes: readonly FloorShape[]): Promise<void> {
  const layout = inspectDecoder(await floorSession());
  for (const shape of shapes) {
    feeds.set(shape.point, decoderFeeds(layout, shape, new SeededRandom(seedFor(data.seed, `floor-${shape.point}`))));
  }
}

/** The sweep's floor: the median of a few calls of one shape, after one untimed call (fresh feeds; nothing kept). */
async function timeForward(modelPath: string, shape: StepShape): Promise<number> {
  const floor = await floorSession(modelPath);
  const input = decoderFeeds(inspectDecoder(floor), shape, new SeededRandom(seedFor(data.seed, `sweep-${shape.batch}-${shape.past}-${shape.seq}`)));
  await floor.run(input);
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const started = performance.now();
    await floor.run(input);
    times.push(performance.now() - started);
  }
  return medianOf(times);
}

/** Each call timed on its own, so the caller can take the median call. */
async function runFloor(point: string, calls: number): Promise<number[]> {
  const session = sessions.get(data.modelPath);
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
        return post({ type: 'profile', id: message.id, profile: await profileSteps(message.config, message.engine) });
      case 'workload':
        return post({ type: 'workload', id: message.id, workload: await profileWorkload(message.engine, message.concurrency, message.promptTokens, message.outputTokens) });
      case 'forward-floor':
        return post({ type: 'forward-floor', id: message.id, floor: await forwardFloor(message.config, message.concurrency, message.promptTokens, (shape) => timeForward(message.modelPath, shape)) });
      case 'close':
        await Promise.all([...sessions.values()].map((opened) => opened.release()));
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
