// Fully normalized config pieces, as the config layer returns them, for exact comparisons.
import type { InstanceGroupConfig, ModelOptimizationPolicy, ModelTensorConfig } from '../../../../src/contracts/model-config.js';

export const input = (name: string, data_type: ModelTensorConfig['data_type'], dims: number[], extra: Partial<ModelTensorConfig> = {}): ModelTensorConfig => ({
  name, data_type, format: 'FORMAT_NONE', dims, is_shape_tensor: false, allow_ragged_batch: false, optional: false, is_non_linear_format_io: false, ...extra,
});

export const output = (name: string, data_type: ModelTensorConfig['data_type'], dims: number[], extra: Partial<ModelTensorConfig> = {}): ModelTensorConfig => ({
  name, data_type, dims, label_filename: '', is_shape_tensor: false, is_non_linear_format_io: false, ...extra,
});

export const group = (name: string, kind: InstanceGroupConfig['kind'], count: number, gpus: number[] = []): InstanceGroupConfig => ({
  name, kind, count, gpus, secondary_devices: [], profile: [], passive: false, host_policy: '',
});

export const DEFAULT_OPTIMIZATION: ModelOptimizationPolicy = {
  priority: 'PRIORITY_DEFAULT', input_pinned_memory: { enable: true }, output_pinned_memory: { enable: true }, gather_kernel_buffer_threshold: 0, eager_batching: false,
};

/** The fields every normalized config has that these tests do not vary. */
export const COMMON = {
  runtime: '', version_policy: { latest: { num_versions: 1 } }, optimization: DEFAULT_OPTIMIZATION,
  cc_model_filenames: {}, metric_tags: {}, model_warmup: [], model_transaction_policy: { decoupled: false },
};
