// What the PagedRunner needs to know about a paged-attention decoder (onnx/model_paged*.onnx; the
// contract is in kernels/paged-attention.ts), read from the session's I/O metadata.

import type { SessionMetadata } from '../contracts/worker-messages.js';
import { invalidArg } from '../errors.js';
import type { ModelShape } from './model-runner.js';

/** Inputs every paged decoder has besides its per-layer pools. */
export const PAGED_TOKEN_INPUTS = ['input_ids', 'position_ids', 'query_starts', 'query_lengths', 'past_lengths', 'block_tables', 'logits_indices'] as const;

/**
 * The greedy head's names (kernels/greedy-tokens.ts builds it and declares them for the builders;
 * test/unit/runners/greedy-head.test.ts pins the two declarations equal).
 */
export const GREEDY_HEAD_NAMES = { indicesInput: 'greedy_indices', sampleableInput: 'sampleable_vocab', output: 'greedy_token_ids' } as const;

export function pagedLayoutFrom(metadata: SessionMetadata): ModelShape {
  const input = (name: string) => metadata.inputs.find((i) => i.name === name);
  for (const required of [...PAGED_TOKEN_INPUTS, 'key_cache.0', 'value_cache.0']) {
    if (!input(required)) throw invalidArg(`not a paged decoder: input '${required}' is missing`);
  }
  const numLayers = metadata.inputs.filter((i) => /^key_cache\.\d+$/.test(i.name)).length;
  const pool = input('key_cache.0')!;
  const [kvHeads, , , headDim] = pool.shape;
  if (typeof kvHeads !== 'number' || typeof headDim !== 'number') {
    throw invalidArg('key_cache must have fixed kv-head and head-dim sizes ([kv_heads, num_blocks, block_size, head_dim])');
  }
  if (pool.type !== 'float32' && pool.type !== 'float16') throw invalidArg(`key_cache of type ${pool.type} is not supported`);
  const vocab = metadata.outputs.find((o) => o.name === 'logits')?.shape[1];
  if (typeof vocab !== 'number') throw invalidArg("not a paged decoder: output 'logits' [num_logits, vocab] with a fixed vocab size is missing");
  return { numLayers, numKvHeads: kvHeads, headDim, vocabSize: vocab, kvType: pool.type };
}
