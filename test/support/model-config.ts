// ModelConfig values built in memory, complete as the config parser returns them (every field at
// its proto3 default or normalized value), so a test states only what it varies.
import type { ConfigDataType, InstanceGroupConfig, ModelConfig, ModelInput, ModelOutput } from '../../src/contracts/model-config.js';

export const input = (name: string, data_type: ConfigDataType, dims: number[], extra: Partial<ModelInput> = {}): ModelInput => ({
  name,
  data_type,
  format: 'FORMAT_NONE',
  dims,
  is_shape_tensor: false,
  allow_ragged_batch: false,
  optional: false,
  is_non_linear_format_io: false,
  ...extra,
});

export const output = (name: string, data_type: ConfigDataType, dims: number[], extra: Partial<ModelOutput> = {}): ModelOutput => ({
  name,
  data_type,
  dims,
  label_filename: '',
  is_shape_tensor: false,
  is_non_linear_format_io: false,
  ...extra,
});

export const group = (name: string, kind: InstanceGroupConfig['kind'], count: number, gpus: number[] = []): InstanceGroupConfig => ({
  name,
  kind,
  count,
  gpus,
  secondary_devices: [],
  profile: [],
  passive: false,
  host_policy: '',
});

/** An ONNX Runtime model named 'm' with no tensors, changed by `more`. */
export function modelConfig(more: Partial<ModelConfig> = {}): ModelConfig {
  return {
    name: 'm',
    platform: 'onnxruntime_onnx',
    backend: 'onnxruntime',
    runtime: '',
    version_policy: { latest: { num_versions: 1 } },
    max_batch_size: 0,
    input: [],
    output: [],
    instance_group: [],
    default_model_filename: 'model.onnx',
    cc_model_filenames: {},
    metric_tags: {},
    parameters: {},
    model_warmup: [],
    model_transaction_policy: { decoupled: false },
    ...more,
  };
}
