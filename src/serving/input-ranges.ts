// Range checks for inputs whose values index one of the model's tables (token ids into the
// vocabulary, token types, positions) and for sequence length against the position table. The
// runtime refuses such values for the whole stacked batch, so they are checked per request
// before batching. Sizes come from the version directory's Hugging Face config.json, which
// every encoder export (and Conveyor's own bert builder) writes beside the ONNX files.

import type { ModelConfig } from '../contracts/model-config.js';
import type { Tensor } from '../contracts/tensors.js';
import { invalidArg } from '../errors.js';

/** Inputs whose values index a table, and the config.json key that sizes it. */
const INDEXED_INPUTS = [
  { input: 'input_ids', sizeKey: 'vocab_size', table: 'vocabulary' },
  { input: 'token_type_ids', sizeKey: 'type_vocab_size', table: 'token type vocabulary' },
  { input: 'position_ids', sizeKey: 'max_position_embeddings', table: 'position table' },
] as const;

/** Inputs whose last axis is the sequence, and the config.json key bounding its length. */
const SEQUENCE_INPUTS = ['input_ids', 'attention_mask', 'token_type_ids', 'position_ids'] as const;
const SEQUENCE_KEY = 'max_position_embeddings';

export interface IndexedInput {
  readonly input: string;
  /** Valid values are 0..size − 1. */
  readonly size: number;
  readonly table: string;
}

export interface InputRanges {
  readonly indexed: readonly IndexedInput[];
  /** Longest sequence the position table holds; null when unknown. */
  readonly maxSequence: number | null;
  readonly sequenceInputs: readonly string[];
}

export const NO_INPUT_RANGES: InputRanges = { indexed: [], maxSequence: null, sequenceInputs: [] };

const tableSize = (value: unknown): number | undefined => (typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : undefined);

/** The ranges a model's declared inputs must respect, from its config.json (none without one). Pure. */
export function inputRangesFromHfConfig(hf: Readonly<Record<string, unknown>> | null, config: ModelConfig): InputRanges {
  if (hf === null) return NO_INPUT_RANGES;
  const declared = new Set(config.input.map((i) => i.name));
  const indexed: IndexedInput[] = [];
  for (const { input, sizeKey, table } of INDEXED_INPUTS) {
    const size = tableSize(hf[sizeKey]);
    if (size !== undefined && declared.has(input)) indexed.push({ input, size, table });
  }
  const maxSequence = tableSize(hf[SEQUENCE_KEY]) ?? null;
  const sequenceInputs = SEQUENCE_INPUTS.filter((name) => declared.has(name));
  return { indexed, maxSequence, sequenceInputs };
}

/** Index of the first element outside 0..size − 1, or −1. */
function firstOutOfRange(data: Tensor['data'], size: number): number {
  if (data instanceof BigInt64Array || data instanceof BigUint64Array) {
    const limit = BigInt(size);
    return data.findIndex((v) => v < 0n || v >= limit);
  }
  if (Array.isArray(data)) return -1;
  return (data as Int32Array).findIndex((v) => v < 0 || v >= size);
}

/** Throws INVALID_ARG naming the tensor when a value or a sequence length is out of range. Pure. */
export function checkInputRanges(ranges: InputRanges, inputs: readonly Tensor[]): void {
  for (const tensor of inputs) {
    const length = tensor.shape.at(-1);
    if (ranges.maxSequence !== null && length !== undefined && length > ranges.maxSequence && ranges.sequenceInputs.includes(tensor.name)) {
      throw invalidArg(`input '${tensor.name}' has a sequence of ${length} positions; the model's position table holds ${ranges.maxSequence}`);
    }
    const range = ranges.indexed.find((r) => r.input === tensor.name);
    if (range === undefined) continue;
    const at = firstOutOfRange(tensor.data, range.size);
    if (at >= 0) {
      const value = String((tensor.data as BigInt64Array | Int32Array)[at]);
      throw invalidArg(`input '${tensor.name}' holds ${value} at element ${at}, outside the model's ${range.table} (0..${range.size - 1})`);
    }
  }
}
