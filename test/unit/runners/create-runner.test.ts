// The runner choice is a pure function of a model's I/O names: the Optimum past_key_values
// contract gets PastKeyValuesRunner, the paged-attention graph PagedRunner; anything else is refused with an error that says what the
// model has and what each supported contract would need.
import { describe, expect, it } from 'vitest';
import { ConveyorError } from '../../../src/errors.js';
import { chooseRunner, type ModelIoNames } from '../../../src/runners/create-runner.js';

const perLayer = (prefix: string, numLayers: number): string[] => Array.from({ length: numLayers }, (_, i) => [`${prefix}.${i}.key`, `${prefix}.${i}.value`]).flat();

/** An Optimum decoder export's names (optimum-cli / transformers.js layout). */
const optimumDecoder = (numLayers: number, extraInputs: string[] = []): ModelIoNames => ({
  inputs: ['input_ids', 'attention_mask', ...extraInputs, ...perLayer('past_key_values', numLayers)],
  outputs: ['logits', ...perLayer('present', numLayers)],
});

function refusal(names: ModelIoNames): ConveyorError {
  try {
    chooseRunner(names);
  } catch (error) {
    expect(error).toBeInstanceOf(ConveyorError);
    return error as ConveyorError;
  }
  throw new Error('chooseRunner accepted a model it has no runner for');
}

describe('chooseRunner', () => {
  it('picks the past-key-values runner for an Optimum decoder, with or without its optional inputs', () => {
    expect(chooseRunner(optimumDecoder(1))).toBe('past-key-values');
    expect(chooseRunner(optimumDecoder(28, ['position_ids', 'num_logits_to_keep']))).toBe('past-key-values');
  });

  it('picks the paged runner for a paged-attention decoder (block pools in, new K/V out)', () => {
    const paged = (numLayers: number): ModelIoNames => ({
      inputs: [
        'input_ids',
        'position_ids',
        'query_starts',
        'query_lengths',
        'past_lengths',
        'block_tables',
        'logits_indices',
        ...Array.from({ length: numLayers }, (_, i) => [`key_cache.${i}`, `value_cache.${i}`]).flat(),
      ],
      outputs: ['logits', ...Array.from({ length: numLayers }, (_, i) => [`new_key.${i}`, `new_value.${i}`]).flat()],
    });
    expect(chooseRunner(paged(4))).toBe('paged');
    const withoutTables = paged(2);
    const error = refusal({ inputs: withoutTables.inputs.filter((name) => name !== 'block_tables'), outputs: withoutTables.outputs });
    expect(error.message).toMatch(/a paged-attention decoder reading the block pool \(PagedRunner\), which needs block_tables$/);
  });

  it('does not depend on the order of the names', () => {
    const names = optimumDecoder(4, ['position_ids']);
    expect(chooseRunner({ inputs: [...names.inputs].reverse(), outputs: [...names.outputs].reverse() })).toBe('past-key-values');
  });

  it('refuses an encoder, naming its inputs and what the decoder contract needs', () => {
    const error = refusal({ inputs: ['input_ids', 'attention_mask', 'token_type_ids'], outputs: ['last_hidden_state'] });
    expect(error.code).toBe('UNSUPPORTED');
    expect(error.message).toContain('inputs [input_ids, attention_mask, token_type_ids]');
    expect(error.message).toContain('outputs [last_hidden_state]');
    expect(error.message).toContain(
      'an Optimum decoder with past_key_values (PastKeyValuesRunner), which needs past_key_values.0.key, past_key_values.0.value, logits, present.0.key, present.0.value',
    );
  });

  it('refuses a decoder exported without KV cache inputs (a plain forward graph)', () => {
    const error = refusal({ inputs: ['input_ids', 'attention_mask', 'position_ids'], outputs: ['logits'] });
    expect(error.message).toMatch(/which needs past_key_values\.0\.key, past_key_values\.0\.value, present\.0\.key, present\.0\.value;/);
  });

  it('refuses a model with past inputs but no present outputs, naming only what is missing', () => {
    const names = optimumDecoder(2);
    const error = refusal({ inputs: names.inputs, outputs: ['logits'] });
    expect(error.message).toMatch(/which needs present\.0\.key, present\.0\.value;/);
  });

  it('collapses per-layer names so a deep model still gets a short message', () => {
    const error = refusal({ inputs: ['input_ids', 'positions', 'slot_mapping', 'block_tables', ...Array.from({ length: 32 }, (_, i) => `kv_cache.${i}`)], outputs: ['logits'] });
    expect(error.message).toContain('inputs [input_ids, positions, slot_mapping, block_tables, kv_cache.{i}]');
    const deep = refusal({ inputs: optimumDecoder(32).inputs, outputs: ['logits', 'present_key_values'] });
    expect(deep.message).toContain('inputs [input_ids, attention_mask, past_key_values.{i}.key, past_key_values.{i}.value]');
  });
});
