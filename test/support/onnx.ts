// Test helpers: run a GraphBuilder graph in onnxruntime-node and compare with float64 references.
// Tests may import onnxruntime-node directly; the seam rule applies to src/ and openai-compat/.
import * as ort from 'onnxruntime-node';
import type { GraphBuilder } from '../../kernels/onnx/graph-builder.js';
import { fromFloat16Array, type TensorValue } from '../../kernels/onnx/dtypes.js';

export async function createSession(graph: GraphBuilder | Uint8Array): Promise<ort.InferenceSession> {
  const bytes = graph instanceof Uint8Array ? graph : graph.toModel().toBytes();
  return ort.InferenceSession.create(bytes, { intraOpNumThreads: 1, logSeverityLevel: 3 });
}

export function toOrtTensor(value: TensorValue): ort.Tensor {
  return new ort.Tensor(value.dtype as ort.Tensor.Type, value.data as never, value.dims as number[]);
}

/** Runs the session and returns every output as float64 numbers (fp16 decoded). */
export async function runAsFloat64(session: ort.InferenceSession, feeds: Record<string, TensorValue>): Promise<Record<string, { dims: number[]; data: Float64Array }>> {
  const ortFeeds: Record<string, ort.Tensor> = {};
  for (const [name, value] of Object.entries(feeds)) ortFeeds[name] = toOrtTensor(value);
  const results = await session.run(ortFeeds);
  const out: Record<string, { dims: number[]; data: Float64Array }> = {};
  for (const [name, tensor] of Object.entries(results)) {
    const raw = tensor.type === 'float16' ? fromFloat16Array(tensor.data as Uint16Array) : (tensor.data as ArrayLike<number | bigint>);
    out[name] = { dims: [...tensor.dims], data: Float64Array.from(raw as ArrayLike<number>, Number) };
  }
  return out;
}

/** max |a-b| / max(max |b|, tiny): the error relative to the reference's scale. */
export function relativeError(actual: ArrayLike<number>, reference: ArrayLike<number>): number {
  if (actual.length !== reference.length) throw new Error(`length ${actual.length} vs reference ${reference.length}`);
  let maxDiff = 0;
  let maxRef = 1e-30;
  for (let i = 0; i < reference.length; i++) {
    maxDiff = Math.max(maxDiff, Math.abs(actual[i]! - reference[i]!));
    maxRef = Math.max(maxRef, Math.abs(reference[i]!));
  }
  return maxDiff / maxRef;
}
