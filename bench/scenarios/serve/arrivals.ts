// When requests are sent. At an infinite rate every request is due at once; at a finite rate the
// gaps between arrivals are gamma distributed with shape = burstiness and mean 1/rate (burstiness
// 1 is a Poisson process, below 1 burstier, above 1 more regular), and the arrival times are then
// scaled so the last one lands at exactly N/rate, as vLLM does, so a short run still has the
// requested average rate. A max-concurrency cap holds due requests back until a slot frees; the
// request's clock starts only when it is actually sent.

import { SeededRandom } from '../../../kernels/onnx/random.js';

export interface LoadShape {
  /** Requests per second; Infinity sends everything at t = 0. */
  readonly requestRate: number;
  readonly burstiness: number;
  /** Requests in flight at most; Infinity for no cap. */
  readonly maxConcurrency: number;
  readonly seed: number;
}

/** Uniform in (0, 1): never 0, so logarithms stay finite. */
function openUniform(random: SeededRandom): number {
  return (random.nextUint32() + 0.5) / 4294967296;
}

function standardNormal(random: SeededRandom): number {
  // Box–Muller; one of the pair is enough here.
  return Math.sqrt(-2 * Math.log(openUniform(random))) * Math.cos(2 * Math.PI * openUniform(random));
}

/** Gamma(shape, scale) by Marsaglia and Tsang's squeeze method; shape < 1 through the boost U^(1/shape). */
export function sampleGamma(random: SeededRandom, shape: number, scale: number): number {
  if (!(shape > 0) || !(scale > 0)) throw new Error(`gamma needs shape and scale > 0, got ${shape}, ${scale}`);
  if (shape < 1) return sampleGamma(random, shape + 1, scale) * openUniform(random) ** (1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    const x = standardNormal(random);
    const v = (1 + c * x) ** 3;
    if (v <= 0) continue;
    const u = openUniform(random);
    if (Math.log(u) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v * scale;
  }
}

/** Send times (ms from the start of the run) of `count` requests. */
export function arrivalTimesMs(count: number, shape: Pick<LoadShape, 'requestRate' | 'burstiness' | 'seed'>): number[] {
  if (count === 0) return [];
  if (shape.requestRate === Infinity) return new Array<number>(count).fill(0);
  if (!(shape.requestRate > 0)) throw new Error(`request rate must be > 0, got ${shape.requestRate}`);
  const random = new SeededRandom(shape.seed);
  const scale = 1 / (shape.requestRate * shape.burstiness);
  const times: number[] = [];
  let total = 0;
  for (let i = 0; i < count; i++) times.push((total += sampleGamma(random, shape.burstiness, scale)));
  const factor = count / shape.requestRate / total;
  return times.map((t) => t * factor * 1000);
}

/** A counting semaphore whose waiters are served in arrival order. */
export class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(count: number) {
    this.free = count;
  }

  async acquire(): Promise<void> {
    if (this.free > 0) {
      this.free -= 1;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free += 1;
  }
}

export interface LoadResult<T> {
  readonly outputs: T[];
  /** First send to last completion (ms): the denominator of every throughput. */
  readonly durationMs: number;
}

/**
 * Sends `count` requests on the schedule and cap of `shape`; `send(i)` does request i. Outputs
 * come back in request order.
 */
export async function runLoad<T>(count: number, shape: LoadShape, send: (index: number) => Promise<T>, now: () => number = () => performance.now()): Promise<LoadResult<T>> {
  const times = arrivalTimesMs(count, shape);
  const slots = new Slots(shape.maxConcurrency === Infinity ? count : shape.maxConcurrency);
  const started = now();
  const one = async (index: number): Promise<T> => {
    const wait = started + times[index]! - now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    await slots.acquire();
    try {
      return await send(index);
    } finally {
      slots.release();
    }
  };
  const outputs = await Promise.all(Array.from({ length: count }, (_, i) => one(i)));
  return { outputs, durationMs: now() - started };
}
