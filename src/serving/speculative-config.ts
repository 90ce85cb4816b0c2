// The speculative_config model parameter: vLLM's --speculative-config JSON, of which the n-gram
// (prompt lookup) method is served. Read at load; anything else is refused naming the field.

import type { SpeculativeConfig } from '../contracts/engine-messages.js';
import { invalidArg } from '../errors.js';
import { isObject } from '../vocabulary/json-object.js';

/** vLLM's prompt lookup length when neither bound is given. */
const DEFAULT_PROMPT_LOOKUP = 5;

/**
 * Tokens a step may feed for decoding before checking proposals is not worth it by default: past
 * it, a CPU step is bound by compute rather than by reading the weights, so the checked positions
 * cost about what they might save. disable_by_batch_size defaults to the sequences that fit it.
 */
const SPECULATIVE_STEP_TOKENS = 32;

const FIELDS = ['method', 'num_speculative_tokens', 'prompt_lookup_min', 'prompt_lookup_max', 'disable_by_batch_size'] as const;

/** The parameter's JSON text as the engine's SpeculativeConfig; absent or empty: null (off). */
export function parseSpeculativeConfig(raw: string | undefined): SpeculativeConfig | null {
  if (raw === undefined || raw.trim() === '') return null;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    throw invalidArg(`parameter speculative_config is not JSON: ${(error as Error).message}`);
  }
  if (!isObject(value)) throw invalidArg('parameter speculative_config must be a JSON object');
  for (const key of Object.keys(value)) {
    if (!(FIELDS as readonly string[]).includes(key)) throw invalidArg(`parameter speculative_config: unknown field '${key}' (served: ${FIELDS.join(', ')})`);
  }
  if (value['method'] !== 'ngram') throw invalidArg(`parameter speculative_config: method must be "ngram" (prompt lookup), got ${JSON.stringify(value['method'] ?? null)}`);
  const count = (key: (typeof FIELDS)[number], min: number): number | undefined => {
    const v = value[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min) throw invalidArg(`parameter speculative_config: ${key} must be an integer ≥ ${min}, got ${JSON.stringify(v)}`);
    return v;
  };
  const numSpeculativeTokens = count('num_speculative_tokens', 1);
  if (numSpeculativeTokens === undefined) throw invalidArg('parameter speculative_config: num_speculative_tokens is required');
  const givenMin = count('prompt_lookup_min', 1);
  const givenMax = count('prompt_lookup_max', 1);
  const promptLookupMin = givenMin ?? givenMax ?? DEFAULT_PROMPT_LOOKUP;
  const promptLookupMax = givenMax ?? givenMin ?? DEFAULT_PROMPT_LOOKUP;
  if (promptLookupMin > promptLookupMax) throw invalidArg(`parameter speculative_config: prompt_lookup_min ${promptLookupMin} exceeds prompt_lookup_max ${promptLookupMax}`);
  const disableByBatchSize = count('disable_by_batch_size', 1) ?? Math.max(1, Math.floor(SPECULATIVE_STEP_TOKENS / (numSpeculativeTokens + 1)));
  return { method: 'ngram', numSpeculativeTokens, promptLookupMin, promptLookupMax, disableByBatchSize };
}
