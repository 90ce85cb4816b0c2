// The fake model (fake-model.ts) behind the ModelRunner interface, so EngineCore runs its real
// scheduler, KV cache manager and sampler without onnxruntime: each sampled row's logits are
// one-hot at the fake model's next token, which greedy sampling must pick. The fake KV store
// still checks every block table the plan carries. `hold()` keeps the next execute pending until
// the test lets it go, so a message can be delivered mid-step without counting event-loop turns.

import type { StepPlan } from '../../src/contracts/generate.js';
import { emptyBreakdown, type ModelRunner, type RunnerInfo, type RunnerStats, type StepLogits } from '../../src/runners/model-runner.js';
import { FakeRunner, VOCAB } from './fake-model.js';

export class FakeModelRunner implements ModelRunner {
  readonly info: RunnerInfo;
  readonly stats: RunnerStats = { lastStepCalls: 0, lastStepCopyMs: 0, reusedPastCalls: 0, lastStep: emptyBreakdown(), total: emptyBreakdown() };
  readonly plans: StepPlan[] = [];
  released = false;
  private readonly model: FakeRunner;
  private gate: Promise<void> | null = null;

  constructor(numBlocks: number, blockSize = 4) {
    this.model = new FakeRunner(numBlocks, blockSize);
    this.info = { kind: 'past-key-values', shape: { numLayers: 1, numKvHeads: 1, headDim: 1, vocabSize: VOCAB, kvType: 'float32' }, numBlocks, blockSize, device: 'cpu' };
  }

  /** The next execute waits until the returned function is called. */
  hold(): () => void {
    let open!: () => void;
    this.gate = new Promise<void>((resolve) => (open = resolve));
    return open;
  }

  async execute(plan: StepPlan): Promise<StepLogits> {
    if (this.released) throw new Error('execute after release');
    this.plans.push(plan);
    const { sampled } = this.model.execute(plan);
    this.stats.lastStepCalls = 1;
    const gate = this.gate;
    this.gate = null;
    if (gate) await gate;
    return new Map(
      sampled.map((s) => {
        const logits = new Float32Array(VOCAB);
        logits[s.tokenIds[0]!] = 1;
        return [s.requestId, logits];
      }),
    );
  }

  async release(): Promise<void> {
    this.released = true;
  }
}
