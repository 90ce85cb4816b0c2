// Completing a config from the ONNX model's own I/O description, as Triton's ONNX Runtime backend
// does on load, and checking that what the config declares is what the model has. Pure: the
// runtime reads the metadata from its session and passes it in (no onnxruntime import here).
import { DATATYPES } from '../../contracts/datatypes.js';
import type { ConfigDataType, ModelConfig, ModelInput, ModelOutput, ModelTensorConfig } from '../../contracts/model-config.js';
import { ConveyorError } from '../../errors.js';
import { Locator } from './locate.js';
import { normalizeModelConfig, type NormalizeOptions } from './normalize.js';
import { validateModelConfig } from './validate.js';

/** One model input or output as ONNX Runtime describes it. */
export interface TensorMetadata {
  readonly name: string;
  /** onnxruntime element type name: 'float32', 'int64', 'string', … */
  readonly type: string;
  /** Numbers are fixed sizes (negative = unknown); strings are symbolic dimensions. */
  readonly shape: readonly (number | string)[];
}

export interface ModelIoMetadata {
  readonly inputs: readonly TensorMetadata[];
  readonly outputs: readonly TensorMetadata[];
}

export interface CompleteOptions extends NormalizeOptions {
  /** max_batch_size given to a batchable model whose config leaves it 0 (Triton's default: 4). */
  readonly defaultMaxBatchSize?: number;
}

/** Triton's `--backend-config=onnxruntime,default-max-batch-size` default. */
export const DEFAULT_MAX_BATCH_SIZE = 4;

/** ONNX Runtime element types → config data types (Triton's ORT backend table, plus bfloat16), read off the datatype table. */
export const ORT_TO_CONFIG_TYPE: Readonly<Record<string, ConfigDataType>> = Object.fromEntries(Object.values(DATATYPES).map((d) => [d.ort, d.config]));

const isVariable = (dim: number | string): boolean => typeof dim === 'string' || dim < 0;
const shapeText = (shape: readonly (number | string)[]) => `[${shape.join(', ')}]`;
const fail = (config: ModelConfig, message: string) => new ConveyorError('INVALID_ARG', `model '${config.name}': ${message}`);

/**
 * Triton's ORT auto-complete, for backend "onnxruntime" (other configs are returned as they
 * are). When the config declares inputs *and* outputs nothing is filled, as in Triton.
 * Otherwise: a model whose every tensor has a variable first dimension can batch, so a
 * max_batch_size of 0 becomes `defaultMaxBatchSize` (4) and, above 1, dynamic batching is turned
 * on; a model that cannot batch with a non-zero max_batch_size is an error; an empty input or
 * output list is filled from the model (dims without the batch dimension, -1 for symbolic
 * sizes, a scalar as dims [1] with an empty reshape). The result is normalized, validated and
 * checked against the model. The argument is not modified.
 */
export function completeFromModelMetadata(config: ModelConfig, metadata: ModelIoMetadata, options: CompleteOptions = {}): ModelConfig {
  if (config.backend !== 'onnxruntime') return config;
  const out = structuredClone(config);
  if (out.input.length === 0 || out.output.length === 0) {
    completeMaxBatchSize(out, metadata, options.defaultMaxBatchSize ?? DEFAULT_MAX_BATCH_SIZE);
    if (out.input.length === 0) out.input = metadata.inputs.map((t) => inputFromMetadata(out, t));
    if (out.output.length === 0) out.output = metadata.outputs.map((t) => outputFromMetadata(out, t));
  }
  normalizeModelConfig(out, out.name, options);
  validateModelConfig(out, new Locator(`model '${out.name}'`));
  checkModelMetadata(out, metadata);
  return out;
}

function completeMaxBatchSize(config: ModelConfig, metadata: ModelIoMetadata, defaultMaxBatchSize: number): void {
  const tensors = [...metadata.inputs, ...metadata.outputs];
  const unbatchable = tensors.find((t) => t.shape.length === 0 || !isVariable(t.shape[0]!));
  if (unbatchable) {
    if (config.max_batch_size !== 0) {
      throw fail(config, `the model cannot batch (tensor '${unbatchable.name}' has shape ${shapeText(unbatchable.shape)}, no variable first dimension) but max_batch_size is ${config.max_batch_size}`);
    }
    return;
  }
  if (config.max_batch_size === 0) config.max_batch_size = Math.max(0, defaultMaxBatchSize);
  if (config.max_batch_size > 1 && !config.dynamic_batching) {
    config.dynamic_batching = {
      preferred_batch_size: [],
      max_queue_delay_microseconds: 0,
      preserve_ordering: false,
      priority_levels: 0,
      default_priority_level: 0,
      priority_queue_policy: {},
    };
  }
}

function configType(config: ModelConfig, tensor: TensorMetadata, section: string): ConfigDataType {
  const type = ORT_TO_CONFIG_TYPE[tensor.type];
  if (!type) throw fail(config, `model ${section} '${tensor.name}' has element type '${tensor.type}', which has no config data type`);
  return type;
}

/** What inputs and outputs share: name, data type, dims without the batch dimension, a scalar's reshape. */
function tensorFromMetadata(config: ModelConfig, tensor: TensorMetadata, section: 'input' | 'output') {
  const batched = config.max_batch_size > 0;
  const dims = tensor.shape.slice(batched ? 1 : 0).map((d) => (isVariable(d) ? -1 : (d as number)));
  const scalar = dims.length === 0;
  const common = { name: tensor.name, data_type: configType(config, tensor, section) };
  return { ...common, dims: scalar ? [1] : dims, ...(scalar && batched ? { reshape: { shape: [] } } : {}) };
}

function inputFromMetadata(config: ModelConfig, tensor: TensorMetadata): ModelInput {
  const { name, data_type, ...shape } = tensorFromMetadata(config, tensor, 'input');
  return { name, data_type, format: 'FORMAT_NONE', ...shape, is_shape_tensor: false, allow_ragged_batch: false, optional: false, is_non_linear_format_io: false };
}

function outputFromMetadata(config: ModelConfig, tensor: TensorMetadata): ModelOutput {
  return { ...tensorFromMetadata(config, tensor, 'output'), label_filename: '', is_shape_tensor: false, is_non_linear_format_io: false };
}

/**
 * Checks a config against the model: every declared tensor exists with the same element type
 * and a compatible shape (a config dim may fix a variable model dim, never the reverse), every
 * model input is declared, and with max_batch_size > 0 every tensor's first dimension is
 * variable. Outputs the config leaves out are allowed (Triton serves a subset).
 */
export function checkModelMetadata(config: ModelConfig, metadata: ModelIoMetadata): void {
  for (const section of ['input', 'output'] as const) {
    const model = section === 'input' ? metadata.inputs : metadata.outputs;
    for (const declared of config[section]) {
      const tensor = model.find((t) => t.name === declared.name);
      if (!tensor) {
        throw fail(config, `${section} '${declared.name}' is not an ${section} of the model (model ${section}s: ${model.map((t) => t.name).join(', ') || 'none'})`);
      }
      const type = configType(config, tensor, section);
      if (type !== declared.data_type) {
        throw fail(config, `${section} '${declared.name}' has data_type ${declared.data_type} but the model's tensor is ${tensor.type} (${type})`);
      }
      checkShape(config, section, declared, tensor);
    }
  }
  const missing = metadata.inputs.find((t) => !config.input.some((i) => i.name === t.name));
  if (missing) throw fail(config, `the model's input '${missing.name}' is missing from the config (declared: ${config.input.map((i) => i.name).join(', ')})`);
}

function checkShape(config: ModelConfig, section: string, declared: ModelTensorConfig, tensor: TensorMetadata): void {
  let model = tensor.shape;
  if (config.max_batch_size > 0) {
    if (model.length === 0 || !isVariable(model[0]!)) {
      throw fail(config, `${section} '${declared.name}': max_batch_size is ${config.max_batch_size} but the model's shape ${shapeText(model)} has no variable first (batch) dimension`);
    }
    model = model.slice(1);
  }
  const shape = declared.reshape ? declared.reshape.shape : declared.dims;
  const scalarAsOne = model.length === 0 && shape.length === 1 && shape[0] === 1;
  const matches = shape.length === model.length && shape.every((d, i) => isVariable(model[i]!) || d === model[i]);
  if (!matches && !scalarAsOne) {
    const field = declared.reshape ? `reshape ${shapeText(shape)}` : `dims ${shapeText(shape)}`;
    const batch = config.max_batch_size > 0 ? ' after the batch dimension' : '';
    throw fail(config, `${section} '${declared.name}' has ${field} but the model's shape is ${shapeText(tensor.shape)}; expected ${shapeText(model)}${batch}`);
  }
}
