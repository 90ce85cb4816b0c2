// Greedy sampling with every processor off: the engine-level tests' base, spread and overridden.
import type { SamplingParams } from '../../src/contracts/generate.js';

export const GREEDY_SAMPLING: SamplingParams = {
  temperature: 0,
  topK: 0,
  topP: 1,
  minP: 0,
  repetitionPenalty: 1,
  frequencyPenalty: 0,
  presencePenalty: 0,
  logitBias: null,
  logprobs: false,
  topLogprobs: 0,
  seed: null,
};
