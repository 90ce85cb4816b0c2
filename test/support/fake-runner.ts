// The fake model (fake-model.ts) behind the ModelRunner interface, so EngineCore runs its real
// scheduler, KV cache manager and sampler without onnxruntime: each sampled row's logits are
// one-hot at the fake model's next token, which greedy sampling must pick. The fake KV store
// still checks every block table the plan carries. `hold()` keeps the next execute pending until
// the test lets it go, so a message can be delivered mid-step without counting event-loop turns.
// With `greedyHead` it also has executeGreedy (a model's greedy head): the same next tokens, and
// `heads` records which of the two each step used.

import type { StepPlan } from '../../src/contracts/generate.js';
import { emptyBreakdown, type ModelRunner, type RunnerInfo, type RunnerStats, type StepGreedyTokens, type StepLogits } from '../../src/runners/model-runner.js';
import { type FakeModel, FakeRunner, VOCAB } from './fake-model.js';

export class FakeModelRunner implements ModelRunner {
  readonly info: RunnerInfo;
  readonly stats: RunnerStats = { lastStepCalls: 0, lastStepCopyMs: 0, reusedPastCalls: 0, lastStep: emptyBreakdown(), total: emptyBreakdown() };
  readonly plans: StepPlan[] = [];
  /** Which head each step read: 'logits' (execute) or 'greedy' (executeGreedy, with its sampleable bound). */
  readonly heads: string[] = [];
  readonly executeGreedy?: (plan: StepPlan, sampleableVocab: number) => Promise<StepGreedyTokens>;
  released = false;
  private readonly model: FakeRunner;
  private gate: Promise<void> | null = null;

  constructor(numBlocks: number, blockSize = 4, options: { greedyHead?: boolean; model?: FakeModel; kind?: RunnerInfo['kind'] } = {}) {
    this.model = new FakeRunner(numBlocks, blockSize, options.model);
    this.info = { kind: options.kind ?? 'past-key-values', shape: { numLayers: 1, numKvHeads: 1, headDim: 1, vocabSize: VOCAB, kvType: 'float32' }, numBlocks, blockSize, device: 'cpu' };
    if (options.greedyHead) {
      this.executeGreedy = async (plan, sampleableVocab) => {
        this.heads.push(`greedy<${sampleableVocab}`);
        const sampled = await this.run(plan);
        return new Map(sampled.map((s) => [s.requestId, [...s.tokenIds]]));
      };
    }
  }

  /** The next execute waits until the returned function is called. */
  hold(): () => void {
    let open!: () => void;
    this.gate = new Promise<void>((resolve) => (open = resolve));
    return open;
  }

  async execute(plan: StepPlan): Promise<StepLogits> {
    this.heads.push('logits');
    const sampled = await this.run(plan);
    return new Map(
      sampled.map((s) => {
        // One row per token the fake model gave (a checked proposal gets one per position).
        const logits = new Float32Array(VOCAB * s.tokenIds.length);
        s.tokenIds.forEach((token, row) => (logits[row * VOCAB + token] = 1));
        return [s.requestId, logits];
      }),
    );
  }

  private async run(plan: StepPlan) {
    if (this.released) throw new Error('execute after release');
    this.plans.push(plan);
    // The model's greedy token at every sampled position (a checked proposal's included): the engine checks proposals itself.
    const sampled = this.model.forward(plan);
    this.stats.lastStepCalls = 1;
    const gate = this.gate;
    this.gate = null;
    if (gate) await gate;
    return sampled;
  }

  async release(): Promise<void> {
    this.released = true;
  }
}
