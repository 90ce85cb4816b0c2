// Prompt logprobs (GenerateRequest.promptLogprobs), computed by the engine from the logits of
// the prefill: the row at prompt position p is the model's distribution for the token at p + 1.
// The scheduler marks such a request's chunks `allLogits` (and skips the prefix cache for it)
// until its first token; each chunk's rows fill that request's entries here, and the list goes
// out with the request's first update. A recompute after preemption rewrites the same entries.

import type { GenerateRequest, PromptTokenLogprob, SequenceUpdate, StepOutput, StepPlan } from '../contracts/generate.js';
import type { StepLogits } from '../runners/model-runner.js';
import { LogprobTable, tokenLogprobIn } from '../sampler/logprobs.js';

export class PromptLogprobs {
  private readonly pending = new Map<string, (PromptTokenLogprob | null)[]>();
  private readonly table = new LogprobTable();

  constructor(
    private readonly vocabSize: number,
    /** Ids at or above this are never reported (the sampler's sampleableVocabSize). */
    private readonly sampleable: number,
  ) {}

  /** Reads the prompt positions of the plan's `allLogits` rows; call before sampling overwrites any row. */
  collect(plan: StepPlan, logits: StepLogits, requestOf: (id: string) => GenerateRequest | undefined): void {
    const v = this.vocabSize;
    const n = Math.min(this.sampleable, v);
    for (const entry of plan.scheduled) {
      const rows = entry.allLogits ? logits.get(entry.requestId) : undefined;
      const request = requestOf(entry.requestId);
      if (!rows || !request) continue;
      const prompt = request.promptTokenIds;
      let list = this.pending.get(entry.requestId);
      if (!list) {
        list = new Array<PromptTokenLogprob | null>(prompt.length).fill(null);
        this.pending.set(entry.requestId, list);
      }
      for (let k = 0; k < entry.tokenIds.length; k++) {
        const target = entry.numComputedTokens + k + 1;
        if (target >= prompt.length) break;
        list[target] = tokenLogprobIn(rows.subarray(k * v, (k + 1) * v), n, prompt[target]!, request.promptLogprobs ?? 0, this.table);
      }
    }
  }

  /** Puts each list on its request's first update with tokens; forgets requests that ended without one. */
  attach(output: StepOutput): StepOutput {
    if (this.pending.size === 0) return output;
    let changed = false;
    const updates = output.updates.map((update): SequenceUpdate => {
      const list = this.pending.get(update.requestId);
      if (!list) return update;
      if (update.newTokenIds.length === 0 && update.finishReason === null) return update;
      this.pending.delete(update.requestId);
      if (update.newTokenIds.length === 0) return update;
      changed = true;
      return { ...update, promptLogprobs: list };
    });
    return changed ? { ...output, updates } : output;
  }
}
