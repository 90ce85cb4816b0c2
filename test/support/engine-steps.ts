// The engine-level property tests' shared ground (engine-step-contract, engine-draft-model): the
// tiny decoder's engine config by pool size, seeded prompts whose equal seeds share a prefix, its
// greedy reference decoded alone on the Optimum graph, and one turn of the engine worker's loop
// with messages delivered at a chosen moment of the step — between steps, as it starts, or a few
// event-loop turns into it (between the runner's calls, where a client disconnect lands).
import type * as ort from 'onnxruntime-node';
import fc from 'fast-check';
import type { StepOutput } from '../../src/contracts/generate.js';
import type { EngineConfig, EngineCore } from '../../src/engine-worker/engine-core.js';
import { greedy } from './decoder.js';

/** One KV block of the tiny decoder: 4 layers × (K, V) × 2 KV heads × block 4 × head_dim 16 × fp32. */
export const TINY_BYTES_PER_BLOCK = 4 * 2 * 2 * 4 * 16 * 4;

/** Prompts with the same seed share their leading tokens, so prefix-cache hits happen. */
export const promptTokens = (seed: number, length: number): number[] => Array.from({ length }, (_, i) => (seed * 7919 + i * 104_729) % 150_000);

export interface TinyEngineOptions {
  readonly modelPath: string;
  readonly maxNumSeqs: number;
  readonly maxNumBatchedTokens: number;
  /** The KV pool, in blocks of 4 positions: a small one makes the scheduler preempt. */
  readonly numBlocks: number;
}

/** The tiny decoder's engine on one CPU thread with prefix caching, context 512. */
export const tinyEngineConfig = ({ modelPath, maxNumSeqs, maxNumBatchedTokens, numBlocks }: TinyEngineOptions): EngineConfig => ({
  modelPath,
  device: 'cpu',
  intraOpNumThreads: 1,
  maxNumSeqs,
  maxNumBatchedTokens,
  maxModelLen: 512,
  blockSize: 4,
  kvCacheBytes: numBlocks * TINY_BYTES_PER_BLOCK,
  enablePrefixCaching: true,
  sampleableVocabSize: 151_669,
});

/** Each seeded prompt's greedy tokens decoding it alone (the Optimum graph, no engine), computed once. */
export class GreedyReferences {
  private readonly cache = new Map<string, number[]>();

  constructor(
    private readonly session: ort.InferenceSession,
    private readonly ortModule: typeof ort,
    private readonly maxTokens: number,
  ) {}

  async of(seed: number, length: number): Promise<number[]> {
    const key = `${seed}:${length}`;
    let tokens = this.cache.get(key);
    if (!tokens) this.cache.set(key, (tokens = await greedy(this.session, this.ortModule, promptTokens(seed, length), this.maxTokens)));
    return tokens;
  }
}

/** When, relative to a step, the test delivers a message to the engine. */
export type Moment = { readonly kind: 'between' } | { readonly kind: 'at-step-start' } | { readonly kind: 'turns-into-step'; readonly turns: number };

export const momentArb = (maxTurns: number): fc.Arbitrary<Moment> =>
  fc.oneof(
    fc.constant({ kind: 'between' as const }),
    fc.constant({ kind: 'at-step-start' as const }),
    fc.integer({ min: 1, max: maxTurns }).map((turns) => ({ kind: 'turns-into-step' as const, turns })),
  );

/** A message for the engine (an add or an abort) and when to deliver it. */
export interface Delivery {
  readonly moment: Moment;
  readonly deliver: () => void;
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * One turn of the engine worker's loop: messages due 'between' go in first; then, with work, a
 * step runs and the others go in at their moment of it (the output is the step's: `stepped`);
 * without work, the others go in at once and the output is the news they made, if any.
 */
export async function stepDelivering(engine: EngineCore, due: readonly Delivery[]): Promise<{ readonly output: StepOutput | null; readonly stepped: boolean; readonly midStep: number }> {
  for (const d of due) if (d.moment.kind === 'between') d.deliver();
  const midStep = due.filter((d) => d.moment.kind !== 'between');
  if (!engine.hasWork()) {
    for (const d of midStep) d.deliver();
    return { output: engine.hasNews() ? engine.flush() : null, stepped: false, midStep: 0 };
  }
  const stepDone = engine.step();
  for (const d of midStep) if (d.moment.kind === 'at-step-start') d.deliver();
  const later = midStep.map(async ({ moment, deliver }) => {
    if (moment.kind !== 'turns-into-step') return;
    for (let t = 0; t < moment.turns; t++) await turn();
    deliver();
  });
  const [output] = await Promise.all([stepDone, ...later]);
  return { output, stepped: true, midStep: midStep.length };
}
