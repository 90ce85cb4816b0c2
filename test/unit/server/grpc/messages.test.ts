// The handlers pass the contract's ModelConfig, ModelStatistics and metadata objects straight to
// the proto serializers; these tests prove those shapes encode to the intended proto fields.
import { describe, expect, it } from 'vitest';
import type { ModelMetadata, ModelStatistics } from '../../../../src/contracts/inference-service.js';
import type { ModelConfig } from '../../../../src/contracts/model-config.js';
import { parametersToWire } from '../../../../src/server/grpc/infer-codec.js';
import { loadOverrideFromWire, unloadOptionsFromWire } from '../../../../src/server/grpc/repository-codec.js';
import { loadServiceDefinitions } from '../../../../src/server/kit/grpc/protos.js';
import { ConveyorError } from '../../../../src/errors.js';
import { group, input, modelConfig, output } from '../../../support/model-config.js';

const { inference } = loadServiceDefinitions();

function roundTrip(rpc: string, response: unknown): Record<string, unknown> {
  const method = inference[rpc]!;
  return method.responseDeserialize(method.responseSerialize(response)) as Record<string, unknown>;
}

const duration = (count: number, ns: number) => ({ count, ns });

describe('ModelConfig response', () => {
  const config: ModelConfig = modelConfig({
    name: 'resnet',
    version_policy: { specific: { versions: [1, 3] } },
    max_batch_size: 8,
    input: [input('x', 'TYPE_FP32', [3, -1, -1], { format: 'FORMAT_NCHW' })],
    output: [output('label', 'TYPE_STRING', [1], { label_filename: 'labels.txt' })],
    instance_group: [group('g', 'KIND_CPU', 2)],
    dynamic_batching: {
      preferred_batch_size: [4, 8],
      max_queue_delay_microseconds: 500,
      preserve_ordering: false,
      priority_levels: 2,
      default_priority_level: 1,
      default_queue_policy: { timeout_action: 'DELAY', default_timeout_microseconds: 1000, allow_timeout_override: true, max_queue_size: 16 },
      priority_queue_policy: {},
    },
    parameters: { intra_op_thread_count: { string_value: '1' } },
  });

  it('encodes every contract field into the proto message', () => {
    const decoded = roundTrip('ModelConfig', { config })['config'] as Record<string, unknown>;
    expect(decoded).toMatchObject({
      name: 'resnet',
      platform: 'onnxruntime_onnx',
      backend: 'onnxruntime',
      max_batch_size: 8,
      default_model_filename: 'model.onnx',
      version_policy: { specific: { versions: ['1', '3'] }, policy_choice: 'specific' },
      input: [{ name: 'x', data_type: 'TYPE_FP32', format: 'FORMAT_NCHW', dims: ['3', '-1', '-1'] }],
      output: [{ name: 'label', data_type: 'TYPE_STRING', dims: ['1'], label_filename: 'labels.txt' }],
      instance_group: [{ name: 'g', count: 2, kind: 'KIND_CPU', gpus: [] }],
      scheduling_choice: 'dynamic_batching',
      dynamic_batching: {
        preferred_batch_size: [4, 8],
        max_queue_delay_microseconds: '500',
        priority_levels: '2',
        default_priority_level: '1',
        default_queue_policy: { timeout_action: 'DELAY', default_timeout_microseconds: '1000', allow_timeout_override: true, max_queue_size: 16 },
      },
      parameters: { intra_op_thread_count: { string_value: '1' } },
      model_transaction_policy: { decoupled: false },
    });
  });

  it('encodes the fields the config endpoint only echoes', () => {
    const extended: ModelConfig = {
      ...config,
      runtime: 'libtriton_onnxruntime.so',
      cc_model_filenames: { '8.0': 'model_a100.onnx' },
      metric_tags: { team: 'search' },
      optimization: {
        graph: { level: 1 },
        priority: 'PRIORITY_MAX',
        execution_accelerators: { gpu_execution_accelerator: [{ name: 'tensorrt', parameters: { precision_mode: 'FP16' } }], cpu_execution_accelerator: [] },
        input_pinned_memory: { enable: true },
        gather_kernel_buffer_threshold: 0,
        eager_batching: false,
      },
      model_warmup: [{ name: 'w', batch_size: 1, count: 0, inputs: { x: { data_type: 'TYPE_FP32', dims: [3, 8, 8], random_data: true } } }],
      response_cache: { enable: true },
      model_metrics: { metric_control: [{ metric_identifier: { family: 'nv_inference_first_response_histogram_ms' }, histogram_options: { buckets: [1, 10] } }] },
      instance_group: [{ ...group('g', 'KIND_GPU', 1, [0]), rate_limiter: { resources: [{ name: 'r', global: true, count: 2 }], priority: 1 } }],
    };
    const decoded = roundTrip('ModelConfig', { config: extended })['config'] as Record<string, unknown>;
    expect(decoded).toMatchObject({
      runtime: 'libtriton_onnxruntime.so',
      cc_model_filenames: { '8.0': 'model_a100.onnx' },
      metric_tags: { team: 'search' },
      optimization: {
        graph: { level: 1 },
        priority: 'PRIORITY_MAX',
        execution_accelerators: { gpu_execution_accelerator: [{ name: 'tensorrt', parameters: { precision_mode: 'FP16' } }] },
        input_pinned_memory: { enable: true },
      },
      model_warmup: [{ name: 'w', batch_size: 1, inputs: { x: { data_type: 'TYPE_FP32', dims: ['3', '8', '8'], random_data: true, input_data_type: 'random_data' } } }],
      response_cache: { enable: true },
      model_metrics: { metric_control: [{ metric_identifier: { family: 'nv_inference_first_response_histogram_ms' }, histogram_options: { buckets: [1, 10] } }] },
      instance_group: [{ kind: 'KIND_GPU', gpus: [0], rate_limiter: { resources: [{ name: 'r', global: true, count: 2 }], priority: 1 } }],
    });
  });

  it('encodes the latest and all version policies', () => {
    const latest = roundTrip('ModelConfig', { config: { ...config, version_policy: { latest: { num_versions: 2 } } } })['config'] as Record<string, unknown>;
    const all = roundTrip('ModelConfig', { config: { ...config, version_policy: { all: {} } } })['config'] as Record<string, unknown>;
    expect(latest['version_policy']).toMatchObject({ latest: { num_versions: 2 }, policy_choice: 'latest' });
    expect(all['version_policy']).toMatchObject({ all: {}, policy_choice: 'all' });
  });
});

describe('ModelStatistics and ModelMetadata responses', () => {
  it('encodes the contract statistics', () => {
    const stats: ModelStatistics = {
      name: 'm',
      version: '1',
      last_inference: 1_700_000_000_000,
      inference_count: 10,
      execution_count: 3,
      inference_stats: {
        success: duration(5, 1000),
        fail: duration(1, 10),
        queue: duration(5, 200),
        compute_input: duration(3, 30),
        compute_infer: duration(3, 600),
        compute_output: duration(3, 40),
        cache_hit: duration(0, 0),
        cache_miss: duration(0, 0),
      },
      batch_stats: [{ batch_size: 4, compute_input: duration(2, 20), compute_infer: duration(2, 400), compute_output: duration(2, 30) }],
      memory_usage: [{ type: 'CPU', id: 0, byte_size: 1024 }],
    };
    const decoded = roundTrip('ModelStatistics', { model_stats: [stats] });
    expect(decoded['model_stats']).toMatchObject([
      {
        name: 'm',
        version: '1',
        last_inference: '1700000000000',
        inference_count: '10',
        execution_count: '3',
        inference_stats: { success: { count: '5', ns: '1000' }, compute_infer: { count: '3', ns: '600' } },
        batch_stats: [{ batch_size: '4', compute_infer: { count: '2', ns: '400' } }],
        memory_usage: [{ type: 'CPU', id: '0', byte_size: '1024' }],
        response_stats: {},
      },
    ]);
  });

  it('encodes model metadata with -1 dimensions and the variant as string parameters', () => {
    const metadata: ModelMetadata = {
      name: 'm',
      versions: ['1', '2'],
      platform: 'onnxruntime_onnx',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 3] }],
      outputs: [{ name: 'y', datatype: 'INT64', shape: [-1] }],
      parameters: { precision: 'int8', model_file: 'model_quantized.onnx' },
    };
    expect(roundTrip('ModelMetadata', { ...metadata, parameters: parametersToWire({ ...metadata.parameters }) })).toEqual({
      name: 'm',
      versions: ['1', '2'],
      platform: 'onnxruntime_onnx',
      inputs: [{ name: 'x', datatype: 'FP32', shape: ['-1', '3'] }],
      outputs: [{ name: 'y', datatype: 'INT64', shape: ['-1'] }],
      parameters: { precision: { string_param: 'int8', parameter_choice: 'string_param' }, model_file: { string_param: 'model_quantized.onnx', parameter_choice: 'string_param' } },
    });
  });
});

describe('repository parameters', () => {
  const decodeLoad = (parameters: Record<string, unknown>) => {
    const method = inference['RepositoryModelLoad']!;
    return method.requestDeserialize(method.requestSerialize({ model_name: 'm', parameters })) as { parameters: Parameters<typeof loadOverrideFromWire>[0] };
  };

  it('reads config and file: overrides', () => {
    const wire = decodeLoad({ config: { string_param: '{"backend":"onnxruntime"}' }, 'file:1/model.onnx': { bytes_param: Uint8Array.from([1, 2, 3]) }, other: { bool_param: true } });
    const override = loadOverrideFromWire(wire.parameters);
    expect(override?.config).toBe('{"backend":"onnxruntime"}');
    expect(Object.keys(override?.files ?? {})).toEqual(['1/model.onnx']);
    expect([...override!.files!['1/model.onnx']!]).toEqual([1, 2, 3]);
  });

  it('gives no override without config or files', () => {
    expect(loadOverrideFromWire(decodeLoad({}).parameters)).toBeUndefined();
  });

  it('rejects parameters of the wrong kind', () => {
    expect(() => loadOverrideFromWire(decodeLoad({ config: { bytes_param: Uint8Array.from([1]) } }).parameters)).toThrow(ConveyorError);
    expect(() => loadOverrideFromWire(decodeLoad({ 'file:1/a': { string_param: 'x' } }).parameters)).toThrow(/must be a bytes_param/);
    expect(() => loadOverrideFromWire(decodeLoad({ 'file:': { bytes_param: Uint8Array.from([1]) } }).parameters)).toThrow(/must name a file/);
  });

  it('reads unload_dependents', () => {
    expect(unloadOptionsFromWire({ unload_dependents: { bool_param: true, parameter_choice: 'bool_param' } })).toEqual({ unloadDependents: true });
    expect(unloadOptionsFromWire({})).toEqual({});
    expect(() => unloadOptionsFromWire({ unload_dependents: { string_param: 'yes', parameter_choice: 'string_param' } })).toThrow(/bool_param/);
  });
});
