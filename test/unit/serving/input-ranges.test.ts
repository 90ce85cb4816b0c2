// Range checks for inputs that index the model's tables, sized from a Hugging Face config.json.
import { describe, expect, it } from 'vitest';
import type { Tensor } from '../../../src/contracts/tensors.js';
import { checkInputRanges, inputRangesFromHfConfig, NO_INPUT_RANGES } from '../../../src/serving/input-ranges.js';
import { input, modelConfig } from '../../support/model-config.js';

const bert = modelConfig({ input: ['input_ids', 'attention_mask', 'token_type_ids'].map((name) => input(name, 'TYPE_INT64', [-1])) });
const hf = { vocab_size: 100, type_vocab_size: 2, max_position_embeddings: 8 };
const ids = (name: string, values: readonly number[], rows = 1): Tensor => ({ name, datatype: 'INT64', shape: [rows, values.length / rows], data: BigInt64Array.from(values.map(BigInt)) });

describe('input ranges', () => {
  const ranges = inputRangesFromHfConfig(hf, bert);

  it('reads the table sizes of the inputs the model declares', () => {
    expect(ranges).toEqual({
      indexed: [
        { input: 'input_ids', size: 100, table: 'vocabulary' },
        { input: 'token_type_ids', size: 2, table: 'token type vocabulary' },
      ],
      maxSequence: 8,
      sequenceInputs: ['input_ids', 'attention_mask', 'token_type_ids'],
    });
    expect(inputRangesFromHfConfig(null, bert)).toBe(NO_INPUT_RANGES);
    expect(inputRangesFromHfConfig({ vocab_size: 'many' }, bert).indexed).toEqual([]);
  });

  it('accepts values inside the tables', () => {
    expect(() => checkInputRanges(ranges, [ids('input_ids', [0, 99, 5, 6], 2), ids('token_type_ids', [0, 1, 1, 0], 2)])).not.toThrow();
  });

  it('refuses token ids, token types and negative ids outside the tables, naming the tensor', () => {
    expect(() => checkInputRanges(ranges, [ids('input_ids', [1, 100])])).toThrow("input 'input_ids' holds 100 at element 1, outside the model's vocabulary (0..99)");
    expect(() => checkInputRanges(ranges, [ids('input_ids', [-1])])).toThrow("input 'input_ids' holds -1 at element 0");
    expect(() => checkInputRanges(ranges, [ids('token_type_ids', [0, 2])])).toThrow("input 'token_type_ids' holds 2 at element 1, outside the model's token type vocabulary (0..1)");
    const int32: Tensor = { name: 'input_ids', datatype: 'INT32', shape: [1, 1], data: Int32Array.of(500) };
    expect(() => checkInputRanges(ranges, [int32])).toThrow(/holds 500/);
  });

  it('refuses sequences longer than the position table', () => {
    expect(() => checkInputRanges(ranges, [ids('attention_mask', Array(9).fill(1))])).toThrow("input 'attention_mask' has a sequence of 9 positions; the model's position table holds 8");
    let thrown: unknown;
    try {
      checkInputRanges(ranges, [ids('input_ids', Array(9).fill(1))]);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({ code: 'INVALID_ARG', message: expect.stringContaining("input 'input_ids' has a sequence of 9 positions") });
  });
});
