// Small hand-built graphs with the same input/output contracts as the real bench models, so the
// forward scenario can be tested without waiting for (or paying for) the real builders.

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GraphBuilder } from '../../../kernels/onnx/graph-builder.js';
import { SeededRandom } from '../../../kernels/onnx/random.js';
import type { ModelFamily } from '../../../models/catalog.js';
import type { ModelSource } from '../../../bench/scenarios/forward/scenario.js';

export const TOY = { layers: 2, kvHeads: 2, headDim: 4, vocab: 50 } as const;
const HIDDEN = TOY.kvHeads * TOY.headDim;

/** Optimum-contract decoder: present = past ++ the new tokens' hidden state; logits for the last k. */
export function toyDecoder(): Uint8Array {
  const g = new GraphBuilder('toy_decoder');
  const random = new SeededRandom(1);
  const ids = g.input('input_ids', 'int64', ['batch_size', 'sequence_length']);
  g.input('attention_mask', 'int64', ['batch_size', 'total_sequence_length']);
  g.input('position_ids', 'int64', ['batch_size', 'sequence_length']);
  const hidden = g.op1('Gather', [g.weight('embed', [TOY.vocab, HIDDEN], random.uniformWithStd(TOY.vocab * HIDDEN, 1)), ids]);
  const heads = g.op1('Transpose', [g.op1('Reshape', [hidden, g.ints([0, 0, TOY.kvHeads, TOY.headDim])])], { perm: [0, 2, 1, 3] });
  for (let i = 0; i < TOY.layers; i++) {
    for (const kind of ['key', 'value']) {
      const past = g.input(`past_key_values.${i}.${kind}`, 'float32', ['batch_size', TOY.kvHeads, 'past_sequence_length', TOY.headDim]);
      const dims = ['batch_size', TOY.kvHeads, 'total_sequence_length', TOY.headDim];
      g.output(g.op1('Concat', [past, heads], { axis: 2 }), `present.${i}.${kind}`, 'float32', dims);
    }
  }
  const keep = g.input('num_logits_to_keep', 'int64', []);
  const start = g.op1('Neg', [g.op1('Reshape', [keep, g.ints([1])])]);
  const last = g.op1('Slice', [hidden, start, g.ints([2 ** 31]), g.ints([1])]);
  const logits = g.op1('MatMul', [last, g.weight('lm_head', [HIDDEN, TOY.vocab], random.uniformWithStd(HIDDEN * TOY.vocab, 1))]);
  g.output(logits, 'logits', 'float32', ['batch_size', 'kept', TOY.vocab]);
  return g.toModel().toBytes();
}

/** BERT-style inputs, mean-pooled embeddings out. */
export function toyEncoder(): Uint8Array {
  const g = new GraphBuilder('toy_encoder');
  const ids = g.input('input_ids', 'int64', ['batch_size', 'sequence_length']);
  g.input('attention_mask', 'int64', ['batch_size', 'sequence_length']);
  g.input('token_type_ids', 'int64', ['batch_size', 'sequence_length']);
  const embed = g.weight('embed', [TOY.vocab, HIDDEN], new SeededRandom(2).uniformWithStd(TOY.vocab * HIDDEN, 1));
  const pooled = g.op1('ReduceMean', [g.op1('Gather', [embed, ids])], { axes: [1], keepdims: 0 });
  g.output(pooled, 'sentence_embedding', 'float32', ['batch_size', HIDDEN]);
  return g.toModel().toBytes();
}

/** One convolution and a global average pool over a free-size image. */
export function toyCnn(): Uint8Array {
  const g = new GraphBuilder('toy_cnn');
  const image = g.input('input', 'float32', ['batch_size', 3, 'height', 'width']);
  const kernel = g.weight('conv', [4, 3, 3, 3], new SeededRandom(3).uniformWithStd(4 * 27, 0.2));
  const pooled = g.op1('GlobalAveragePool', [g.op1('Conv', [image, kernel], { pads: [1, 1, 1, 1] })]);
  g.output(g.op1('Flatten', [pooled]), 'logits', 'float32', ['batch_size', 4]);
  return g.toModel().toBytes();
}

const BUILDERS: Record<ModelFamily, () => Uint8Array> = { qwen3: toyDecoder, bert: toyEncoder, resnet: toyCnn };

/** A model source with only fp32 files; `broken` families fail to build. */
export function toySource(root: string, broken: readonly ModelFamily[] = []): ModelSource {
  return async (family) => {
    if (broken.includes(family)) throw new Error(`the ${family} toy is broken on purpose`);
    const dir = join(root, family);
    mkdirSync(join(dir, 'onnx'), { recursive: true });
    writeFileSync(join(dir, 'onnx', 'model.onnx'), BUILDERS[family]());
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ vocab_size: TOY.vocab }));
    return { dir, modelPath: (precision) => join(dir, 'onnx', precision === 'fp32' ? 'model.onnx' : `model_${precision}.onnx`) };
  };
}
