// How each model family marks its thinking block, and the reading of a finished output into
// reasoning and content. A block is `<think>…</think>` at the very start of the output (after
// whitespace), or, where the prompt already opened it (DeepSeek-R1's template, Qwen3 templates
// that end with `<think>`), everything up to the first `</think>`. Output with no block is all
// content. The whitespace the model writes around the tags is not part of either text.

/** vLLM's --reasoning-parser names. */
export type ReasoningParserName = 'qwen3' | 'deepseek_r1';

export interface ReasoningFormat {
  readonly name: ReasoningParserName;
  /** The text that opens the block. */
  readonly startTag: string;
  /** The text that closes it. */
  readonly endTag: string;
  /**
   * The output starts inside the block whatever the prompt says: DeepSeek-R1's templates open it,
   * and text before `</think>` is reasoning even when the model writes no `<think>` itself.
   */
  readonly alwaysInside: boolean;
}

/** Qwen3 (and QwQ-style hybrids): a block only where the output or the prompt opens one; enable_thinking false gives none. */
export const qwen3: ReasoningFormat = { name: 'qwen3', startTag: '<think>', endTag: '</think>', alwaysInside: false };

/** DeepSeek-R1: the output begins inside the block; a `<think>` the model repeats is skipped. */
export const deepseekR1: ReasoningFormat = { name: 'deepseek_r1', startTag: '<think>', endTag: '</think>', alwaysInside: true };

export const REASONING_FORMATS: Readonly<Record<ReasoningParserName, ReasoningFormat>> = { qwen3, deepseek_r1: deepseekR1 };

export const isReasoningParserName = (name: string): name is ReasoningParserName => Object.hasOwn(REASONING_FORMATS, name);

/** One request's reading: the model's format, and whether its prompt left the block open. */
export interface ReasoningPlan {
  readonly format: ReasoningFormat;
  /** The output starts inside the block (the prompt opened it, or the format always does). */
  readonly startsInside: boolean;
}

/** Whether a rendered prompt ends inside an open block: its generation prompt ends with the start tag. */
export function promptOpensBlock(format: ReasoningFormat, promptText: string | null): boolean {
  return format.alwaysInside || promptText?.trimEnd().endsWith(format.startTag) === true;
}

export interface ReasoningSplit {
  /** The block's text, trimmed; '' when there is none. */
  readonly reasoning: string;
  /** The answer: everything after the block (leading whitespace dropped), or the whole text when there is no block. */
  readonly content: string;
}

const leadingWhitespace = (text: string): number => text.length - text.trimStart().length;

/** The finished text of one output, read once. */
export function splitReasoning(plan: ReasoningPlan, text: string): ReasoningSplit {
  const { startTag, endTag } = plan.format;
  const afterSpace = leadingWhitespace(text);
  const opened = text.startsWith(startTag, afterSpace);
  if (!opened && !plan.startsInside) return { reasoning: '', content: text };
  const bodyStart = opened ? afterSpace + startTag.length : 0;
  const end = text.indexOf(endTag, bodyStart);
  if (end < 0) return { reasoning: text.slice(bodyStart).trim(), content: '' };
  return { reasoning: text.slice(bodyStart, end).trim(), content: text.slice(end + endTag.length).trimStart() };
}
