// What a cached response is looked up by, and what it weighs. The key is a SHA-256 of everything
// that can change the answer: the model version (and which load of it), every input's name,
// datatype, shape and bytes (in name order: Triton's hash does not depend on the order a client
// lists its inputs in), the outputs asked for with their parameters (classification changes the
// tensors; the order asked is the order answered), and the request parameters. Parameters that
// only change how or when the answer is delivered are left out, so a JSON and a binary client,
// or two priorities, share an entry.

import { createHash, type Hash } from 'node:crypto';
import type { InferRequest, ParameterValue, Parameters } from '../contracts/infer.js';
import type { Tensor } from '../contracts/tensors.js';

/** Request parameters that never change the tensors answered: delivery format and scheduling. */
const DELIVERY_REQUEST_PARAMETERS: ReadonlySet<string> = new Set(['binary_data_output', 'priority', 'timeout']);
/** Output parameters of the same kind (binary_data: HTTP's binary extension). */
const DELIVERY_OUTPUT_PARAMETERS: ReadonlySet<string> = new Set(['binary_data']);

/** The model version a key belongs to; `generation` tells two loads of the same version apart. */
export interface CacheKeyScope {
  readonly name: string;
  readonly version: number;
  readonly generation: number;
  /** The config's outputs, in order: what a request that names none asks for (so it shares entries with one that names them all). */
  readonly outputs: readonly string[];
}

export function requestCacheKey(scope: CacheKeyScope, request: InferRequest): string {
  const hash = createHash('sha256');
  const inputs = [...request.inputs].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const header = {
    model: [scope.name, scope.version, scope.generation],
    inputs: inputs.map((t) => [t.name, t.datatype, t.shape]),
    outputs: (request.outputs ?? scope.outputs.map((name) => ({ name, parameters: {} }))).map((o) => [o.name, canonical(o.parameters, DELIVERY_OUTPUT_PARAMETERS)]),
    parameters: canonical(request.parameters, DELIVERY_REQUEST_PARAMETERS),
  };
  hash.update(JSON.stringify(header));
  // The header fixes every fixed-width input's byte length; BYTES elements carry their own.
  for (const tensor of inputs) updateWithData(hash, tensor);
  return hash.digest('hex');
}

/** The bytes an entry holds: its tensors' data, plus each tensor's name and shape. */
export function responseBytes(outputs: readonly Tensor[]): number {
  let bytes = 0;
  for (const t of outputs) {
    bytes += t.name.length + 8 * t.shape.length;
    if (Array.isArray(t.data)) for (const element of t.data) bytes += 4 + element.byteLength;
    else bytes += t.data.byteLength;
  }
  return bytes;
}

/**
 * Tensors with data of their own. The cache copies in and out: a response's buffers may be
 * transferred to a worker later (an ensemble step feeding another model's instance), which would
 * empty an entry that shared them.
 */
export function ownCopies(tensors: readonly Tensor[]): Tensor[] {
  return tensors.map((t) => ({ ...t, shape: [...t.shape], data: Array.isArray(t.data) ? t.data.map((e) => e.slice()) : t.data.slice() }));
}

function updateWithData(hash: Hash, tensor: Tensor): void {
  if (!Array.isArray(tensor.data)) {
    hash.update(new Uint8Array(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength));
    return;
  }
  const length = new DataView(new ArrayBuffer(4));
  for (const element of tensor.data) {
    length.setUint32(0, element.byteLength, true);
    hash.update(new Uint8Array(length.buffer));
    hash.update(element);
  }
}

/** Parameters sorted by name, each value tagged with its type (the string "1" is not the number 1), delivery ones left out. */
function canonical(parameters: Parameters, leftOut: ReadonlySet<string>): [string, string, string][] {
  return Object.entries(parameters)
    .filter(([key]) => !leftOut.has(key))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, value]: [string, ParameterValue]) => [key, typeof value, String(value)]);
}
