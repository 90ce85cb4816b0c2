// A session as code outside src/runtime sees it: plain typed arrays in and out, no
// onnxruntime-node types. The LLM engine's runner uses this (it runs inside its own worker).

import * as ort from 'onnxruntime-node';
import type { OrtElementType, SessionMetadata } from '../contracts/worker-messages.js';
import { describeSession, openSession, type SessionRequest } from './session-factory.js';

export type RawData = Float32Array | Uint16Array | BigInt64Array | Int32Array | Uint8Array | Float64Array | Int8Array;

export interface RawTensor {
  readonly type: OrtElementType;
  readonly dims: readonly number[];
  readonly data: RawData;
}

export class ModelSession {
  private constructor(
    private readonly session: ort.InferenceSession,
    readonly metadata: SessionMetadata,
    readonly device: 'cpu' | 'cuda',
    readonly note: string | undefined,
  ) {}

  static async open(request: SessionRequest): Promise<ModelSession> {
    const opened = await openSession(request);
    return new ModelSession(opened.session, describeSession(opened.session, request.modelPath), opened.device, opened.note);
  }

  /** Runs synchronously on this thread (onnxruntime-node's behaviour): call it from a worker. */
  async run(feeds: Readonly<Record<string, RawTensor>>, outputNames?: readonly string[]): Promise<Record<string, RawTensor>> {
    const ortFeeds: Record<string, ort.Tensor> = {};
    for (const [name, t] of Object.entries(feeds)) ortFeeds[name] = new ort.Tensor(t.type as 'float32', t.data as Float32Array, [...t.dims]);
    const results = outputNames ? await this.session.run(ortFeeds, [...outputNames]) : await this.session.run(ortFeeds);
    const out: Record<string, RawTensor> = {};
    for (const [name, t] of Object.entries(results)) out[name] = { type: t.type as OrtElementType, dims: [...t.dims], data: t.data as RawData };
    return out;
  }

  release(): Promise<void> {
    return this.session.release();
  }
}
