// Wire compatibility with Triton clients rests on field numbers and types. This pins them to
// shared/reference/triton-protocol.md §1, §2 and §4, so an edit to protos/ cannot drift silently.
import { join } from 'node:path';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';

const PROTOS = join(import.meta.dirname, '..', '..', '..', '..', 'protos');

function load(file: string): protobuf.Root {
  return new protobuf.Root().loadSync(join(PROTOS, file), { keepCase: true });
}

/** Each field as "<number> [repeated ]<type>" or "<number> map<key,value>", keyed by name. */
function fieldsOf(root: protobuf.Root, message: string): Record<string, string> {
  const type = root.lookupType(message);
  return Object.fromEntries(
    type.fieldsArray.map((f) => {
      const kind = f.map ? `map<${(f as unknown as protobuf.MapField).keyType},${f.type}>` : `${f.repeated ? 'repeated ' : ''}${f.type}`;
      return [f.name, `${f.id} ${kind}`];
    }),
  );
}

const STAT = 'StatisticDuration';

const GRPC_SERVICE_MESSAGES: Record<string, Record<string, string>> = {
  ServerLiveResponse: { live: '1 bool' },
  ServerReadyResponse: { ready: '1 bool' },
  ModelReadyRequest: { name: '1 string', version: '2 string' },
  ModelReadyResponse: { ready: '1 bool' },
  ServerMetadataResponse: { name: '1 string', version: '2 string', extensions: '3 repeated string' },
  ModelMetadataRequest: { name: '1 string', version: '2 string' },
  // parameters (6) and ModelIndex.precision (5) are Conveyor's, past Triton's numbers: a Triton client skips them as unknown fields.
  ModelMetadataResponse: {
    name: '1 string',
    versions: '2 repeated string',
    platform: '3 string',
    inputs: '4 repeated TensorMetadata',
    outputs: '5 repeated TensorMetadata',
    parameters: '6 map<string,InferParameter>',
  },
  'ModelMetadataResponse.TensorMetadata': { name: '1 string', datatype: '2 string', shape: '3 repeated int64' },
  InferParameter: { bool_param: '1 bool', int64_param: '2 int64', string_param: '3 string', double_param: '4 double', uint64_param: '5 uint64' },
  InferTensorContents: {
    bool_contents: '1 repeated bool',
    int_contents: '2 repeated int32',
    int64_contents: '3 repeated int64',
    uint_contents: '4 repeated uint32',
    uint64_contents: '5 repeated uint64',
    fp32_contents: '6 repeated float',
    fp64_contents: '7 repeated double',
    bytes_contents: '8 repeated bytes',
  },
  ModelInferRequest: {
    model_name: '1 string',
    model_version: '2 string',
    id: '3 string',
    parameters: '4 map<string,InferParameter>',
    inputs: '5 repeated InferInputTensor',
    outputs: '6 repeated InferRequestedOutputTensor',
    raw_input_contents: '7 repeated bytes',
  },
  'ModelInferRequest.InferInputTensor': { name: '1 string', datatype: '2 string', shape: '3 repeated int64', parameters: '4 map<string,InferParameter>', contents: '5 InferTensorContents' },
  'ModelInferRequest.InferRequestedOutputTensor': { name: '1 string', parameters: '2 map<string,InferParameter>' },
  ModelInferResponse: {
    model_name: '1 string',
    model_version: '2 string',
    id: '3 string',
    parameters: '4 map<string,InferParameter>',
    outputs: '5 repeated InferOutputTensor',
    raw_output_contents: '6 repeated bytes',
  },
  'ModelInferResponse.InferOutputTensor': { name: '1 string', datatype: '2 string', shape: '3 repeated int64', parameters: '4 map<string,InferParameter>', contents: '5 InferTensorContents' },
  ModelStreamInferResponse: { error_message: '1 string', infer_response: '2 ModelInferResponse' },
  ModelConfigRequest: { name: '1 string', version: '2 string' },
  ModelConfigResponse: { config: '1 ModelConfig' },
  ModelStatisticsRequest: { name: '1 string', version: '2 string' },
  ModelStatisticsResponse: { model_stats: '1 repeated ModelStatistics' },
  StatisticDuration: { count: '1 uint64', ns: '2 uint64' },
  InferStatistics: {
    success: `1 ${STAT}`,
    fail: `2 ${STAT}`,
    queue: `3 ${STAT}`,
    compute_input: `4 ${STAT}`,
    compute_infer: `5 ${STAT}`,
    compute_output: `6 ${STAT}`,
    cache_hit: `7 ${STAT}`,
    cache_miss: `8 ${STAT}`,
  },
  InferResponseStatistics: {
    compute_infer: `1 ${STAT}`,
    compute_output: `2 ${STAT}`,
    success: `3 ${STAT}`,
    fail: `4 ${STAT}`,
    empty_response: `5 ${STAT}`,
    cancel: `6 ${STAT}`,
  },
  InferBatchStatistics: { batch_size: '1 uint64', compute_input: `2 ${STAT}`, compute_infer: `3 ${STAT}`, compute_output: `4 ${STAT}` },
  MemoryUsage: { type: '1 string', id: '2 int64', byte_size: '3 uint64' },
  ModelStatistics: {
    name: '1 string',
    version: '2 string',
    last_inference: '3 uint64',
    inference_count: '4 uint64',
    execution_count: '5 uint64',
    inference_stats: '6 InferStatistics',
    batch_stats: '7 repeated InferBatchStatistics',
    memory_usage: '8 repeated MemoryUsage',
    response_stats: '9 map<string,InferResponseStatistics>',
  },
  ModelRepositoryParameter: { bool_param: '1 bool', int64_param: '2 int64', string_param: '3 string', bytes_param: '4 bytes' },
  RepositoryIndexRequest: { repository_name: '1 string', ready: '2 bool' },
  RepositoryIndexResponse: { models: '1 repeated ModelIndex' },
  'RepositoryIndexResponse.ModelIndex': { name: '1 string', version: '2 string', state: '3 string', reason: '4 string', precision: '5 string' },
  RepositoryModelLoadRequest: { repository_name: '1 string', model_name: '2 string', parameters: '3 map<string,ModelRepositoryParameter>' },
  RepositoryModelUnloadRequest: { repository_name: '1 string', model_name: '2 string', parameters: '3 map<string,ModelRepositoryParameter>' },
};

const MODEL_CONFIG_FIELDS: Record<string, string> = {
  name: '1 string',
  platform: '2 string',
  version_policy: '3 ModelVersionPolicy',
  max_batch_size: '4 int32',
  input: '5 repeated ModelInput',
  output: '6 repeated ModelOutput',
  instance_group: '7 repeated ModelInstanceGroup',
  default_model_filename: '8 string',
  cc_model_filenames: '9 map<string,string>',
  metric_tags: '10 map<string,string>',
  dynamic_batching: '11 ModelDynamicBatching',
  optimization: '12 ModelOptimizationPolicy',
  sequence_batching: '13 ModelSequenceBatching',
  parameters: '14 map<string,ModelParameter>',
  ensemble_scheduling: '15 ModelEnsembling',
  model_warmup: '16 repeated ModelWarmup',
  backend: '17 string',
  model_transaction_policy: '19 ModelTransactionPolicy',
  response_cache: '24 ModelResponseCache',
  runtime: '25 string',
  model_metrics: '26 ModelMetrics',
};

describe('protos/grpc_service.proto matches Triton', () => {
  const root = load('grpc_service.proto');

  it('is package inference, service GRPCInferenceService with every RPC', () => {
    const service = root.lookupService('inference.GRPCInferenceService');
    const rpcs = service.methodsArray.map((m) => `${m.name}${m.requestStream ? ' stream>' : ''}${m.responseStream ? ' >stream' : ''}`);
    expect(rpcs).toEqual([
      'ServerLive',
      'ServerReady',
      'ModelReady',
      'ServerMetadata',
      'ModelMetadata',
      'ModelInfer',
      'ModelStreamInfer stream> >stream',
      'ModelConfig',
      'ModelStatistics',
      'RepositoryIndex',
      'RepositoryModelLoad',
      'RepositoryModelUnload',
      'SystemSharedMemoryStatus',
      'SystemSharedMemoryRegister',
      'SystemSharedMemoryUnregister',
      'CudaSharedMemoryStatus',
      'CudaSharedMemoryRegister',
      'CudaSharedMemoryUnregister',
      'TraceSetting',
      'LogSettings',
    ]);
    expect(service.methods['ModelStreamInfer']!.responseType).toBe('ModelStreamInferResponse');
  });

  it.each(Object.entries(GRPC_SERVICE_MESSAGES))('%s', (message, fields) => {
    expect(fieldsOf(root, `inference.${message}`)).toEqual(fields);
  });

  it('keeps the parameter members in oneofs', () => {
    expect(root.lookupType('inference.InferParameter').oneofs?.['parameter_choice']?.fieldsArray.map((f) => f.id)).toEqual([1, 2, 3, 4, 5]);
    expect(root.lookupType('inference.ModelRepositoryParameter').oneofs?.['parameter_choice']?.fieldsArray.map((f) => f.id)).toEqual([1, 2, 3, 4]);
  });
});

describe('protos/model_config.proto matches Triton', () => {
  const root = load('model_config.proto');

  it('ModelConfig top-level fields', () => {
    const fields = fieldsOf(root, 'inference.ModelConfig');
    expect(Object.fromEntries(Object.keys(MODEL_CONFIG_FIELDS).map((k) => [k, fields[k]]))).toEqual(MODEL_CONFIG_FIELDS);
  });

  it('DataType enum', () => {
    expect(root.lookupEnum('inference.DataType').values).toEqual({
      TYPE_INVALID: 0,
      TYPE_BOOL: 1,
      TYPE_UINT8: 2,
      TYPE_UINT16: 3,
      TYPE_UINT32: 4,
      TYPE_UINT64: 5,
      TYPE_INT8: 6,
      TYPE_INT16: 7,
      TYPE_INT32: 8,
      TYPE_INT64: 9,
      TYPE_FP16: 10,
      TYPE_FP32: 11,
      TYPE_FP64: 12,
      TYPE_STRING: 13,
      TYPE_BF16: 14,
    });
  });

  it('tensors, instance groups, version policy and batching', () => {
    expect(fieldsOf(root, 'inference.ModelInput')).toMatchObject({
      name: '1 string',
      data_type: '2 DataType',
      format: '3 Format',
      dims: '4 repeated int64',
      reshape: '5 ModelTensorReshape',
      is_shape_tensor: '6 bool',
      allow_ragged_batch: '7 bool',
      optional: '8 bool',
    });
    expect(fieldsOf(root, 'inference.ModelOutput')).toMatchObject({
      name: '1 string',
      data_type: '2 DataType',
      dims: '3 repeated int64',
      label_filename: '4 string',
      reshape: '5 ModelTensorReshape',
      is_shape_tensor: '6 bool',
    });
    expect(fieldsOf(root, 'inference.ModelInstanceGroup')).toMatchObject({ name: '1 string', count: '2 int32', gpus: '3 repeated int32', kind: '4 Kind' });
    expect(root.lookupEnum('inference.ModelInstanceGroup.Kind').values).toEqual({ KIND_AUTO: 0, KIND_GPU: 1, KIND_CPU: 2, KIND_MODEL: 3 });
    expect(fieldsOf(root, 'inference.ModelVersionPolicy')).toEqual({ latest: '1 Latest', all: '2 All', specific: '3 Specific' });
    expect(fieldsOf(root, 'inference.ModelDynamicBatching')).toEqual({
      preferred_batch_size: '1 repeated int32',
      max_queue_delay_microseconds: '2 uint64',
      preserve_ordering: '3 bool',
      priority_levels: '4 uint64',
      default_priority_level: '5 uint64',
      default_queue_policy: '6 ModelQueuePolicy',
      priority_queue_policy: '7 map<uint64,ModelQueuePolicy>',
    });
    expect(fieldsOf(root, 'inference.ModelQueuePolicy')).toEqual({
      timeout_action: '1 TimeoutAction',
      default_timeout_microseconds: '2 uint64',
      allow_timeout_override: '3 bool',
      max_queue_size: '4 uint32',
    });
    expect(root.lookupEnum('inference.ModelQueuePolicy.TimeoutAction').values).toEqual({ REJECT: 0, DELAY: 1 });
    expect(fieldsOf(root, 'inference.ModelParameter')).toEqual({ string_value: '1 string' });
    expect(fieldsOf(root, 'inference.ModelEnsembling.Step')).toEqual({
      model_name: '1 string',
      model_version: '2 int64',
      input_map: '3 map<string,string>',
      output_map: '4 map<string,string>',
      model_namespace: '5 string',
    });
    expect(fieldsOf(root, 'inference.ModelTransactionPolicy')).toEqual({ decoupled: '1 bool' });
  });

  it('the echoed-only parts: optimization, warmup, metrics, rate limiter', () => {
    expect(fieldsOf(root, 'inference.ModelOptimizationPolicy')).toEqual({
      graph: '1 Graph',
      priority: '2 ModelPriority',
      cuda: '3 Cuda',
      execution_accelerators: '4 ExecutionAccelerators',
      input_pinned_memory: '5 PinnedMemoryBuffer',
      output_pinned_memory: '6 PinnedMemoryBuffer',
      gather_kernel_buffer_threshold: '7 uint32',
      eager_batching: '8 bool',
    });
    expect(root.lookupEnum('inference.ModelOptimizationPolicy.ModelPriority').values).toEqual({ PRIORITY_DEFAULT: 0, PRIORITY_MAX: 1, PRIORITY_MIN: 2 });
    expect(fieldsOf(root, 'inference.ModelWarmup')).toEqual({ name: '1 string', batch_size: '2 uint32', inputs: '3 map<string,Input>', count: '4 uint32' });
    expect(fieldsOf(root, 'inference.ModelWarmup.Input')).toEqual({
      data_type: '1 DataType',
      dims: '2 repeated int64',
      zero_data: '3 bool',
      random_data: '4 bool',
      input_data_file: '5 string',
    });
    expect(fieldsOf(root, 'inference.ModelMetrics.MetricControl')).toEqual({ metric_identifier: '1 MetricIdentifier', histogram_options: '2 HistogramOptions' });
    expect(fieldsOf(root, 'inference.ModelInstanceGroup')).toMatchObject({ rate_limiter: '6 ModelRateLimiter', secondary_devices: '8 repeated SecondaryDevice' });
    expect(fieldsOf(root, 'inference.ModelRateLimiter.Resource')).toEqual({ name: '1 string', global: '2 bool', count: '3 uint32' });
  });
});

describe('protos/health.proto is grpc.health.v1', () => {
  const root = load('health.proto');

  it('Check and Watch with the standard messages', () => {
    const service = root.lookupService('grpc.health.v1.Health');
    expect(service.methodsArray.map((m) => `${m.name}${m.responseStream ? ' >stream' : ''}`)).toEqual(['Check', 'Watch >stream']);
    expect(fieldsOf(root, 'grpc.health.v1.HealthCheckRequest')).toEqual({ service: '1 string' });
    expect(fieldsOf(root, 'grpc.health.v1.HealthCheckResponse')).toEqual({ status: '1 ServingStatus' });
    expect(root.lookupEnum('grpc.health.v1.HealthCheckResponse.ServingStatus').values).toEqual({ UNKNOWN: 0, SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3 });
  });
});
