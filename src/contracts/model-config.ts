// Triton's ModelConfig (model_config.proto) as plain data, with proto field names in snake_case
// so the config JSON endpoint can print it as Triton does. Only fields Conveyor reads or echoes.

export type ConfigDataType =
  | 'TYPE_INVALID' | 'TYPE_BOOL' | 'TYPE_UINT8' | 'TYPE_UINT16' | 'TYPE_UINT32' | 'TYPE_UINT64'
  | 'TYPE_INT8' | 'TYPE_INT16' | 'TYPE_INT32' | 'TYPE_INT64'
  | 'TYPE_FP16' | 'TYPE_FP32' | 'TYPE_FP64' | 'TYPE_STRING' | 'TYPE_BF16';

export interface ModelTensorConfig {
  name: string;
  data_type: ConfigDataType;
  format?: 'FORMAT_NONE' | 'FORMAT_NHWC' | 'FORMAT_NCHW';
  /** Without the batch dimension when max_batch_size > 0; -1 = variable. */
  dims: number[];
  reshape?: { shape: number[] };
  is_shape_tensor?: boolean;
  allow_ragged_batch?: boolean;
  optional?: boolean;
  label_filename?: string;
}

export interface QueuePolicy {
  timeout_action: 'REJECT' | 'DELAY';
  default_timeout_microseconds: number;
  allow_timeout_override: boolean;
  max_queue_size: number;
}

export interface DynamicBatchingConfig {
  preferred_batch_size: number[];
  max_queue_delay_microseconds: number;
  preserve_ordering: boolean;
  priority_levels: number;
  default_priority_level: number;
  default_queue_policy?: QueuePolicy;
  priority_queue_policy: Record<string, QueuePolicy>;
}

export interface InstanceGroupConfig {
  name: string;
  count: number;
  kind: 'KIND_AUTO' | 'KIND_GPU' | 'KIND_CPU' | 'KIND_MODEL';
  gpus: number[];
}

export type VersionPolicy =
  | { latest: { num_versions: number } }
  | { all: Record<string, never> }
  | { specific: { versions: number[] } };

export interface ModelConfig {
  name: string;
  platform: string;
  backend: string;
  version_policy: VersionPolicy;
  max_batch_size: number;
  input: ModelTensorConfig[];
  output: ModelTensorConfig[];
  instance_group: InstanceGroupConfig[];
  default_model_filename: string;
  dynamic_batching?: DynamicBatchingConfig;
  parameters: Record<string, { string_value: string }>;
  model_transaction_policy: { decoupled: boolean };
}
