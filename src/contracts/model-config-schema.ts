// model_config.proto (Triton's ModelConfig) declared once: the config decoder and the JSON
// printer walk this value, and model-config.ts reads the ModelConfig type off it. Field names,
// types, labels and declaration order follow the proto (test/unit/contracts/model-config-schema
// .test.ts checks them against protos/model_config.proto); messages Conveyor only parses to reject
// (sequence_batching, batch_input, …) are described too, so that mistakes
// inside them are reported as precisely as anywhere else.
import { CONFIG_DATA_TYPES } from './datatypes.js';
import { enumType, mapOf, messageType, repeated, single } from './proto-schema.js';

/** TYPE_INVALID, then the tensor datatypes' names from the one table (src/contracts/datatypes.ts), in the proto's order. */
export const DATA_TYPE = enumType('DataType', ['TYPE_INVALID', ...CONFIG_DATA_TYPES]);
const KIND = enumType('ModelInstanceGroup.Kind', ['KIND_AUTO', 'KIND_GPU', 'KIND_CPU', 'KIND_MODEL']);
const FORMAT = enumType('ModelInput.Format', ['FORMAT_NONE', 'FORMAT_NHWC', 'FORMAT_NCHW']);

const RATE_LIMITER = messageType('ModelRateLimiter', [
  repeated('resources', messageType('ModelRateLimiter.Resource', [single('name', 'string'), single('global', 'bool'), single('count', 'uint32')])),
  single('priority', 'uint32'),
]);

const INSTANCE_GROUP = messageType('ModelInstanceGroup', [
  single('name', 'string'),
  single('kind', KIND),
  single('count', 'int32'),
  single('rate_limiter', RATE_LIMITER),
  repeated('gpus', 'int32'),
  repeated(
    'secondary_devices',
    messageType('ModelInstanceGroup.SecondaryDevice', [single('kind', enumType('ModelInstanceGroup.SecondaryDevice.SecondaryDeviceKind', ['KIND_NVDLA'])), single('device_id', 'int64')]),
  ),
  repeated('profile', 'string'),
  single('passive', 'bool'),
  single('host_policy', 'string'),
]);

const RESHAPE = messageType('ModelTensorReshape', [repeated('shape', 'int64')]);

const INPUT = messageType('ModelInput', [
  single('name', 'string'),
  single('data_type', DATA_TYPE),
  single('format', FORMAT),
  repeated('dims', 'int64'),
  single('reshape', RESHAPE),
  single('is_shape_tensor', 'bool'),
  single('allow_ragged_batch', 'bool'),
  single('optional', 'bool'),
  single('is_non_linear_format_io', 'bool'),
]);

const OUTPUT = messageType('ModelOutput', [
  single('name', 'string'),
  single('data_type', DATA_TYPE),
  repeated('dims', 'int64'),
  single('reshape', RESHAPE),
  single('label_filename', 'string'),
  single('is_shape_tensor', 'bool'),
  single('is_non_linear_format_io', 'bool'),
]);

const BATCH_INPUT = messageType('BatchInput', [
  single(
    'kind',
    enumType('BatchInput.Kind', [
      'BATCH_ELEMENT_COUNT',
      'BATCH_ACCUMULATED_ELEMENT_COUNT',
      'BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO',
      'BATCH_MAX_ELEMENT_COUNT_AS_SHAPE',
      'BATCH_ITEM_SHAPE',
      'BATCH_ITEM_SHAPE_FLATTEN',
    ]),
  ),
  repeated('target_name', 'string'),
  single('data_type', DATA_TYPE),
  repeated('source_input', 'string'),
]);

const BATCH_OUTPUT = messageType('BatchOutput', [
  repeated('target_name', 'string'),
  single('kind', enumType('BatchOutput.Kind', ['BATCH_SCATTER_WITH_INPUT_SHAPE'])),
  repeated('source_input', 'string'),
]);

const VERSION_POLICY = messageType('ModelVersionPolicy', [
  single('latest', messageType('ModelVersionPolicy.Latest', [single('num_versions', 'uint32')]), 'policy_choice'),
  single('all', messageType('ModelVersionPolicy.All', []), 'policy_choice'),
  single('specific', messageType('ModelVersionPolicy.Specific', [repeated('versions', 'int64')]), 'policy_choice'),
]);

const GRAPH_SHAPE = messageType('ModelOptimizationPolicy.Cuda.GraphSpec.Shape', [repeated('dim', 'int64')]);
const ACCELERATOR = messageType('ModelOptimizationPolicy.ExecutionAccelerators.Accelerator', [single('name', 'string'), mapOf('parameters', 'string', 'string')]);
const PINNED = messageType('ModelOptimizationPolicy.PinnedMemoryBuffer', [single('enable', 'bool')]);

const OPTIMIZATION = messageType('ModelOptimizationPolicy', [
  single('graph', messageType('ModelOptimizationPolicy.Graph', [single('level', 'int32')])),
  single('priority', enumType('ModelOptimizationPolicy.ModelPriority', ['PRIORITY_DEFAULT', 'PRIORITY_MAX', 'PRIORITY_MIN'])),
  single(
    'cuda',
    messageType('ModelOptimizationPolicy.Cuda', [
      single('graphs', 'bool'),
      single('busy_wait_events', 'bool'),
      repeated(
        'graph_spec',
        messageType('ModelOptimizationPolicy.Cuda.GraphSpec', [
          single('batch_size', 'int32'),
          mapOf('input', 'string', GRAPH_SHAPE),
          single('graph_lower_bound', messageType('ModelOptimizationPolicy.Cuda.GraphSpec.LowerBound', [single('batch_size', 'int32'), mapOf('input', 'string', GRAPH_SHAPE)])),
        ]),
      ),
      single('output_copy_stream', 'bool'),
    ]),
  ),
  single(
    'execution_accelerators',
    messageType('ModelOptimizationPolicy.ExecutionAccelerators', [repeated('gpu_execution_accelerator', ACCELERATOR), repeated('cpu_execution_accelerator', ACCELERATOR)]),
  ),
  single('input_pinned_memory', PINNED),
  single('output_pinned_memory', PINNED),
  single('gather_kernel_buffer_threshold', 'uint32'),
  single('eager_batching', 'bool'),
]);

const QUEUE_POLICY = messageType('ModelQueuePolicy', [
  single('timeout_action', enumType('ModelQueuePolicy.TimeoutAction', ['REJECT', 'DELAY'])),
  single('default_timeout_microseconds', 'uint64'),
  single('allow_timeout_override', 'bool'),
  single('max_queue_size', 'uint32'),
]);

const DYNAMIC_BATCHING = messageType('ModelDynamicBatching', [
  repeated('preferred_batch_size', 'int32'),
  single('max_queue_delay_microseconds', 'uint64'),
  single('preserve_ordering', 'bool'),
  single('priority_levels', 'uint64'),
  single('default_priority_level', 'uint64'),
  single('default_queue_policy', QUEUE_POLICY),
  mapOf('priority_queue_policy', 'uint64', QUEUE_POLICY),
]);

const SEQUENCE_CONTROL = messageType('ModelSequenceBatching.Control', [
  single('kind', enumType('ModelSequenceBatching.Control.Kind', ['CONTROL_SEQUENCE_START', 'CONTROL_SEQUENCE_READY', 'CONTROL_SEQUENCE_END', 'CONTROL_SEQUENCE_CORRID'])),
  repeated('int32_false_true', 'int32'),
  repeated('fp32_false_true', 'float'),
  repeated('bool_false_true', 'bool'),
  single('data_type', DATA_TYPE),
]);

const SEQUENCE_STATE = messageType('ModelSequenceBatching.State', [
  single('input_name', 'string'),
  single('output_name', 'string'),
  single('data_type', DATA_TYPE),
  repeated('dims', 'int64'),
  repeated(
    'initial_state',
    messageType('ModelSequenceBatching.InitialState', [
      single('data_type', DATA_TYPE),
      repeated('dims', 'int64'),
      single('zero_data', 'bool', 'state_data'),
      single('data_file', 'string', 'state_data'),
      single('name', 'string'),
    ]),
  ),
  single('use_same_buffer_for_input_output', 'bool'),
  single('use_growable_memory', 'bool'),
]);

const SEQUENCE_BATCHING = messageType('ModelSequenceBatching', [
  single('direct', messageType('ModelSequenceBatching.StrategyDirect', [single('max_queue_delay_microseconds', 'uint64'), single('minimum_slot_utilization', 'float')]), 'strategy_choice'),
  single(
    'oldest',
    messageType('ModelSequenceBatching.StrategyOldest', [
      single('max_candidate_sequences', 'int32'),
      repeated('preferred_batch_size', 'int32'),
      single('max_queue_delay_microseconds', 'uint64'),
      single('preserve_ordering', 'bool'),
    ]),
    'strategy_choice',
  ),
  single('max_sequence_idle_microseconds', 'uint64'),
  repeated('control_input', messageType('ModelSequenceBatching.ControlInput', [single('name', 'string'), repeated('control', SEQUENCE_CONTROL)])),
  repeated('state', SEQUENCE_STATE),
  single('iterative_sequence', 'bool'),
]);

const ENSEMBLE = messageType('ModelEnsembling', [
  repeated(
    'step',
    messageType('ModelEnsembling.Step', [
      single('model_name', 'string'),
      single('model_version', 'int64'),
      mapOf('input_map', 'string', 'string'),
      mapOf('output_map', 'string', 'string'),
      single('model_namespace', 'string'),
    ]),
  ),
  single('max_inflight_requests', 'uint32'),
]);

const WARMUP = messageType('ModelWarmup', [
  single('name', 'string'),
  single('batch_size', 'uint32'),
  mapOf(
    'inputs',
    'string',
    messageType('ModelWarmup.Input', [
      single('data_type', DATA_TYPE),
      repeated('dims', 'int64'),
      single('zero_data', 'bool', 'input_data_type'),
      single('random_data', 'bool', 'input_data_type'),
      single('input_data_file', 'string', 'input_data_type'),
    ]),
  ),
  single('count', 'uint32'),
]);

const METRICS = messageType('ModelMetrics', [
  repeated(
    'metric_control',
    messageType('ModelMetrics.MetricControl', [
      single('metric_identifier', messageType('ModelMetrics.MetricControl.MetricIdentifier', [single('family', 'string')])),
      single('histogram_options', messageType('ModelMetrics.MetricControl.HistogramOptions', [repeated('buckets', 'double')]), 'metric_options'),
    ]),
  ),
]);

export const MODEL_CONFIG = messageType('ModelConfig', [
  single('name', 'string'),
  single('platform', 'string'),
  single('backend', 'string'),
  single('runtime', 'string'),
  single('version_policy', VERSION_POLICY),
  single('max_batch_size', 'int32'),
  repeated('input', INPUT),
  repeated('output', OUTPUT),
  repeated('batch_input', BATCH_INPUT),
  repeated('batch_output', BATCH_OUTPUT),
  single('optimization', OPTIMIZATION),
  single('dynamic_batching', DYNAMIC_BATCHING, 'scheduling_choice'),
  single('sequence_batching', SEQUENCE_BATCHING, 'scheduling_choice'),
  single('ensemble_scheduling', ENSEMBLE, 'scheduling_choice'),
  repeated('instance_group', INSTANCE_GROUP),
  single('default_model_filename', 'string'),
  mapOf('cc_model_filenames', 'string', 'string'),
  mapOf('metric_tags', 'string', 'string'),
  mapOf('parameters', 'string', messageType('ModelParameter', [single('string_value', 'string')])),
  repeated('model_warmup', WARMUP),
  single('model_operations', messageType('ModelOperations', [repeated('op_library_filename', 'string')])),
  single('model_transaction_policy', messageType('ModelTransactionPolicy', [single('decoupled', 'bool')])),
  single(
    'model_repository_agents',
    messageType('ModelRepositoryAgents', [repeated('agents', messageType('ModelRepositoryAgents.Agent', [single('name', 'string'), mapOf('parameters', 'string', 'string')]))]),
  ),
  single('response_cache', messageType('ModelResponseCache', [single('enable', 'bool')])),
  single('model_metrics', METRICS),
]);

/**
 * Top-level fields Conveyor parses but cannot serve yet; a config that sets one is refused with
 * UNSUPPORTED instead of being served with the setting silently ignored.
 */
export const UNSUPPORTED_FIELDS = ['sequence_batching', 'batch_input', 'batch_output', 'model_operations', 'model_repository_agents'] as const;
