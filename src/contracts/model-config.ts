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
  /** TensorRT-only in Triton; parsed and echoed. */
  is_non_linear_format_io?: boolean;
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
  // Parsed and echoed; Conveyor does not act on these yet.
  rate_limiter?: { resources: { name: string; global: boolean; count: number }[]; priority: number };
  secondary_devices?: { kind: 'KIND_NVDLA'; device_id: number }[];
  profile?: string[];
  passive?: boolean;
  host_policy?: string;
}

/** Shape of one input in a CUDA graph spec (without the batch dimension). */
export interface CudaGraphShape { dim: number[] }

export interface ExecutionAccelerator {
  name: string;
  parameters: Record<string, string>;
}

/** ModelOptimizationPolicy: parsed and echoed; the session factory may read graph/accelerators. */
export interface ModelOptimizationPolicy {
  /** -1 = disabled (basic only for ORT), 0 = framework default, 1+ = that level. */
  graph?: { level: number };
  priority: 'PRIORITY_DEFAULT' | 'PRIORITY_MAX' | 'PRIORITY_MIN';
  cuda?: {
    graphs: boolean;
    busy_wait_events: boolean;
    graph_spec: {
      batch_size: number;
      input: Record<string, CudaGraphShape>;
      graph_lower_bound?: { batch_size: number; input: Record<string, CudaGraphShape> };
    }[];
    output_copy_stream: boolean;
  };
  execution_accelerators?: {
    gpu_execution_accelerator: ExecutionAccelerator[];
    cpu_execution_accelerator: ExecutionAccelerator[];
  };
  input_pinned_memory?: { enable: boolean };
  output_pinned_memory?: { enable: boolean };
  gather_kernel_buffer_threshold: number;
  eager_batching: boolean;
}

/** One warmup input; exactly one of zero_data / random_data / input_data_file is set. */
export interface WarmupInput {
  data_type: ConfigDataType;
  /** Without the batch dimension. */
  dims: number[];
  zero_data?: boolean;
  random_data?: boolean;
  /** Relative to the model's warmup/ directory. */
  input_data_file?: string;
}

export interface ModelWarmup {
  name: string;
  /** ≥ 1; 1 for models with max_batch_size 0. */
  batch_size: number;
  inputs: Record<string, WarmupInput>;
  /** Extra executions of this sample; 0 = once. */
  count: number;
}

/** ModelMetrics: per-model histogram bucket overrides (seconds or as the metric family defines). */
export interface ModelMetricsConfig {
  metric_control: {
    metric_identifier?: { family: string };
    histogram_options?: { buckets: number[] };
  }[];
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
  // Fields below are parsed from config.pbtxt and echoed by the config endpoint.
  /** Backend library file name (Triton `runtime`); empty = the backend's default. */
  runtime?: string;
  optimization?: ModelOptimizationPolicy;
  /** CUDA compute capability → model file name in the version directory. */
  cc_model_filenames?: Record<string, string>;
  /** Extra labels for this model's metrics. */
  metric_tags?: Record<string, string>;
  model_warmup?: ModelWarmup[];
  response_cache?: { enable: boolean };
  model_metrics?: ModelMetricsConfig;
}
