// A KServe infer body decoded on the parse worker (src/server/kit/offthread-parse.ts): the depth
// check, JSON.parse and the JSON numbers → typed arrays walk of decodeInferRequest, the same code
// and the same errors as the inline path. The tensors' buffers are transferred back.

import type { InferRequest } from '../../../contracts/infer.js';
import type { OffThreadAnswer } from '../../kit/offthread-parse.js';
import { jsonDepthError } from '../../kit/json-depth.js';
import { decodeInferRequest } from './infer-request.js';

/** This module, for OffThreadParser.run. */
export const OFFTHREAD_INFER_MODULE = new URL('./offthread-infer.ts', import.meta.url);

export interface OffThreadInferInput {
  readonly model: string;
  readonly version: string | undefined;
  readonly body: Uint8Array;
  /** Inference-Header-Content-Length, already checked against the body. */
  readonly headerLength: number | undefined;
  /** --json-max-depth: the parser skipped the depth scan for this body. */
  readonly maxDepth: number;
}

export function parseOffThread(input: OffThreadInferInput): OffThreadAnswer<InferRequest> {
  const body = Buffer.from(input.body.buffer, input.body.byteOffset, input.body.byteLength);
  const tooDeep = jsonDepthError(body, input.maxDepth, input.headerLength ?? body.byteLength);
  if (tooDeep) throw tooDeep;
  const request = decodeInferRequest(input.model, input.version, body, input.headerLength);
  const transfer = request.inputs.flatMap((tensor) => (Array.isArray(tensor.data) ? tensor.data.map((bytes) => bytes.buffer) : [tensor.data.buffer])) as ArrayBuffer[];
  return { value: request, transfer };
}
