// Completions' `suffix` (fill-in-the-middle): the prompt is the text before the gap, the suffix
// the text after it, and the model writes the middle. A model trained for it has three special
// tokens that frame the two (prefix-suffix-middle order); which spelling it uses is read from its
// tokenizer. A model with none cannot honour `suffix`: a 400 that names the model and the field.

import { invalidArg } from '../src/errors.js';

export interface FimTokens {
  readonly prefix: string;
  readonly suffix: string;
  readonly middle: string;
}

/** The spellings in use, PSM order: Qwen2.5-Coder / Qwen3, StarCoder / SantaCoder, DeepSeek-Coder. */
export const FIM_STYLES: readonly FimTokens[] = [
  { prefix: '<|fim_prefix|>', suffix: '<|fim_suffix|>', middle: '<|fim_middle|>' },
  { prefix: '<fim_prefix>', suffix: '<fim_suffix>', middle: '<fim_middle>' },
  { prefix: '<｜fim▁begin｜>', suffix: '<｜fim▁hole｜>', middle: '<｜fim▁end｜>' },
];

/** The first style whose three tokens the vocabulary holds, or null. */
export function fimTokensOf(hasToken: (token: string) => boolean): FimTokens | null {
  return FIM_STYLES.find((style) => hasToken(style.prefix) && hasToken(style.suffix) && hasToken(style.middle)) ?? null;
}

/** The `suffix` field: null when absent or empty (no gap to fill), else the text after the gap. */
export function requestedSuffix(value: unknown): string | null {
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string') throw invalidArg('suffix must be a string', 'suffix');
  return value;
}

/** The model's FIM tokens, or the 400 for a model without them. */
export function requireFim(model: string, hasToken: (token: string) => boolean): FimTokens {
  const tokens = fimTokensOf(hasToken);
  if (tokens === null) {
    const known = FIM_STYLES.map((s) => s.prefix).join(', ');
    throw invalidArg(`model '${model}' has no fill-in-the-middle tokens (its tokenizer has none of ${known}), so it cannot complete with suffix`, 'suffix');
  }
  return tokens;
}

/** The prompt a FIM model completes: prefix, suffix, then the middle it is to write. */
export function fimPrompt(tokens: FimTokens, prefix: string, suffix: string): string {
  return `${tokens.prefix}${prefix}${tokens.suffix}${suffix}${tokens.middle}`;
}
