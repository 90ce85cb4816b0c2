// Stacking requests along the batch dimension and splitting batched outputs back. Row-major data
// with the batch dimension outermost makes both plain concatenation and slicing of the flat data.

import { storageOf } from '../contracts/datatypes.js';
import { elementCount, type DataType, type FixedTensorData, type Tensor, type TensorData } from '../contracts/tensors.js';
import { ConveyorError } from '../errors.js';

const internal = (message: string): ConveyorError => new ConveyorError('INTERNAL', message);

function checkData(tensor: Tensor): void {
  if (tensor.datatype === 'BYTES') {
    if (!Array.isArray(tensor.data)) throw internal(`tensor '${tensor.name}': BYTES data must be an array of Uint8Array`);
  } else if (!(tensor.data instanceof storageOf(tensor.datatype))) {
    throw internal(`tensor '${tensor.name}': ${tensor.datatype} data must be a ${storageOf(tensor.datatype).name}`);
  }
  if (tensor.data.length !== elementCount(tensor.shape)) {
    throw internal(`tensor '${tensor.name}': ${tensor.data.length} elements for shape [${tensor.shape.join(',')}]`);
  }
}

/**
 * A key equal for two requests exactly when their inputs can be stacked: input names, datatypes
 * and shapes past the batch dimension, plus the values of shape tensors, which Triton also
 * requires to match. Requests of a batching model only.
 */
export function itemSignature(inputs: readonly Tensor[], shapeTensors: ReadonlySet<string> = new Set()): string {
  const parts = [...inputs]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((t) => {
      const values = shapeTensors.has(t.name) && t.datatype !== 'BYTES' ? `=${Array.from(t.data as FixedTensorData, String).join(',')}` : '';
      return `${t.name}:${t.datatype}[${t.shape.slice(1).join(',')}]${values}`;
    });
  // JSON keeps names containing the separator characters unambiguous.
  return JSON.stringify(parts);
}

function concatData(datatype: DataType, parts: readonly TensorData[]): TensorData {
  if (datatype === 'BYTES') return (parts as Uint8Array[][]).flat();
  const total = parts.reduce((n, p) => n + p.length, 0);
  const out = new (storageOf(datatype))(total);
  let offset = 0;
  for (const part of parts) {
    // Same constructor on both sides (checked), so set() copies element for element; the cast
    // only silences the union of typed-array signatures.
    (out as Uint8Array).set(part as Uint8Array, offset);
    offset += part.length;
  }
  return out;
}

/**
 * One tensor per input, the requests concatenated along dimension 0 in the given order. Inputs
 * are matched by name, in the first request's order. Always copies (the result is transferred).
 */
export function stackInputs(requests: readonly (readonly Tensor[])[]): Tensor[] {
  const first = requests[0];
  if (first === undefined) throw internal('nothing to stack');
  return first.map((head) => {
    const parts = requests.map((inputs) => {
      const t = inputs.find((candidate) => candidate.name === head.name);
      if (t === undefined) throw internal(`input '${head.name}' missing from a request in the batch`);
      return t;
    });
    const itemShape = head.shape.slice(1);
    for (const t of parts) {
      checkData(t);
      if (t.datatype !== head.datatype || t.shape.length !== head.shape.length || t.shape.some((d, i) => i > 0 && d !== itemShape[i - 1])) {
        throw internal(`input '${head.name}': ${t.datatype}[${t.shape.join(',')}] cannot be stacked with ${head.datatype}[${head.shape.join(',')}]`);
      }
    }
    const rows = parts.reduce((n, t) => n + (t.shape[0] ?? 0), 0);
    return {
      name: head.name,
      datatype: head.datatype,
      shape: [rows, ...itemShape],
      data: concatData(
        head.datatype,
        parts.map((t) => t.data),
      ),
    };
  });
}

function sliceData(data: TensorData, start: number, end: number): TensorData {
  // Views, not copies: the batch's buffer lives until the last response is sent.
  return Array.isArray(data) ? data.slice(start, end) : data.subarray(start, end);
}

/**
 * Splits each batched output along dimension 0 into `rows[i]` rows for request i (a request's
 * first dimension; 0 allowed). Returns one output list per request, in the outputs' order.
 */
export function splitOutputs(outputs: readonly Tensor[], rows: readonly number[]): Tensor[][] {
  const total = rows.reduce((n, r) => n + r, 0);
  const perRequest: Tensor[][] = rows.map(() => []);
  for (const output of outputs) {
    checkData(output);
    if (output.shape.length === 0 || output.shape[0] !== total) {
      throw internal(`output '${output.name}' has shape [${output.shape.join(',')}], expected ${total} rows along the batch dimension`);
    }
    const itemShape = output.shape.slice(1);
    const perRow = elementCount(itemShape);
    let row = 0;
    rows.forEach((n, i) => {
      const data = sliceData(output.data, row * perRow, (row + n) * perRow);
      perRequest[i]!.push({ name: output.name, datatype: output.datatype, shape: [n, ...itemShape], data });
      row += n;
    });
  }
  return perRequest;
}
