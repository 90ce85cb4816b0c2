// Drives a decoder session the way the Optimum contract says, for tests: prefill, incremental
// decoding with past_key_values, left-padded batches. Plain loops, no engine.
import type * as ort from 'onnxruntime-node';
import { fromFloat16Array, type TensorValue } from '../../kernels/onnx/dtypes.js';
import { toOrtTensor } from './onnx.js';

export interface DecoderShape {
  numLayers: number;
  numKvHeads: number;
  headDim: number;
  kvType: 'float32' | 'float16';
}

export function decoderShape(session: ort.InferenceSession): DecoderShape {
  const meta = session.inputMetadata.find((m) => m.name === 'past_key_values.0.key') as unknown as { type: string; shape: readonly (number | string)[] };
  return {
    numLayers: session.inputNames.filter((n) => n.endsWith('.key')).length,
    numKvHeads: meta.shape[1] as number,
    headDim: meta.shape[3] as number,
    kvType: meta.type as 'float32' | 'float16',
  };
}

export type Cache = Record<string, ort.Tensor>;

export function emptyCache(shape: DecoderShape, batch: number, ortModule: typeof ort): Cache {
  const cache: Cache = {};
  const empty = shape.kvType === 'float16' ? new Uint16Array(0) : new Float32Array(0);
  for (let i = 0; i < shape.numLayers; i++) {
    for (const kind of ['key', 'value']) {
      cache[`past_key_values.${i}.${kind}`] = new ortModule.Tensor(shape.kvType, empty, [batch, shape.numKvHeads, 0, shape.headDim]);
    }
  }
  return cache;
}

const int64 = (dims: number[], values: number[]): TensorValue => ({ dtype: 'int64', dims, data: BigInt64Array.from(values, BigInt) });

/**
 * One forward call. `ids` rows are equal length (caller pads); `mask` covers past + new.
 * Returns logits as float64 rows [batch][kept][vocab] flattened per row, and the new cache.
 */
export async function forward(
  session: ort.InferenceSession,
  cache: Cache,
  ids: number[][],
  mask: number[][],
  logitsToKeep = 0,
): Promise<{ logits: Float64Array[]; kept: number; vocab: number; cache: Cache }> {
  const batch = ids.length;
  const seq = ids[0]!.length;
  const total = mask[0]!.length;
  const past = total - seq;
  // Hugging Face position ids: cumsum(mask) - 1, 1 at masked positions, last `seq` columns.
  const positions = mask.flatMap((row) => {
    let sum = 0;
    const all = row.map((m) => {
      sum += m;
      return m === 0 ? 1 : sum - 1;
    });
    return all.slice(past);
  });
  const feeds: Record<string, ort.Tensor> = {
    ...cache,
    input_ids: toOrtTensor(int64([batch, seq], ids.flat())),
    attention_mask: toOrtTensor(int64([batch, total], mask.flat())),
    position_ids: toOrtTensor(int64([batch, seq], positions)),
  };
  if (session.inputNames.includes('num_logits_to_keep')) {
    feeds.num_logits_to_keep = toOrtTensor({ dtype: 'int64', dims: [], data: BigInt64Array.of(BigInt(logitsToKeep)) });
  }
  const out = await session.run(feeds);
  const logitsTensor = out.logits!;
  const [, kept, vocab] = logitsTensor.dims as [number, number, number];
  const flat = logitsTensor.type === 'float16' ? fromFloat16Array(logitsTensor.data as Uint16Array) : (logitsTensor.data as Float32Array);
  const logits = Array.from({ length: batch }, (_, b) => Float64Array.from(flat.subarray(b * kept * vocab, (b + 1) * kept * vocab)));
  const next: Cache = {};
  for (const [name, tensor] of Object.entries(out)) {
    if (name.startsWith('present.')) next[name.replace('present.', 'past_key_values.')] = tensor;
  }
  return { logits, kept, vocab, cache: next };
}

export function argmax(values: ArrayLike<number>, offset = 0, length = values.length - offset): number {
  let best = 0;
  for (let i = 1; i < length; i++) if (values[offset + i]! > values[offset + best]!) best = i;
  return best;
}

/** Greedy continuation of one prompt, one token per step. */
export async function greedy(session: ort.InferenceSession, ortModule: typeof ort, prompt: number[], steps: number): Promise<number[]> {
  let cache = emptyCache(decoderShape(session), 1, ortModule);
  let ids = prompt;
  let mask = prompt.map(() => 1);
  const generated: number[] = [];
  for (let i = 0; i < steps; i++) {
    const result = await forward(session, cache, [ids], [mask], 1);
    const next = argmax(result.logits[0]!);
    generated.push(next);
    cache = result.cache;
    ids = [next];
    mask = [...mask, 1];
  }
  return generated;
}
