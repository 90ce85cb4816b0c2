// Input tensors for one forward pass, shaped from the session's own input metadata rather than
// from what we believe the builder wrote: the same code then measures any Optimum-style export.

import * as ort from 'onnxruntime-node';
import { toFloat16Array } from '../../../kernels/onnx/dtypes.js';
import type { SeededRandom } from '../../../kernels/onnx/random.js';

export type Feeds = Record<string, ort.Tensor>;
type TensorMeta = ort.InferenceSession.TensorValueMetadata;

export function inputMeta(session: ort.InferenceSession, name: string): TensorMeta | undefined {
  const meta = session.inputMetadata.find((m) => m.name === name);
  return meta?.isTensor ? meta : undefined;
}

export interface DecoderLayout {
  readonly layers: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly kvType: 'float32' | 'float16';
  /** From the logits output's last dimension when it is fixed. */
  readonly vocab: number | undefined;
  readonly idType: 'int64' | 'int32';
  readonly hasPositionIds: boolean;
  /** Element type of the optional scalar num_logits_to_keep input; undefined when absent. */
  readonly logitsToKeepType: 'int64' | 'int32' | undefined;
}

const PAST_KEY = /^past_key_values\.(\d+)\.key$/;
const KNOWN_DECODER_INPUTS = /^(input_ids|attention_mask|position_ids|num_logits_to_keep|past_key_values\.\d+\.(key|value))$/;

/** Reads the Optimum decoder contract off the session; throws when the model does not follow it. */
export function inspectDecoder(session: ort.InferenceSession): DecoderLayout {
  const unknown = session.inputNames.filter((name) => !KNOWN_DECODER_INPUTS.test(name));
  if (unknown.length > 0) throw new Error(`decoder has inputs outside the Optimum contract: ${unknown.join(', ')}`);
  const layers = session.inputNames.filter((name) => PAST_KEY.test(name)).length;
  if (layers === 0) throw new Error('decoder has no past_key_values.{i}.key inputs');
  for (let i = 0; i < layers; i++) {
    for (const kind of ['key', 'value']) {
      if (!inputMeta(session, `past_key_values.${i}.${kind}`)) throw new Error(`decoder lacks past_key_values.${i}.${kind}`);
    }
  }
  const past = inputMeta(session, 'past_key_values.0.key')!;
  const [, kvHeads, , headDim] = past.shape;
  if (past.shape.length !== 4 || typeof kvHeads !== 'number' || typeof headDim !== 'number') {
    throw new Error(`past_key_values.0.key has shape [${past.shape.join(', ')}]; kv_heads and head_dim must be fixed`);
  }
  if (past.type !== 'float32' && past.type !== 'float16') throw new Error(`past_key_values are ${past.type}`);
  const ids = inputMeta(session, 'input_ids');
  if (!ids || (ids.type !== 'int64' && ids.type !== 'int32')) throw new Error('decoder needs an int64 input_ids input');
  const logits = session.outputMetadata.find((m) => m.name === 'logits');
  const vocab = logits?.isTensor ? logits.shape[logits.shape.length - 1] : undefined;
  return {
    layers,
    kvHeads,
    headDim,
    kvType: past.type,
    vocab: typeof vocab === 'number' ? vocab : undefined,
    idType: ids.type,
    hasPositionIds: session.inputNames.includes('position_ids'),
    logitsToKeepType: intTypeOf(inputMeta(session, 'num_logits_to_keep')),
  };
}

export interface StepShape {
  readonly batch: number;
  /** Tokens already in the KV cache of every row. */
  readonly past: number;
  /** New tokens per row: 1 for a decode step, the prompt length for a prefill. */
  readonly seq: number;
}

/** Feeds for one step where every row has the same past and new-token count (no padding). */
export function decoderFeeds(layout: DecoderLayout, shape: StepShape, random: SeededRandom): Feeds {
  const { batch, past, seq } = shape;
  const feeds: Feeds = {
    input_ids: intTensor(layout.idType, [batch, seq], random.ints(batch * seq, layout.vocab ?? 1000)),
    attention_mask: intTensor(layout.idType, [batch, past + seq], new Array<number>(batch * (past + seq)).fill(1)),
  };
  if (layout.hasPositionIds) {
    const positions = Array.from({ length: batch * seq }, (_, i) => past + (i % seq));
    feeds['position_ids'] = intTensor(layout.idType, [batch, seq], positions);
  }
  // Only the last position's logits are sampled, in decode and prefill alike.
  if (layout.logitsToKeepType) feeds['num_logits_to_keep'] = intTensor(layout.logitsToKeepType, [], [1]);
  const kvDims = [batch, layout.kvHeads, past, layout.headDim];
  const kvData = randomFloats(layout.kvType, kvDims, random);
  // Every layer reads the same (read-only) buffer: the runtime copies nothing either way, and
  // one buffer keeps batch-32 feeds of a many-layer model small.
  for (let i = 0; i < layout.layers; i++) {
    feeds[`past_key_values.${i}.key`] = new ort.Tensor(layout.kvType, kvData, kvDims);
    feeds[`past_key_values.${i}.value`] = new ort.Tensor(layout.kvType, kvData, kvDims);
  }
  return feeds;
}

/** Encoder feeds: ids, an all-ones mask, zero token types; anything else float is random. */
export function encoderFeeds(session: ort.InferenceSession, batch: number, seq: number, vocab: number, random: SeededRandom): Feeds {
  const feeds: Feeds = {};
  for (const name of session.inputNames) {
    const meta = inputMeta(session, name);
    if (!meta) throw new Error(`encoder input ${name} is not a tensor`);
    const dims = meta.shape.map((d, axis) => (typeof d === 'number' ? d : axis === 0 ? batch : seq));
    const count = dims.reduce((a, b) => a * b, 1);
    if (meta.type === 'int64' || meta.type === 'int32') {
      const values = name === 'input_ids' ? random.ints(count, vocab) : new Array<number>(count).fill(name.includes('mask') ? 1 : 0);
      feeds[name] = intTensor(meta.type, dims, values);
    } else if (meta.type === 'float32' || meta.type === 'float16') {
      feeds[name] = new ort.Tensor(meta.type, randomFloats(meta.type, dims, random), dims);
    } else {
      throw new Error(`encoder input ${name} has unsupported type ${meta.type}`);
    }
  }
  return feeds;
}

/** CNN feeds: one float image batch [N, C, H, W]; free spatial dims take `size`. */
export function imageFeeds(session: ort.InferenceSession, batch: number, size: number, random: SeededRandom): { feeds: Feeds; dims: number[] } {
  if (session.inputNames.length !== 1) throw new Error(`CNN has inputs ${session.inputNames.join(', ')}; expected one image input`);
  const name = session.inputNames[0]!;
  const meta = inputMeta(session, name);
  if (!meta || (meta.type !== 'float32' && meta.type !== 'float16') || meta.shape.length !== 4) {
    throw new Error(`CNN input ${name} must be a 4-D float tensor`);
  }
  const dims = meta.shape.map((d, axis) => (typeof d === 'number' ? d : axis === 0 ? batch : axis === 1 ? 3 : size));
  if (dims[0] !== batch) throw new Error(`CNN input ${name} has a fixed batch of ${dims[0]}`);
  return { feeds: { [name]: new ort.Tensor(meta.type, randomFloats(meta.type, dims, random), dims) }, dims };
}

function intTypeOf(meta: TensorMeta | undefined): 'int64' | 'int32' | undefined {
  return meta?.type === 'int64' || meta?.type === 'int32' ? meta.type : undefined;
}

function intTensor(type: 'int64' | 'int32', dims: readonly number[], values: readonly number[]): ort.Tensor {
  const data = type === 'int64' ? BigInt64Array.from(values, (v) => BigInt(v)) : Int32Array.from(values);
  return new ort.Tensor(type, data, [...dims]);
}

function randomFloats(type: 'float32' | 'float16', dims: readonly number[], random: SeededRandom): Float32Array | Uint16Array {
  const values = random.uniformWithStd(
    dims.reduce((a, b) => a * b, 1),
    1,
  );
  return type === 'float16' ? toFloat16Array(values) : values;
}
