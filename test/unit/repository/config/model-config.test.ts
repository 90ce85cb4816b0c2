// parseModelConfig end to end: the committed repository configs, every ModelConfig field, and
// the features Conveyor refuses.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../../../src/contracts/model-config.js';
import { loadModelConfig, parseModelConfig } from '../../../../src/repository/config/index.js';
import { COMMON, group, input, output } from './fixtures.js';
import { expectError, parseConfig as parse } from './helpers.js';

const REPOSITORY = join(import.meta.dirname, '..', '..', '..', '..', 'models', 'repository');
const committed = (name: string) => readFileSync(join(REPOSITORY, name, 'config.pbtxt'), 'utf8');

const BERT: ModelConfig = {
  ...COMMON,
  name: 'bert-tiny',
  platform: 'onnxruntime_onnx',
  backend: 'onnxruntime',
  max_batch_size: 32,
  input: [input('input_ids', 'TYPE_INT64', [-1]), input('attention_mask', 'TYPE_INT64', [-1]), input('token_type_ids', 'TYPE_INT64', [-1])],
  output: [output('last_hidden_state', 'TYPE_FP32', [-1, 32]), output('sentence_embedding', 'TYPE_FP32', [32])],
  instance_group: [group('bert-tiny_0', 'KIND_CPU', 1)],
  dynamic_batching: { preferred_batch_size: [8, 16, 32], max_queue_delay_microseconds: 2000, preserve_ordering: false, priority_levels: 0, default_priority_level: 0, priority_queue_policy: {} },
  default_model_filename: 'model.onnx',
  parameters: { precision: { string_value: 'fp32' } },
};

const QWEN: ModelConfig = {
  ...COMMON,
  name: 'qwen3-tiny',
  platform: '',
  backend: 'llm',
  max_batch_size: 0,
  model_transaction_policy: { decoupled: true },
  input: [input('text_input', 'TYPE_STRING', [1]), input('stream', 'TYPE_BOOL', [1], { optional: true }), input('max_tokens', 'TYPE_INT32', [1], { optional: true })],
  output: [output('text_output', 'TYPE_STRING', [-1])],
  instance_group: [group('qwen3-tiny_0', 'KIND_CPU', 1)],
  default_model_filename: '',
  parameters: {
    precision: { string_value: 'fp32' },
    max_num_seqs: { string_value: '32' },
    max_num_batched_tokens: { string_value: '512' },
    block_size: { string_value: '16' },
    kv_cache_bytes: { string_value: '33554432' },
    enable_prefix_caching: { string_value: 'true' },
    tool_call_parser: { string_value: 'hermes' },
  },
};

const RESNET: ModelConfig = {
  ...COMMON,
  name: 'resnet-tiny',
  platform: 'onnxruntime_onnx',
  backend: 'onnxruntime',
  max_batch_size: 32,
  input: [input('input', 'TYPE_FP32', [3, 224, 224], { format: 'FORMAT_NCHW' })],
  output: [output('logits', 'TYPE_FP32', [1000], { label_filename: 'labels.txt' })],
  instance_group: [group('resnet-tiny_0', 'KIND_CPU', 1)],
  dynamic_batching: { preferred_batch_size: [8, 16, 32], max_queue_delay_microseconds: 5000, preserve_ordering: false, priority_levels: 0, default_priority_level: 0, priority_queue_policy: {} },
  default_model_filename: 'model.onnx',
  parameters: { precision: { string_value: 'fp32' } },
};

describe('committed repository configs', () => {
  it.each([
    ['bert-tiny', BERT],
    ['qwen3-tiny', QWEN],
    ['resnet-tiny', RESNET],
  ] as const)('%s parses to the expected config', (name, expected) => {
    expect(parseModelConfig(committed(name), `${name}/config.pbtxt`, name)).toEqual(expected);
  });

  it.each([
    ['bert-tiny', BERT],
    ['qwen3-tiny', QWEN],
    ['resnet-tiny', RESNET],
  ] as const)('%s loads from disk (labels found)', async (name, expected) => {
    expect(await loadModelConfig(join(REPOSITORY, name, 'config.pbtxt'), name)).toEqual(expected);
  });
});

const FULL = `
name: "full"
platform: "onnxruntime_onnx"
runtime: "libconveyor.so"
version_policy { specific { versions: [ 1, 3 ] } }
max_batch_size: 8
input [
  { name: "a" data_type: TYPE_FP16 format: FORMAT_NHWC dims: [ 4, 4, 3 ] allow_ragged_batch: true },
  { name: "b" data_type: TYPE_INT32 dims: [ 2, -1 ] reshape { shape: [ 1, 2, -1 ] } optional: true is_shape_tensor: false is_non_linear_format_io: false }
]
output { name: "y" data_type: TYPE_BF16 dims: [ 1 ] reshape: { shape: [] } is_shape_tensor: true }
optimization {
  graph { level: -1 }
  priority: PRIORITY_MAX
  cuda { graphs: true graph_spec { batch_size: 4 input { key: "a" value { dim: [ 4, 4, 3 ] } } graph_lower_bound { batch_size: 1 } } }
  execution_accelerators { cpu_execution_accelerator [ { name: "openvino" parameters { key: "k" value: "v" } } ] }
  input_pinned_memory { enable: false }
  gather_kernel_buffer_threshold: 2
  eager_batching: true
}
dynamic_batching {
  preferred_batch_size: [ 4, 8 ]
  max_queue_delay_microseconds: 100
  priority_levels: 2
  default_priority_level: 2
  default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 5000 allow_timeout_override: true max_queue_size: 16 }
  priority_queue_policy { key: 1 value { max_queue_size: 4 } }
}
instance_group [
  { name: "g" count: 3 kind: KIND_GPU gpus: [ 0, 1 ] profile: [ "0" ] passive: true host_policy: "p"
    rate_limiter { resources [ { name: "r" global: true count: 2 } ] priority: 2 }
    secondary_devices { kind: KIND_NVDLA device_id: 1 } },
  { kind: KIND_MODEL }
]
default_model_filename: "m.onnx"
cc_model_filenames { key: "8.0" value: "m80.onnx" }
metric_tags { key: "team" value: "ml" }
parameters [ { key: "intra_op_thread_count" value: { string_value: "2" } } ]
model_warmup {
  name: "w" batch_size: 2 count: 3
  inputs { key: "a" value { data_type: TYPE_FP16 dims: [ 4, 4, 3 ] random_data: true } }
  inputs { key: "b" value { data_type: TYPE_INT32 dims: [ 2, 2 ] input_data_file: "b.bin" } }
}
response_cache { enable: true }
model_metrics { metric_control { metric_identifier { family: "nv_inference_request_duration" } histogram_options { buckets: [ 0.5, 1, 2.5 ] } } }
`;

describe('every ModelConfig field', () => {
  it('parses, defaults and normalizes a config that sets them all', () => {
    expect(parse(FULL, 'full')).toEqual({
      name: 'full',
      platform: 'onnxruntime_onnx',
      backend: 'onnxruntime',
      runtime: 'libconveyor.so',
      version_policy: { specific: { versions: [1, 3] } },
      max_batch_size: 8,
      input: [input('a', 'TYPE_FP16', [4, 4, 3], { format: 'FORMAT_NHWC', allow_ragged_batch: true }), input('b', 'TYPE_INT32', [2, -1], { reshape: { shape: [1, 2, -1] }, optional: true })],
      output: [output('y', 'TYPE_BF16', [1], { reshape: { shape: [] }, is_shape_tensor: true })],
      optimization: {
        graph: { level: -1 },
        priority: 'PRIORITY_MAX',
        cuda: {
          graphs: true,
          busy_wait_events: false,
          output_copy_stream: false,
          graph_spec: [{ batch_size: 4, input: { a: { dim: [4, 4, 3] } }, graph_lower_bound: { batch_size: 1, input: {} } }],
        },
        execution_accelerators: { gpu_execution_accelerator: [], cpu_execution_accelerator: [{ name: 'openvino', parameters: { k: 'v' } }] },
        input_pinned_memory: { enable: false },
        output_pinned_memory: { enable: true },
        gather_kernel_buffer_threshold: 2,
        eager_batching: true,
      },
      dynamic_batching: {
        preferred_batch_size: [4, 8],
        max_queue_delay_microseconds: 100,
        preserve_ordering: false,
        priority_levels: 2,
        default_priority_level: 2,
        default_queue_policy: { timeout_action: 'DELAY', default_timeout_microseconds: 5000, allow_timeout_override: true, max_queue_size: 16 },
        priority_queue_policy: { '1': { timeout_action: 'REJECT', default_timeout_microseconds: 0, allow_timeout_override: false, max_queue_size: 4 } },
      },
      instance_group: [
        {
          name: 'g',
          kind: 'KIND_GPU',
          count: 3,
          gpus: [0, 1],
          profile: ['0'],
          passive: true,
          host_policy: 'p',
          rate_limiter: { resources: [{ name: 'r', global: true, count: 2 }], priority: 2 },
          secondary_devices: [{ kind: 'KIND_NVDLA', device_id: 1 }],
        },
        group('full_1', 'KIND_MODEL', 1),
      ],
      default_model_filename: 'm.onnx',
      cc_model_filenames: { '8.0': 'm80.onnx' },
      metric_tags: { team: 'ml' },
      parameters: { intra_op_thread_count: { string_value: '2' } },
      model_warmup: [
        {
          name: 'w',
          batch_size: 2,
          count: 3,
          inputs: { a: { data_type: 'TYPE_FP16', dims: [4, 4, 3], random_data: true }, b: { data_type: 'TYPE_INT32', dims: [2, 2], input_data_file: 'b.bin' } },
        },
      ],
      model_transaction_policy: { decoupled: false },
      response_cache: { enable: true },
      model_metrics: { metric_control: [{ metric_identifier: { family: 'nv_inference_request_duration' }, histogram_options: { buckets: [0.5, 1, 2.5] } }] },
    });
  });

  it('accepts version_policy all and latest', () => {
    expect(parse('backend: "onnxruntime" version_policy: { all: {} }').version_policy).toEqual({ all: {} });
    expect(parse('backend: "onnxruntime" version_policy: { latest: { num_versions: 3 } }').version_policy).toEqual({ latest: { num_versions: 3 } });
  });

  it('reports unknown fields with their position, like protobuf', () => {
    expectError(() => parse('backend: "onnxruntime"\nmax_batch: 4'), "config.pbtxt:2:1: unknown field 'max_batch' in ModelConfig");
    expectError(() => parse('backend: "onnxruntime"\ninput { name: "x" optional: true shape: [1] }'), "config.pbtxt:2:34: unknown field 'shape' in ModelInput");
    expectError(() => parse('backend: "onnxruntime"\noutput { name: "x" optional: true }'), "config.pbtxt:2:20: unknown field 'optional' in ModelOutput");
    expectError(() => parse('backend: "onnxruntime"\ndynamic_batching { max_queue_delay_us: 5 }'), "config.pbtxt:2:20: unknown field 'max_queue_delay_us' in ModelDynamicBatching");
  });

  it('reports type errors inside nested messages', () => {
    expectError(
      () => parse('backend: "onnxruntime"\ninput { name: "x" data_type: TYPE_FLOAT }'),
      "config.pbtxt:2:30: unknown DataType value 'TYPE_FLOAT' for field 'data_type' (expected one of TYPE_INVALID, TYPE_BOOL, TYPE_UINT8, TYPE_UINT16, TYPE_UINT32, TYPE_UINT64, TYPE_INT8, TYPE_INT16, TYPE_INT32, TYPE_INT64, TYPE_FP16, TYPE_FP32, TYPE_FP64, TYPE_STRING, TYPE_BF16)",
    );
    expectError(
      () => parse('backend: "onnxruntime"\ninstance_group { kind: CPU }'),
      "config.pbtxt:2:24: unknown ModelInstanceGroup.Kind value 'CPU' for field 'kind' (expected one of KIND_AUTO, KIND_GPU, KIND_CPU, KIND_MODEL)",
    );
    expectError(() => parse('backend: "onnxruntime"\nmax_batch_size: "8"'), `config.pbtxt:2:17: field 'max_batch_size' needs an integer, found string "8"`);
    expectError(
      () => parse('backend: "onnxruntime"\ndynamic_batching { max_queue_delay_microseconds: -1 }'),
      "config.pbtxt:2:50: field 'max_queue_delay_microseconds' needs a non-negative integer, found -1",
    );
    expectError(
      () => parse('backend: "onnxruntime"\nversion_policy { latest {} all {} }'),
      "config.pbtxt:2:28: field 'all' cannot be set together with 'latest' (at 2:18): both belong to oneof 'policy_choice'",
    );
    expectError(
      () => parse('backend: "onnxruntime"\ndynamic_batching {}\nsequence_batching {}'),
      "config.pbtxt:3:1: field 'sequence_batching' cannot be set together with 'dynamic_batching' (at 2:1): both belong to oneof 'scheduling_choice'",
    );
  });
});

describe('features Conveyor does not serve', () => {
  it('parses sequence_batching fully, then refuses it as UNSUPPORTED', () => {
    expectError(
      () => parse('backend: "onnxruntime"\nsequence_batching { max_sequence_idle_microseconds: 5 oldest { max_candidate_sequences: 4 } }'),
      'config.pbtxt:2:1: sequence_batching is not supported yet',
      'UNSUPPORTED',
    );
    // Ensembles are served (validate-ensemble.test.ts); a misspelt field inside one is still named.
    expectError(() => parse('platform: "ensemble"\nensemble_scheduling { step { model_nam: "a" } }'), "config.pbtxt:2:30: unknown field 'model_nam' in ModelEnsembling.Step");
  });

  it('refuses other scheduling-adjacent features', () => {
    expectError(
      () => parse('backend: "onnxruntime"\nbatch_input { kind: BATCH_ELEMENT_COUNT target_name: "n" data_type: TYPE_INT32 source_input: "x" }'),
      'config.pbtxt:2:1: batch_input is not supported yet',
      'UNSUPPORTED',
    );
    expectError(() => parse('backend: "onnxruntime"\nbatch_output { kind: BATCH_SCATTER_WITH_INPUT_SHAPE }'), 'config.pbtxt:2:1: batch_output is not supported yet', 'UNSUPPORTED');
    expectError(() => parse('backend: "onnxruntime"\nmodel_operations { op_library_filename: "x.so" }'), 'config.pbtxt:2:1: model_operations is not supported yet', 'UNSUPPORTED');
    expectError(() => parse('backend: "onnxruntime"\nmodel_repository_agents { agents { name: "checksum" } }'), 'config.pbtxt:2:1: model_repository_agents is not supported yet', 'UNSUPPORTED');
    // Empty lists ask for nothing (Triton's own config JSON prints them).
    const config = parse('backend: "onnxruntime"\nbatch_input: []\nbatch_output []');
    expect(config).not.toHaveProperty('batch_input');
    expect(config).not.toHaveProperty('batch_output');
  });

  it('refuses other backends and platforms', () => {
    expectError(
      () => parse('name: "m"\nbackend: "python"'),
      "config.pbtxt:2:1: backend 'python' is not supported (Conveyor serves backends 'onnxruntime', 'llm', 'typescript', 'javascript')",
      'UNSUPPORTED',
    );
    expectError(() => parse('platform: "tensorrt_plan"'), "config.pbtxt:1:1: platform 'tensorrt_plan' is not supported (Conveyor serves platform 'onnxruntime_onnx')", 'UNSUPPORTED');
    expectError(() => parse('backend: "llm"\nplatform: "onnxruntime_onnx"'), "config.pbtxt:2:1: platform 'onnxruntime_onnx' does not match backend 'llm'");
  });
});
