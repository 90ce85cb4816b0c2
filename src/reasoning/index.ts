// Reasoning output on the text side (main thread): each model family's thinking block
// (vLLM's --reasoning-parser names), the split of a finished output into reasoning and content,
// its streaming form, and the count of tokens inside the block.

export {
  deepseekR1,
  isReasoningParserName,
  promptOpensBlock,
  qwen3,
  REASONING_FORMATS,
  splitReasoning,
  type ReasoningFormat,
  type ReasoningParserName,
  type ReasoningPlan,
  type ReasoningSplit,
} from './formats.js';
export { ReasoningStream, type ReasoningDeltas } from './stream.js';
export { ThinkingTokenCounter } from './token-count.js';
