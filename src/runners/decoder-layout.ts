// What a runner needs to know about an Optimum-contract decoder, read from the session's I/O
// metadata (not from our own builder), so any exported model of that contract works.

import type { SessionMetadata } from '../contracts/worker-messages.js';
import { invalidArg } from '../errors.js';
import type { ModelShape } from './model-runner.js';

/** The shape plus the optional Optimum inputs the runner feeds when the model has them. */
export interface DecoderLayout extends ModelShape {
  readonly hasPositionIds: boolean;
  /** The optional scalar input that limits logits to the last k positions. */
  readonly hasLogitsToKeep: boolean;
}

export function decoderLayoutFrom(metadata: SessionMetadata): DecoderLayout {
  const input = (name: string) => metadata.inputs.find((i) => i.name === name);
  for (const required of ['input_ids', 'attention_mask', 'past_key_values.0.key']) {
    if (!input(required)) throw invalidArg(`not an Optimum decoder: input '${required}' is missing`);
  }
  const numLayers = metadata.inputs.filter((i) => /^past_key_values\.\d+\.key$/.test(i.name)).length;
  const past = input('past_key_values.0.key')!;
  const [, kvHeads, , headDim] = past.shape;
  if (typeof kvHeads !== 'number' || typeof headDim !== 'number') {
    throw invalidArg('past_key_values must have fixed kv-head and head-dim sizes ([batch_size, kv_heads, past, head_dim])');
  }
  if (past.type !== 'float32' && past.type !== 'float16') throw invalidArg(`past_key_values of type ${past.type} are not supported`);
  const logits = metadata.outputs.find((o) => o.name === 'logits');
  const vocab = logits?.shape[2];
  if (typeof vocab !== 'number') throw invalidArg("not an Optimum decoder: output 'logits' [batch, seq, vocab] with a fixed vocab size is missing");
  return {
    numLayers,
    numKvHeads: kvHeads,
    headDim,
    vocabSize: vocab,
    kvType: past.type,
    hasPositionIds: Boolean(input('position_ids')),
    hasLogitsToKeep: Boolean(input('num_logits_to_keep')),
  };
}
