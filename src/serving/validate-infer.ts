// Checks an inference request against the model's config before anything is queued, so bad
// input gets a precise INVALID_ARG and never reaches a batch other requests share.

import type { InferRequest, RequestedOutput } from '../contracts/infer.js';
import type { ConfigDataType, ModelConfig, ModelTensorConfig } from '../contracts/model-config.js';
import { dataTypeOfConfig } from '../contracts/datatypes.js';
import { elementCount, type DataType, type Tensor } from '../contracts/tensors.js';
import { invalidArg } from '../errors.js';

/** A config tensor's wire datatype (TYPE_STRING travels as BYTES; a loaded config never holds TYPE_INVALID). */
export function wireDataType(type: ConfigDataType): DataType {
  return dataTypeOfConfig(type) as DataType;
}

/** The shape a client sees for a config tensor: [-1] + dims when the model batches. */
export function wireShape(config: ModelConfig, tensor: ModelTensorConfig): number[] {
  return config.max_batch_size > 0 ? [-1, ...tensor.dims] : [...tensor.dims];
}

export interface ValidatedRequest {
  /** Inputs in the model's shapes (config reshape applied). */
  readonly inputs: Tensor[];
  /** Rows this request contributes to a batch (1 when the model does not batch). */
  readonly batchSize: number;
  readonly outputs: readonly RequestedOutput[];
}

function checkShape(name: string, shape: readonly number[], expected: readonly number[]): void {
  const matches = shape.length === expected.length && shape.every((d, i) => expected[i] === -1 || expected[i] === d);
  if (!matches) {
    throw invalidArg(`unexpected shape for input '${name}', model expects [${expected.join(',')}] but got [${shape.join(',')}]`);
  }
}

/**
 * A variable dimension given as 0 (a BERT sequence of no tokens) is refused: a model cannot take
 * an empty tensor where its config leaves the size open, and ONNX Runtime would either fail
 * deep in the batch or answer with empty garbage. Only a dimension the config fixes at 0 may be 0.
 */
function checkNotEmpty(config: ModelConfig, tensor: Tensor, expected: readonly number[]): void {
  const batched = config.max_batch_size > 0;
  const empty = tensor.shape.findIndex((d, i) => d === 0 && expected[i] !== 0 && !(batched && i === 0));
  if (empty >= 0) {
    throw invalidArg(`input '${tensor.name}' has a zero-length dimension ${empty} (shape [${tensor.shape.join(',')}]); model '${config.name}' cannot take an empty tensor`);
  }
}

function checkInput(config: ModelConfig, tensor: Tensor, declared: ModelTensorConfig): number {
  const expectedType = wireDataType(declared.data_type);
  if (tensor.datatype !== expectedType) {
    throw invalidArg(`inference input '${tensor.name}' data-type is '${tensor.datatype}', but model '${config.name}' expects '${expectedType}'`);
  }
  if (tensor.shape.some((d) => !Number.isInteger(d) || d < 0)) {
    throw invalidArg(`input '${tensor.name}' has an invalid shape [${tensor.shape.join(',')}]`);
  }
  const elements = Array.isArray(tensor.data) ? tensor.data.length : tensor.data.length;
  if (elements !== elementCount(tensor.shape)) {
    throw invalidArg(`input '${tensor.name}' has ${elements} elements but shape [${tensor.shape.join(',')}] needs ${elementCount(tensor.shape)}`);
  }
  const expected = wireShape(config, declared);
  checkShape(tensor.name, tensor.shape, expected);
  checkNotEmpty(config, tensor, expected);
  if (config.max_batch_size > 0) {
    const batch = tensor.shape[0]!;
    if (batch < 1 || batch > config.max_batch_size) {
      throw invalidArg(`inference request batch-size must be <= ${config.max_batch_size} for '${config.name}', got ${batch}`);
    }
    return batch;
  }
  return 1;
}

function reshaped(config: ModelConfig, tensor: Tensor, declared: ModelTensorConfig): Tensor {
  if (!declared.reshape) return tensor;
  const batch = config.max_batch_size > 0 ? [tensor.shape[0]!] : [];
  return { ...tensor, shape: [...batch, ...declared.reshape.shape] };
}

export function validateInferRequest(config: ModelConfig, request: InferRequest): ValidatedRequest {
  const declared = new Map(config.input.map((t) => [t.name, t]));
  const seen = new Set<string>();
  const batchSizes = new Set<number>();
  const inputs: Tensor[] = [];
  for (const tensor of request.inputs) {
    const spec = declared.get(tensor.name);
    if (!spec) throw invalidArg(`unexpected inference input '${tensor.name}' for model '${config.name}'`);
    if (seen.has(tensor.name)) throw invalidArg(`input '${tensor.name}' is given more than once`);
    seen.add(tensor.name);
    batchSizes.add(checkInput(config, tensor, spec));
    inputs.push(reshaped(config, tensor, spec));
  }
  const missing = config.input.filter((t) => !t.optional && !seen.has(t.name)).map((t) => t.name);
  if (missing.length > 0) {
    throw invalidArg(`expected ${config.input.length} inputs but got ${request.inputs.length} inputs for model '${config.name}'; missing: ${missing.join(', ')}`);
  }
  if (batchSizes.size > 1) throw invalidArg(`inputs of model '${config.name}' disagree on the batch size: ${[...batchSizes].join(' vs ')}`);

  const outputNames = new Set(config.output.map((o) => o.name));
  const outputs = request.outputs ?? config.output.map((o) => ({ name: o.name, parameters: {} }));
  for (const output of outputs) {
    if (!outputNames.has(output.name)) throw invalidArg(`unexpected inference output '${output.name}' for model '${config.name}'`);
  }
  return { inputs, batchSize: [...batchSizes][0] ?? 1, outputs };
}
